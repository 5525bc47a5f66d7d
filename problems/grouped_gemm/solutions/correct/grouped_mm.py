# expect: accepted
# torch._grouped_mm: one launch for all groups. On an sm_90+ GPU (and on torch's CPU build) it takes the 2-d a,
# the 3-d weights and the group ends as they come (its offs); the CUDA kernel (CUTLASS, fp32 accumulation) wants
# 16-byte aligned rows, i.e. k and n multiples of 8. Other shapes, GPUs before sm_90 and a torch without
# _grouped_mm take one cuBLAS matmul per non-empty group (solutions/correct/pytorch.py).
import torch


def _per_group(a: torch.Tensor, weights: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    c = torch.empty(a.shape[0], weights.shape[2], device=a.device, dtype=torch.bfloat16)
    start = 0
    for g, end in enumerate(offsets.tolist()):
        if end > start:
            torch.matmul(a[start:end], weights[g], out=c[start:end])
        start = end
    return c


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, weights, offsets = data
    k, n = weights.shape[1], weights.shape[2]
    usable = hasattr(torch, "_grouped_mm") and k % 8 == 0 and n % 8 == 0
    if a.is_cuda:
        usable = usable and torch.cuda.get_device_capability(a.device) >= (9, 0)
    if not usable:
        return _per_group(a, weights, offsets)
    return torch._grouped_mm(a, weights, offs=offsets, out_dtype=torch.bfloat16)
