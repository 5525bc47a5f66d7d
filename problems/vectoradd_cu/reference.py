"""vectoradd_cu: out = a + b for fp16 N x N matrices, for native CUDA submissions (see harness.cu).

The harness generates inputs here, in device memory, from the case's seed (or, in a ranked run, from a
fresh seed for every timed call); the submission's ``vectoradd`` only ever sees device pointers.
"""

from __future__ import annotations

import torch


def _device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def generate_input(size: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    device = _device()
    gen = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(size, size, device=device, dtype=torch.float16, generator=gen)
    b = torch.randn(size, size, device=device, dtype=torch.float16, generator=gen)
    out = torch.full((size, size), float("nan"), device=device, dtype=torch.float16)
    return a, b, out


def ref_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b, out = data
    return torch.add(a, b, out=out)


def check_implementation(data: tuple[torch.Tensor, ...], output: object) -> tuple[bool, str]:
    a, b, _ = data
    if not isinstance(output, torch.Tensor):
        return False, f"expected a torch.Tensor, got {type(output).__name__}"
    if output.shape != a.shape or output.dtype != torch.float16:
        return False, f"output {tuple(output.shape)} {output.dtype}, expected {tuple(a.shape)} torch.float16"
    expected = a.float() + b.float()
    got = output.float()
    allowed = 1e-7 + 2**-11 * expected.abs()  # half an fp16 ulp: what a correctly rounded fp16 add gives
    bad = ~((got - expected).abs() <= allowed)  # NaN (an element never written) compares false
    count = int(bad.sum())
    if count == 0:
        return True, ""
    at = tuple(int(i) for i in torch.unravel_index(bad.flatten().to(torch.uint8).argmax(), bad.shape))
    return False, (
        f"{count} of {expected.numel()} elements differ; first at {at}: got {got[at].item():.7g}, "
        f"expected {expected[at].item():.7g}"
    )


def speed_of_light(size: int, **_: object) -> dict[str, int]:
    return {"bytes": 3 * size * size * 2, "flops": size * size}
