# expect: wrong_answer
# lang: helion
# exp() of the raw values: a row offset of up to 100 overflows fp32's exp (inf / inf = NaN) or underflows to 0.
import helion
import helion.language as hl
import torch


@helion.kernel(config=helion.Config(block_sizes=[1], num_warps=16), static_shapes=False)
def softmax(x: torch.Tensor) -> torch.Tensor:
    rows, _cols = x.size()
    out = torch.empty_like(x)
    for tile in hl.tile(rows):
        e = torch.exp(x[tile, :].to(torch.float32))
        out[tile, :] = (e / torch.sum(e, dim=1, keepdim=True)).to(out.dtype)
    return out


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (x,) = data
    return softmax(x)
