# expect: accepted
# cuDNN on a GPU, with TF32 tensor cores allowed (the tolerance is made for them).
import torch
import torch.nn.functional as F


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    x, w = data
    if x.is_cuda:
        with torch.backends.cudnn.flags(enabled=True, allow_tf32=True):
            return F.conv2d(x, w)
    return F.conv2d(x, w)
