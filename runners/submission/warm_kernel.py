"""The platform's own Triton kernel that a GPU run's submission process compiles before its job arrives
(``runners.submission.serve.warm_toolchain``): the first compile in a process sets up Triton's compiler (its MLIR and
LLVM passes, ptxas's first run), 0.9 s of the 1.35 s that a candidate's first Triton call took on the lent H200;
a second, different kernel then compiled in 0.05-0.07 s (docs/measurement.md, "Compiling ahead"). Compiled for the
GPU's architecture without a CUDA call (the waiting set touches no GPU), into the job's own Triton cache; never
launched."""

from __future__ import annotations

import triton  # type: ignore[import-untyped]
import triton.language as tl  # type: ignore[import-untyped]


@triton.jit
def _scale(src, dst, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst + offsets, tl.load(src + offsets, mask=mask) * 2.0, mask=mask)


def compile_for(arch: int) -> None:
    """Compile ``_scale`` for compute capability ``arch`` (90: sm_90) with no GPU: ``triton.compile`` with an
    explicit target asks the driver nothing."""
    from triton.backends.compiler import GPUTarget  # type: ignore[import-untyped]
    from triton.compiler import ASTSource  # type: ignore[import-untyped]

    signature = {"src": "*fp32", "dst": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    target = GPUTarget("cuda", arch, 32)
    try:
        source = ASTSource(fn=_scale, signature=signature, constexprs={"BLOCK": 1024})
        triton.compile(source, target=target)
    except (KeyError, TypeError, AttributeError):  # a Triton that keys constant arguments by position
        source = ASTSource(fn=_scale, signature=signature, constexprs={(3,): 1024})
        triton.compile(source, target=target)
