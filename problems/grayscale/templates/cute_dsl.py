# Starter for grayscale in CuTe DSL (NVIDIA CUTLASS's Python DSL: import cutlass.cute): a @cute.kernel with one
# thread per pixel reading its three interleaved channels, launched from a @cute.jit function on PyTorch's current
# stream. cute.compile builds it for the arguments' sizes; keep the compiled function (compiling costs a second).
import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
from cutlass.cute.runtime import from_dlpack


@cute.kernel
def gray_kernel(image: cute.Tensor, out: cute.Tensor, pixels: cutlass.Int32):
    thread, _, _ = cute.arch.thread_idx()
    block, _, _ = cute.arch.block_idx()
    p = block * 128 + thread
    if p < pixels:
        r, g, b = image[3 * p], image[3 * p + 1], image[3 * p + 2]
        out[p] = cutlass.Float32(0.2989) * r + cutlass.Float32(0.5870) * g + cutlass.Float32(0.1140) * b


@cute.jit
def gray(image: cute.Tensor, out: cute.Tensor, pixels: cutlass.Int32, stream: cuda.CUstream):
    gray_kernel(image, out, pixels).launch(grid=((pixels + 127) // 128, 1, 1), block=(128, 1, 1), stream=stream)


compiled = {}


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (image,) = data
    height, width, _ = image.shape
    out = torch.empty(height, width, device=image.device, dtype=torch.float32)
    tensors = [from_dlpack(image.view(-1)), from_dlpack(out.view(-1))]
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    pixels = height * width
    if pixels not in compiled:
        compiled[pixels] = cute.compile(gray, *tensors, pixels, stream)
    compiled[pixels](*tensors, pixels, stream)
    return out
