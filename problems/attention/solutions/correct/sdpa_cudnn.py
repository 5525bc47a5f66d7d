# expect: accepted
# scaled_dot_product_attention with cuDNN's fused attention first (on Hopper it is usually the fastest backend for
# bf16), then FlashAttention-2, then the others; sdpa_kernel's set_priority makes torch try them in this order and
# take the first that supports the inputs (on the CPU: its flash kernel).
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

ORDER = [SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    q, k, v = data
    with sdpa_kernel(ORDER, set_priority=True):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
