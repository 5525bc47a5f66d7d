# expect: wrong_answer
# A true convolution (the kernel flipped in both directions) where the contract asks for a cross-correlation,
# as torch.nn.functional.conv2d computes. Right only for 1x1 kernels.
import torch.nn.functional as F


def custom_kernel(data):
    x, w = data
    return F.conv2d(x, w.flip(2, 3))
