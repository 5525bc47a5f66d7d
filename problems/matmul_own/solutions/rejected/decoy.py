# expect: accepted
# timed: rejected (a token Triton kernel of its own beside torch.matmul: the GEMM is still cuBLASLt's, ~99% of it)
import torch
import triton
import triton.language as tl


@triton.jit
def _token(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr) + 1)


_scratch: dict[str, torch.Tensor] = {}


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b = data
    if a.is_cuda:
        if "token" not in _scratch:
            _scratch["token"] = torch.zeros(1, device=a.device)
        _token[(1,)](_scratch["token"])
    return torch.matmul(a, b)
