# expect: accepted
# timed: rejected (torch.matmul on a stream of its own: the recorded kernels include every stream's)
import torch

_streams: dict[str, torch.cuda.Stream] = {}


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b = data
    if not a.is_cuda:
        return torch.matmul(a, b)
    if "side" not in _streams:
        _streams["side"] = torch.cuda.Stream(device=a.device)
    side = _streams["side"]
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        c = torch.matmul(a, b)
    torch.cuda.current_stream().wait_stream(side)
    c.record_stream(torch.cuda.current_stream())
    return c
