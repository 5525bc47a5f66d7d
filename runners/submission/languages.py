"""How a submission becomes a ``custom_kernel`` callable: one small runtime class per language over a base of hooks.

In the DMOJ judge-server style. The static facts of a language (its key, display name, file suffixes, whether it
needs CUDA, the problem files it compiles against) are one row of ``runners.contract.LANGUAGES``; the behaviour
(compile arguments, loading, a self-test that says whether this machine can run it) is one class here, keyed by
the same ``Language``. Compile failures raise ``CompileError`` with the compiler's output. Everything here runs in
the submission process, before any call is timed, so compile time never reaches a score.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

from runners.contract import LANGUAGES, Language

ENTRY_POINT = "custom_kernel"


class CompileError(Exception):
    """The submission did not compile; ``output`` holds the compiler's messages."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


class MissingEntryPoint(Exception):
    """The submission compiled but defines no ``custom_kernel``."""


class LanguageRuntime:
    """The hooks a language implements; ``load`` returns the submission's ``custom_kernel``."""

    key: ClassVar[Language]

    def __init__(self, job_dir: Path) -> None:
        self.job_dir = job_dir
        self.compile_output = ""

    def get_compile_args(self) -> list[str]:
        return []

    def load(self, submission: Path) -> Callable[[Any], Any]:
        raise NotImplementedError

    @classmethod
    def self_test(cls) -> str | None:
        """None when this machine can run the language, else why not."""
        return None


def _entry(module: ModuleType, where: str) -> Callable[[Any], Any]:
    fn = getattr(module, ENTRY_POINT, None)
    if not callable(fn):
        raise MissingEntryPoint(f"{where} defines no {ENTRY_POINT}(data) function")
    return fn


def import_file(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class PythonRuntime(LanguageRuntime):
    """PyTorch, Triton, inline CUDA (``load_inline``, built into the job's own extensions folder), JAX/CuPy."""

    key = Language.PYTHON

    def load(self, submission: Path) -> Callable[[Any], Any]:
        source = submission.read_bytes()
        compile(source, submission.name, "exec")  # SyntaxError surfaces as a compile error with its line
        return _entry(import_file(submission, "submission"), submission.name)


class CudaRuntime(LanguageRuntime):
    """Native ``.cu``: compiled by nvcc together with the problem's CUDA harness into a PyTorch extension.

    The problem ships ``harness.cu`` which ``#include "submission.cu"`` and binds a ``custom_kernel``
    that takes the reference's device tensors, so inputs and outputs stay in device memory and the
    same timing, checking and secret seeds apply as for Python submissions.
    """

    key = Language.CUDA
    harness_name = "harness.cu"

    def get_compile_args(self) -> list[str]:
        return ["-O3", "-lineinfo", "-std=c++17"]

    def load(self, submission: Path) -> Callable[[Any], Any]:
        from torch.utils import cpp_extension

        harness = self.job_dir / self.harness_name
        if not harness.exists():
            raise CompileError(f"the problem has no {self.harness_name} to compile the submission against")
        digest = hashlib.sha256(submission.read_bytes() + harness.read_bytes()).hexdigest()[:12]
        build = self.job_dir / "build" / f"cu_{digest}"
        build.mkdir(parents=True, exist_ok=True)
        try:
            module = cpp_extension.load(
                name=f"kernelcup_cu_{digest}",
                sources=[str(harness)],
                extra_include_paths=[str(self.job_dir)],
                extra_cflags=["-O2"],
                extra_cuda_cflags=self.get_compile_args(),
                build_directory=str(build),
                verbose=False,
            )
        except Exception as exc:  # torch raises RuntimeError with nvcc's output in the message
            raise CompileError("nvcc could not compile the submission", output=str(exc)) from None
        self.compile_output = f"nvcc {' '.join(self.get_compile_args())} {self.harness_name} (+ {submission.name}): ok"
        return _entry(module, submission.name)

    @classmethod
    def self_test(cls) -> str | None:
        if shutil.which("nvcc") is None and not os.environ.get("CUDA_HOME"):
            return "nvcc was not found on this runner (set CUDA_HOME or put nvcc on PATH)"
        return None


RUNTIMES: dict[Language, type[LanguageRuntime]] = {r.key: r for r in (PythonRuntime, CudaRuntime)}


def runtime_for(lang: str, job_dir: Path) -> LanguageRuntime:
    return RUNTIMES[Language(lang)](job_dir)


def self_tests() -> dict[str, str | None]:
    """Each language's self-test on this machine: None where it can run, else why not (display name as key)."""
    return {LANGUAGES[key].display: runtime.self_test() for key, runtime in RUNTIMES.items()}


def is_build_failure(exc: BaseException) -> bool:
    """A ``load_inline``/``load`` build failure raised while importing a Python submission."""
    text = str(exc)
    return isinstance(exc, RuntimeError) and ("Error building extension" in text or "ninja" in text.lower())
