"""Compile one TileLang or CuTe DSL solution for every test case of its problem, without a GPU (run as a script).

    python tests/runners/compile_dsl.py LANG SOLUTION [--benchmarks]

The DSL's package is found by the language's real runtime (``prepare`` does what it does in a submission process);
the kernels are built for Hopper (``sm_90a``) with no device present: TileLang through its code generator and
nvcc, CuTe DSL through MLIR and ptxas. This proves the solution traces and compiles for every shape the tests give
it; whether it computes the right numbers is for the GPU tests. Prints one JSON line:
``{"compiled": [case, ...], "seconds": float}``; a failure is a traceback and a non-zero exit. With
``--benchmarks`` the benchmark cases are compiled too (a fast path that only large shapes take is then checked).

A solution's builder is found by name: a TileLang one defines ``rmsnorm_kernel(rows, hidden)``; a CuTe DSL one
defines its ``@cute.jit`` launcher as ``add``/``_add`` (vectoradd), ``gray``/``_gray`` (grayscale) or
``matmul``/``_matmul`` (matmul), taking the problem's tensors, their sizes and a stream (and, where it has a ``vec``
parameter, the module's ``VEC``: its 16-byte-aligned path).
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ARCH = "sm_90a"


def _module(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("solution", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tilelang(module: Any, case: dict[str, int]) -> None:
    kernel = module.rmsnorm_kernel(case["rows"], case["hidden"])
    assert "__global__" in kernel.get_kernel_source()


def _cute(module: Any, problem: str, case: dict[str, int]) -> None:
    import cuda.bindings.driver as cuda
    import cutlass.cute as cute
    import torch
    from cutlass.cute.runtime import from_dlpack

    name = {"vectoradd": "add", "grayscale": "gray"}.get(problem, "matmul")
    launcher = getattr(module, name, None) or getattr(module, "_" + name)
    dtype = torch.float32 if problem == "grayscale" else torch.float16
    if problem == "vectoradd":
        n = case["size"] ** 2
        shapes, sizes = [(n,)] * 3, [n]
    elif problem == "grayscale":
        pixels = case["height"] * case["width"]
        shapes, sizes = [(3 * pixels,), (pixels,)], [pixels]
    else:
        m, k, n = case["m"], case["k"], case["n"]
        shapes, sizes = [(m, k), (k, n), (m, n)], [m, n, k]
    params = inspect.signature(launcher).parameters
    if "vec" in params:  # a vectorised launcher: the 16-byte path (VEC values a thread), as on aligned inputs
        sizes.append(module.VEC)
    align = 16 if "vec" in params else None
    tensors = [from_dlpack(torch.empty(shape, dtype=dtype), assumed_align=align) for shape in shapes]
    cute.compile(launcher, *tensors, *sizes, cuda.CUstream(0))


def main(lang: str, solution: Path, benchmarks: bool = False) -> dict[str, object]:
    sys.path.insert(0, str(REPO))
    from leaderboards.problems import load_problem
    from runners.contract import Language
    from runners.submission.languages import RUNTIMES, runtime_for

    runtime = runtime_for(lang, solution.parent)
    if RUNTIMES[Language(lang)].module_spec() is None:  # type: ignore[attr-defined]
        raise SystemExit(f"{lang}: its package is not installed")
    os.environ.setdefault("TILELANG_DEFAULT_TARGET", json.dumps({"kind": "cuda", "arch": ARCH}))
    os.environ.setdefault("CUTE_DSL_ARCH", ARCH)
    runtime.prepare()  # type: ignore[attr-defined]
    problem = next(p for p in solution.parents if (p / "task.yml").is_file())
    module = _module(solution)
    started, compiled = time.monotonic(), []
    task = load_problem(problem).task
    for case in task.tests + (task.benchmarks if benchmarks else []):
        sizes = {k: v for k, v in case.items() if k != "seed"}
        if lang == "tilelang":
            _tilelang(module, sizes)
        else:
            _cute(module, problem.name, sizes)
        compiled.append(sizes)
    return {"compiled": compiled, "seconds": round(time.monotonic() - started, 1)}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], Path(sys.argv[2]).resolve(), "--benchmarks" in sys.argv[3:])))
