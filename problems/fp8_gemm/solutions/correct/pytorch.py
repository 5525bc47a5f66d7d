# expect: accepted
# Dequantise to fp32 and multiply (fp32 GEMM, TF32 off as torch's default), scales applied to the fp32 result.
import torch


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b, scale_a, scale_b = data
    c = torch.mm(a.float(), b.float().T)
    return c.mul_(scale_a).mul_(scale_b).to(torch.bfloat16)
