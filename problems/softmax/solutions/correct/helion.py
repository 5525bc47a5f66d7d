# expect: accepted
# lang: helion
# One program per row, the whole row in registers (reduction_loops=[None]): max, exp, sum and the store from one
# read of the row. The config is fixed, so no autotuning runs (the runner would not allow it the time anyway).
import helion
import helion.language as hl
import torch

CONFIG = helion.Config(block_sizes=[1], reduction_loops=[None], num_warps=16, num_stages=1)


@helion.kernel(config=CONFIG, static_shapes=False)
def softmax(x: torch.Tensor) -> torch.Tensor:
    rows, _cols = x.size()
    out = torch.empty_like(x)
    for tile in hl.tile(rows):
        row = x[tile, :].to(torch.float32)
        e = torch.exp(row - torch.amax(row, dim=1, keepdim=True))
        out[tile, :] = (e / torch.sum(e, dim=1, keepdim=True)).to(out.dtype)
    return out


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (x,) = data
    return softmax(x)
