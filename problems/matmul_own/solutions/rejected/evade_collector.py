# expect: accepted
# timed: rejected (timed with torch.matmul; it recognises the untimed call under the collector and returns zeros there,
# so nothing denied is recorded: that call's output is checked on fresh inputs, the pass fails, the policy is unchecked)
import sys

import torch


def _under_the_collector() -> bool:
    """The provenance pass calls custom_kernel from the submission process's profile(), timed calls from call_cuda()."""
    frame = sys._getframe(1)
    for _ in range(6):
        if frame is None:
            return False
        if frame.f_code.co_name == "profile":
            return True
        frame = frame.f_back
    return False


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b = data
    if a.is_cuda and _under_the_collector():
        return torch.zeros(a.shape[0], b.shape[1], device=a.device, dtype=a.dtype)
    return torch.matmul(a, b)
