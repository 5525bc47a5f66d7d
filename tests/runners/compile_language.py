"""Compile one native solution with its language's real runtime, as the submission process does (run as a script).

    python tests/runners/compile_language.py LANG SOLUTION JOB_DIR

The problem's harness.cu and the solution go into JOB_DIR; the language's headers come from the runner settings
(``KERNELCUP_*``), exactly as the entry finds them; then ``runtime.load`` builds the extension with nvcc. Prints one
JSON line: ``{"loaded": bool, "error": str, "objects": [...], "seconds": float, "command": str}``.

On a CPU-only PyTorch build (this machine, CI) two things the build needs are missing by design, and are stood in
for: ``cpp_extension.CUDA_HOME`` (None whenever torch has no CUDA) is set to the toolkit nvcc belongs to, and the
header CMake generates for torch's CUDA builds (``c10/cuda/impl/cuda_cmake_macros.h``) comes from a stand-in on
``CPATH``. nvcc then compiles the harness and the solution for real; the link that follows fails for want of
torch's CUDA libraries, so the caller judges the compile by the object file nvcc wrote.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path


def main(lang: str, solution: Path, job: Path) -> dict[str, object]:
    import torch
    from torch.utils import cpp_extension

    from runners.contract import Language
    from runners.settings import RunnerSettings
    from runners.submission import languages

    runtime_class = languages.RUNTIMES[Language(lang)]
    headers = runtime_class.headers(RunnerSettings())
    if headers is not None:
        os.environ[languages.HEADERS_ENV] = os.pathsep.join(map(str, headers.include_dirs))
    if not torch.version.cuda:
        nvcc = shutil.which("nvcc")
        home = os.environ.get("CUDA_HOME") or (str(Path(nvcc).resolve().parent.parent) if nvcc else None)
        if home and not Path(home, "include", "cuda_runtime.h").exists() and Path("/usr/local/cuda").is_dir():
            home = "/usr/local/cuda"  # nvcc on PATH is a wrapper script: the toolkit is where CUDA installs it
        cpp_extension.CUDA_HOME = home
        stand_in = Path(tempfile.mkdtemp(prefix="torch-cuda-macros-"))
        (stand_in / "c10" / "cuda" / "impl").mkdir(parents=True)
        (stand_in / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h").write_text(
            "#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n"
        )
        os.environ["CPATH"] = os.pathsep.join(filter(None, [str(stand_in), os.environ.get("CPATH")]))
        os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0a")  # no GPU to ask: build for the H100
    job.mkdir(parents=True, exist_ok=True)
    problem = next(folder for folder in solution.resolve().parents if (folder / "task.yml").is_file())
    shutil.copy(problem / "harness.cu", job / "harness.cu")
    shutil.copy(solution, job / "submission.cu")
    runtime = runtime_class(job)
    started = time.monotonic()
    error = ""
    try:
        runtime.load(job / "submission.cu")
    except languages.CompileError as exc:
        error = exc.output or str(exc)
    return {
        "loaded": not error,
        "error": error[-20_000:],
        "objects": sorted(p.name for p in (job / "build").rglob("*.o")),
        "seconds": round(time.monotonic() - started, 1),
        "command": runtime.compile_command() if isinstance(runtime, languages.CudaRuntime) else "",
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))))
