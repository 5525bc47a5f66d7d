# expect: accepted
# timed: rejected (torch.matmul on a stream of its own: the recorded kernels include every stream's)
import torch

_streams: dict[str, torch.cuda.Stream] = {}


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b = data
    if not a.is_cuda:
        return torch.matmul(a, b)
    side = _streams.setdefault("side", torch.cuda.Stream(device=a.device))
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        c = torch.matmul(a, b)
    torch.cuda.current_stream().wait_stream(side)
    c.record_stream(torch.cuda.current_stream())
    return c
