# expect: accepted
# torch's fused attention: scaled_dot_product_attention with is_causal on the bf16 inputs. On an H100 torch picks
# its fastest backend for bf16 (FlashAttention-2, cuDNN or memory-efficient); on the CPU its flash kernel.
import torch


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    q, k, v = data
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
