# expect: accepted
# torch's own layer_norm in fp32 (two-pass / Welford internally), rounded once to the input dtype.
import torch


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    x, weight, bias = data
    y = torch.nn.functional.layer_norm(x.float(), (x.shape[-1],), weight.float(), bias.float(), eps=1e-5)
    return y.to(x.dtype)
