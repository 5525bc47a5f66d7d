"""How a submission becomes a ``custom_kernel`` callable: one small runtime class per language over a base of hooks.

In the DMOJ judge-server style. The static facts of a language (its key, display name, file suffixes, whether it
needs CUDA, the problem files it compiles against) are one row of ``runners.contract.LANGUAGES``; the behaviour
(compile arguments, loading, a self-test that says whether this machine can run it) is one class here, keyed by
the same ``Language``. Compile failures raise ``CompileError`` with the compiler's output. Everything here runs in
the submission process, before any call is timed, so compile time never reaches a score.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, Protocol

from runners.contract import LANGUAGES, Language
from runners.ipc.wiring import HEADERS_ENV

ENTRY_POINT = "custom_kernel"


class LibraryPaths(Protocol):
    """Where this runner's C++ libraries are, as its operator set them (``runners.settings.RunnerSettings`` is one):
    the languages take these paths, never the runner's settings, so the evaluator and the submission process, which
    import this module, import nothing of the parent's."""

    @property
    def cutlass_include(self) -> Path | None: ...

    @property
    def thunderkittens_include(self) -> Path | None: ...


class CompileError(Exception):
    """The submission did not compile; ``output`` holds the compiler's messages."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


class MissingEntryPoint(Exception):
    """The submission compiled but defines no ``custom_kernel``."""


class Unavailable(Exception):
    """This runner does not offer the language (its library's headers or its Python package are not installed); the
    message says how to make it."""


@dataclass(frozen=True)
class Headers:
    """A C++ library a language compiles against, as found on this runner by the trusted entry: its include folders
    (bound read-only into the submission's sandbox, nothing else of the tree) and its version, for system info."""

    include_dirs: tuple[Path, ...]
    version: str


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

    @classmethod
    def headers(cls, paths: LibraryPaths) -> Headers | None:
        """The library this language compiles against, found by the trusted entry before the run (None: it needs
        none). Raises :class:`Unavailable` when this runner does not have it."""
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
    same timing, checking and secret seeds apply as for Python submissions. The build (nvcc's objects, ninja's
    files) stays in the job's own folder: no submission ever reads another's compiled artifacts.
    """

    key = Language.CUDA
    harness_name = "harness.cu"

    def get_compile_args(self) -> list[str]:
        return ["-O3", "-lineinfo", "-std=c++17"]

    def arch_flags(self) -> list[str]:
        """nvcc's target architecture; none: PyTorch's choice (this GPU, or ``TORCH_CUDA_ARCH_LIST``)."""
        return []

    def get_link_args(self) -> list[str]:
        return []

    def include_dirs(self) -> list[Path]:
        """The folders ``#include`` searches: the job's (the submission, the harness), then the language's library
        (the folders the entry found, passed in ``KERNELCUP_LANGUAGE_HEADERS``)."""
        found = [Path(p) for p in os.environ.get(HEADERS_ENV, "").split(os.pathsep) if p]
        return [self.job_dir, *found]

    def compile_command(self) -> str:
        """The nvcc flags this language adds, in words for the compile log."""
        return " ".join(["nvcc", *self.get_compile_args(), *self.arch_flags()])

    def load(self, submission: Path) -> Callable[[Any], Any]:
        from torch.utils import cpp_extension

        harness = self.job_dir / self.harness_name
        if not harness.exists():
            raise CompileError(f"the problem has no {self.harness_name} to compile the submission against")
        flags = [*self.get_compile_args(), *self.arch_flags()]
        key = submission.read_bytes() + harness.read_bytes() + " ".join(flags).encode()
        digest = hashlib.sha256(key).hexdigest()[:12]
        build = self.job_dir / "build" / f"{self.key.value}_{digest}"
        build.mkdir(parents=True, exist_ok=True)
        try:
            module = cpp_extension.load(
                name=f"kernelcup_{self.key.value}_{digest}",
                sources=[str(harness)],
                extra_include_paths=[str(p) for p in self.include_dirs()],
                extra_cflags=["-O2"],
                extra_cuda_cflags=flags,
                extra_ldflags=self.get_link_args(),
                build_directory=str(build),
                verbose=False,
            )
        except Exception as exc:  # torch raises RuntimeError with nvcc's output in the message
            raise CompileError("nvcc could not compile the submission", output=str(exc)) from None
        self.compile_output = f"{self.compile_command()} {self.harness_name} (+ {submission.name}): ok"
        return _entry(module, submission.name)

    @classmethod
    def self_test(cls) -> str | None:
        if shutil.which("nvcc") is None and not os.environ.get("CUDA_HOME"):
            return "nvcc was not found on this runner (set CUDA_HOME or put nvcc on PATH)"
        return None


class _HeaderLibraryRuntime(CudaRuntime):
    """Native ``.cu`` against a header-only C++ library: CUDA's build with the library's include folders added,
    which the entry found (``headers``) and bound read-only into the sandbox. Loading without them (a runner
    program older than the language, or the folders gone) is :class:`Unavailable`, never a compile error."""

    library: ClassVar[str]

    def load(self, submission: Path) -> Callable[[Any], Any]:
        if not os.environ.get(HEADERS_ENV):
            raise Unavailable(f"this runner does not offer {self.library}: its headers were not passed to the build")
        return super().load(submission)


class CutlassRuntime(_HeaderLibraryRuntime):
    """CUTLASS 3.x/4.x and CuTe (C++17). On Hopper and Blackwell it builds for the arch-specific target
    (``sm_90a``, ``sm_100a``), which wgmma, TMA and the sm90+ collectives need."""

    key = Language.CUTLASS
    library = "CUTLASS"

    def get_compile_args(self) -> list[str]:
        return [*super().get_compile_args(), "--expt-relaxed-constexpr", "-DNDEBUG"]

    def arch_flags(self) -> list[str]:
        import torch

        if not torch.cuda.is_available():
            return []
        major, minor = torch.cuda.get_device_capability()
        arch = f"{major}{minor}" + ("a" if major in (9, 10) else "")
        return [f"-gencode=arch=compute_{arch},code=sm_{arch}"]

    @classmethod
    def headers(cls, paths: LibraryPaths) -> Headers:
        include, source = paths.cutlass_include, "KERNELCUP_CUTLASS_INCLUDE"
        if include is None:
            spec = importlib.util.find_spec("cutlass_library")  # finds the package without importing it
            if spec is None or spec.origin is None:
                raise Unavailable(
                    "this runner does not offer CUTLASS: install the nvidia-cutlass package (pip install "
                    "nvidia-cutlass) or set KERNELCUP_CUTLASS_INCLUDE to a CUTLASS checkout's include folder"
                )
            include, source = Path(spec.origin).parent / "source" / "include", "nvidia-cutlass package"
        version_h = include / "cutlass" / "version.h"
        if not (include / "cute").is_dir() or not version_h.is_file():
            raise Unavailable(f"this runner does not offer CUTLASS: {include} (from {source}) holds no cutlass/ "
                              "and cute/ headers; point KERNELCUP_CUTLASS_INCLUDE at a CUTLASS checkout's include "
                              "folder")  # fmt: skip
        util = include.parent / "tools" / "util" / "include"
        dirs = (include, util) if util.is_dir() else (include,)
        return Headers(tuple(d.resolve() for d in dirs), f"CUTLASS {_cutlass_version(version_h)} ({source})")


def _cutlass_version(version_h: Path) -> str:
    text = version_h.read_text(encoding="utf-8", errors="replace")
    parts = [re.search(rf"#define CUTLASS_{part}\s+(\d+)", text) for part in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(m.group(1) for m in parts if m) or "of unknown version"


class ThunderKittensRuntime(_HeaderLibraryRuntime):
    """HazyResearch's ThunderKittens (C++20), for Hopper: ``-DKITTENS_HOPPER`` and ``sm_90a`` (its kernels use
    wgmma and TMA), with the flags its own Makefiles build with."""

    key = Language.THUNDERKITTENS
    library = "ThunderKittens"

    def get_compile_args(self) -> list[str]:
        return ["-O3", "-lineinfo", "-std=c++20", "--use_fast_math", "--expt-extended-lambda",
                "--expt-relaxed-constexpr", "-DKITTENS_HOPPER", "-DNDEBUG", "-Xcompiler=-fno-strict-aliasing",
                "-diag-suppress", "3189"]  # fmt: skip

    def arch_flags(self) -> list[str]:
        return ["-gencode=arch=compute_90a,code=sm_90a"]

    def get_link_args(self) -> list[str]:
        """The CUDA driver: ThunderKittens calls ``cuTensorMapEncodeTiled`` directly to make its TMA descriptors
        (the toolkit's stub library resolves the link; the driver's own libcuda.so.1 is loaded at run time)."""
        from torch.utils.cpp_extension import CUDA_HOME

        homes = dict.fromkeys(p for p in (os.environ.get("CUDA_HOME"), CUDA_HOME, "/usr/local/cuda") if p)
        stubs = [Path(home) / "lib64" / "stubs" for home in homes]
        return [*(f"-L{d}" for d in stubs if d.is_dir()), "-lcuda"]

    @classmethod
    def headers(cls, paths: LibraryPaths) -> Headers:
        include = paths.thunderkittens_include
        if include is None or not (include / "kittens.cuh").is_file():
            where = f"{include} has no kittens.cuh" if include else "KERNELCUP_THUNDERKITTENS_INCLUDE is not set"
            raise Unavailable(f"this runner does not offer ThunderKittens ({where}): set KERNELCUP_THUNDERKITTENS_"
                              "INCLUDE to the include folder of a ThunderKittens checkout")  # fmt: skip
        prototype = include.parent / "prototype"
        dirs = (include, prototype) if prototype.is_dir() else (include,)
        return Headers(tuple(d.resolve() for d in dirs), f"ThunderKittens {_revision(include.parent)}")


def _revision(checkout: Path) -> str:
    """A checkout's commit: its REVISION file (the runner image writes one), else git's detached HEAD."""
    for candidate in (checkout / "REVISION", checkout / ".git" / "HEAD"):
        if candidate.is_file():
            text = candidate.read_text(encoding="utf-8", errors="replace").strip()
            if re.fullmatch(r"[0-9a-f]{7,40}", text):
                return text[:12]
    return "(revision unknown: no REVISION file or git HEAD in the checkout)"


class _PythonPackageRuntime(PythonRuntime):
    """A Python kernel DSL: a ``.py`` submission loaded like Python's, with the DSL's package. The trusted entry finds
    the package from its metadata without importing it (``headers``: no include folders, its version for system
    info) and refuses the run when it is missing; the DSL's compile cache lives in the job's folder (the sandbox
    sets ``cache_vars`` there: ``runners.sandbox.view.scrubbed_env``), so no submission reads another's artifacts."""

    library: ClassVar[str]
    distribution: ClassVar[str]
    """The package's name on PyPI (its metadata's), which the runner image pins."""
    module: ClassVar[str]
    """The top-level module a submission imports."""
    frontend: ClassVar[str] = ""
    """The module that must be found for the DSL to count as installed (its ``module`` where empty)."""
    cache_vars: ClassVar[tuple[str, ...]]
    """The environment variables that point the DSL's caches somewhere: each is a folder in the job's own."""

    def load(self, submission: Path) -> Callable[[Any], Any]:
        if self.module_spec() is None:
            raise Unavailable(f"this runner does not offer {self.library}: the {self.distribution} package is not "
                              "installed where the submission process imports from")  # fmt: skip
        self.prepare()
        return super().load(submission)

    def prepare(self) -> None:
        """What the DSL needs in the submission process before the submission imports it."""

    @classmethod
    def module_spec(cls) -> importlib.machinery.ModuleSpec | None:
        """Where the DSL's module is (found, never imported: importing it runs the package's code)."""
        return importlib.util.find_spec(cls.module)

    @classmethod
    def headers(cls, paths: LibraryPaths) -> Headers:
        hint = f"pip install {cls.distribution} into the runner's Python (the runner image pins its version)"
        try:
            version = importlib.metadata.version(cls.distribution)
        except importlib.metadata.PackageNotFoundError:
            raise Unavailable(f"this runner does not offer {cls.library}: the {cls.distribution} package is not "
                              f"installed; {hint}") from None  # fmt: skip
        if cls.module_spec() is None:
            raise Unavailable(f"this runner does not offer {cls.library}: {cls.distribution} {version} is installed "
                              f"but its module {cls.frontend or cls.module!r} cannot be found; {hint}")  # fmt: skip
        return Headers((), f"{cls.library} {version} ({cls.distribution} package)")


class HelionRuntime(_PythonPackageRuntime):
    """PyTorch's Helion, which compiles to Triton. No autotuning runs inside a run's time limit: a kernel without a
    ``config=`` gets Helion's default config (``HELION_AUTOTUNE_EFFORT=none``); a submission fixes its own. Where the
    sandbox asks for Triton's interpreter (a CPU run), Helion's own interpret mode runs instead (the kernel's body in
    eager PyTorch): Helion refuses both at once."""

    key = Language.HELION
    library = "Helion"
    distribution = "helion"
    module = "helion"
    cache_vars = ("HELION_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")

    def prepare(self) -> None:
        os.environ["HELION_AUTOTUNE_EFFORT"] = "none"
        if os.environ.pop("TRITON_INTERPRET", "") == "1":  # a CPU run: Helion refuses both interpreters at once
            os.environ["HELION_INTERPRET"] = "1"


class TileLangRuntime(_PythonPackageRuntime):
    """TileLang (tile-ai), which compiles through TVM and nvcc at the submission's first call (untimed)."""

    key = Language.TILELANG
    library = "TileLang"
    distribution = "tilelang"
    module = "tilelang"
    cache_vars = ("TILELANG_CACHE_DIR", "TRITON_CACHE_DIR", "CUDA_CACHE_PATH")


class CuteDslRuntime(_PythonPackageRuntime):
    """NVIDIA's CuTe DSL (``import cutlass``, ``cutlass.cute``), the nvidia-cutlass-dsl package. Its modules live
    in the package's ``dsl_packages`` folder, which a ``.pth`` file puts on ``sys.path`` in a site folder; a folder
    on ``PYTHONPATH`` (a ``pip install --target``) skips ``.pth`` files, so the runtime adds it itself.

    4.8.1 is three wheels (and a requirements-only one) that share that ``cutlass`` folder: the compiler's libraries
    (``-libs-base``, ``-libs-cu12``/``-cu13``) and the Python frontend, ``cutlass.cute`` (``-libs-core``). A folder
    without ``cute`` (the frontend's wheel missing, as ``pip install --no-deps`` leaves it) is no CuTe DSL: the
    runner says so, instead of every submission failing at ``import cutlass.cute``."""

    key = Language.CUTE_DSL
    library = "CuTe DSL"
    distribution = "nvidia-cutlass-dsl"
    module = "cutlass"
    frontend = "cutlass.cute"
    cache_vars = ("CUTE_DSL_CACHE_DIR", "CUDA_CACHE_PATH")

    @classmethod
    def module_spec(cls) -> importlib.machinery.ModuleSpec | None:
        packages = cls.dsl_packages()
        # The DSL's own copy only: a 'cutlass' module from elsewhere (another package's) is not CuTe DSL.
        return importlib.machinery.PathFinder.find_spec(cls.module, [str(packages)]) if packages else None

    @classmethod
    def dsl_packages(cls) -> Path | None:
        """The package's ``dsl_packages`` folder, which holds the ``cutlass`` module (found without importing)."""
        base = importlib.util.find_spec("nvidia_cutlass_dsl")  # a namespace package spread over its wheels
        for folder in base.submodule_search_locations or () if base is not None else ():
            if Path(folder, "dsl_packages", *cls.frontend.split("."), "__init__.py").is_file():
                return Path(folder) / "dsl_packages"
        return None

    def prepare(self) -> None:
        packages = str(self.dsl_packages())
        if packages not in sys.path:
            sys.path.insert(0, packages)


RUNTIMES: dict[Language, type[LanguageRuntime]] = {
    r.key: r
    for r in (
        PythonRuntime,
        CudaRuntime,
        CutlassRuntime,
        ThunderKittensRuntime,
        HelionRuntime,
        TileLangRuntime,
        CuteDslRuntime,
    )
}


def runtime_for(lang: str, job_dir: Path) -> LanguageRuntime:
    return RUNTIMES[Language(lang)](job_dir)


def self_tests(paths: LibraryPaths | None = None) -> dict[str, str | None]:
    """Each language's self-test on this machine: None where it can run, else why not (display name as key). Given
    the runner's library paths (its settings), a language whose C++ library is not installed says so too."""
    found: dict[str, str | None] = {}
    for key, runtime in RUNTIMES.items():
        why = runtime.self_test()
        if why is None and paths is not None:
            try:
                runtime.headers(paths)
            except Unavailable as exc:
                why = str(exc)
            except OSError as exc:  # an unreadable version file: the language is not usable, the check goes on
                why = f"its headers could not be read: {exc}"
        found[LANGUAGES[key].display] = why
    return found


def is_build_failure(exc: BaseException) -> bool:
    """A ``load_inline``/``load`` build failure raised while importing a Python submission."""
    text = str(exc)
    return isinstance(exc, RuntimeError) and ("Error building extension" in text or "ninja" in text.lower())
