"""What the evaluation process sees: its environment and, under bubblewrap, its filesystem."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ALLOW_UNSANDBOXED_SETTING = "KERNELCUP_ALLOW_UNSANDBOXED"
"""The setting (runners/settings.py) that lets a runner evaluate submissions without bubblewrap."""

# Host variables the evaluation process may see. Everything else (tokens, DATABASE_URL, cloud credentials,
# KERNELCUP_* settings) is dropped. Prefixes are matched on the name.
_ENV_ALLOW = frozenset(
    {
        "PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_NUMERIC", "TZ",
        "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_HOME", "CUDA_PATH", "CUDA_MODULE_LOADING",
        "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "LD_LIBRARY_PATH",
        "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_PATH", "ROCM_PATH", "HSA_OVERRIDE_GFX_VERSION",
        "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TORCH_CUDA_ARCH_LIST", "CC", "CXX",
    }
)  # fmt: skip
_ENV_ALLOW_PREFIXES = ("TRITON_",)
# Names that must never reach the submission, not even through SandboxSpec.env (a programming error there).
_ENV_DENY_MARKERS = (
    "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "API_KEY", "PRIVATE_KEY", "DATABASE_URL",
    "DISCORD", "GITHUB_", "MODAL_", "AWS_", "SEED",
)  # fmt: skip

_SYSTEM_RO = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt/rocm", "/opt/nvidia")
_ETC_RO = (
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "passwd", "group", "nsswitch.conf", "localtime", "timezone",
    "alternatives", "hosts", "os-release", "mime.types", "OpenCL", "vulkan", "nvidia",
)  # fmt: skip
_GPU_DEVICE_GLOBS = ("nvidia*", "dri", "kfd")
# What of /sys a run sees (read-only); never the whole of it: /sys/fs/cgroup holds every other run's cgroup with its
# live memory and task counters, /sys/kernel and /sys/firmware the host's. docs/sandbox.md gives each entry's reason.
_SYS_CPU = (
    "/sys/devices/system/cpu",  # glibc's sysconf (os.cpu_count), OpenMP, PyTorch's cpuinfo: online, possible, present
    "/sys/devices/system/node",  # NUMA topology: libnuma, OpenMP/MKL affinity, CUDA's and NCCL's placement
)
_SYS_GPU = (
    "/sys/bus/pci",  # CUDA and NVML find the GPU's PCI device here (links into /sys/devices/pci*)
    "/sys/module/nvidia",  # the driver's version and parameters (NVML, CUDA)
    "/sys/module/nvidia_uvm",
    "/sys/class/drm",  # ROCm: the GPUs' drm nodes (links into /sys/devices/pci*)
    "/sys/class/kfd",  # ROCm: the KFD topology (links into /sys/devices/virtual/kfd)
    "/sys/devices/virtual/kfd",
)


def scrubbed_env(workdir: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of the evaluation process: allowlisted host variables, job-local homes, then ``extra``."""
    env = {k: v for k, v in os.environ.items() if k in _ENV_ALLOW or k.startswith(_ENV_ALLOW_PREFIXES)}
    env = {k: v for k, v in env.items() if not _denied(k)}
    interp_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([interp_bin, env.get("PATH") or "/usr/local/bin:/usr/bin:/bin"])
    tmp = workdir / "tmp"
    env.update(
        HOME=str(workdir),
        TMPDIR=str(tmp),
        TEMP=str(tmp),
        TMP=str(tmp),
        XDG_CACHE_HOME=str(workdir / ".cache"),
        XDG_CONFIG_HOME=str(workdir / ".config"),
        MPLCONFIGDIR=str(workdir / ".config" / "matplotlib"),
        TRITON_HOME=str(workdir),
        TRITON_CACHE_DIR=str(workdir / ".triton" / "cache"),
        TORCH_EXTENSIONS_DIR=str(workdir / "torch_extensions"),
        CUDA_CACHE_PATH=str(workdir / ".nv" / "ComputeCache"),
        # The Python kernel DSLs' compile caches (runners/submission/languages.py's cache_vars): in the job's folder
        # too, whatever the run's language, so no submission reads another's compiled artifacts.
        TORCHINDUCTOR_CACHE_DIR=str(workdir / ".cache" / "torchinductor"),
        HELION_CACHE_DIR=str(workdir / ".cache" / "helion"),
        TILELANG_CACHE_DIR=str(workdir / ".cache" / "tilelang"),
        CUTE_DSL_CACHE_DIR=str(workdir / ".cache" / "cute_dsl"),
        PYTHONNOUSERSITE="1",
        PYTHONDONTWRITEBYTECODE="1",
    )
    for key, value in (extra or {}).items():
        if _denied(key):
            raise ValueError(f"SandboxSpec.env must not carry {key!r}: the submission can read its environment")
        env[key] = value
    return env


def _denied(name: str) -> bool:
    upper = name.upper()
    return any(marker in upper for marker in _ENV_DENY_MARKERS)


def python_ro_paths() -> tuple[Path, ...]:
    """Where this interpreter and its packages live (added read-only to every sandbox)."""
    import site
    import sysconfig

    candidates = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(sys.executable).resolve().parent.parent)}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        with contextlib.suppress(KeyError):
            candidates.add(sysconfig.get_paths()[key])
    with contextlib.suppress(AttributeError):
        candidates.update(site.getsitepackages())
    return tuple(sorted(Path(p) for p in candidates if p and Path(p).exists()))


# Compilers a submission's build may call: Triton builds a C helper with the host's C compiler at first use,
# load_inline and native .cu problems call nvcc and the host compiler, profile mode calls ncu.
_TOOLCHAIN = ("cc", "gcc", "c++", "g++", "ld", "as", "nvcc", "ncu", "ninja")


def toolchain_ro_paths(path: str | None = None) -> tuple[Path, ...]:
    """Install prefixes of the compilers on PATH or named by CC/CXX/CUDAHOSTCXX/NVCC_CCBIN that live outside the
    system paths (e.g. ``/opt/gcc`` for ``/opt/gcc/bin/gcc``), and ``CUDA_HOME``/``CUDA_PATH``: without them Triton,
    load_inline and nvcc fail inside the sandbox with a missing compiler (seen on the lent H100: Triton looked for
    /opt/gcc/bin/gcc)."""
    names = [*_TOOLCHAIN, *(os.environ.get(v, "").split(" ")[0] for v in ("CC", "CXX", "CUDAHOSTCXX", "NVCC_CCBIN"))]
    found: set[Path] = set()
    for name in filter(None, names):
        exe = shutil.which(name, path=path)
        for candidate in {Path(exe), Path(exe).resolve()} if exe else ():
            found.add(candidate.parent.parent if candidate.parent.name == "bin" else candidate.parent)
    for var in ("CUDA_HOME", "CUDA_PATH"):
        value = os.environ.get(var)
        if value and Path(value).is_dir():
            found.add(Path(value).resolve())
    system = tuple(Path(p) for p in _SYSTEM_RO)
    return tuple(
        sorted(p for p in found if p.is_dir() and p != Path("/") and not any(p.is_relative_to(s) for s in system))
    )


def sys_paths(allow_gpu: bool, sys_root: Path = Path("/sys")) -> list[str]:
    """The parts of /sys bound (read-only) into a sandbox: the CPUs' and NUMA nodes' for every run; with a GPU also
    the PCI devices (the targets of ``/sys/bus/pci/devices/*``: ``/sys/devices/pci*``, which NCCL's topology walks up),
    the NVIDIA modules' and ROCm's KFD and drm. Those that do not exist here are left out."""
    paths = [*_SYS_CPU]
    if allow_gpu:
        paths += _SYS_GPU
        paths += sorted(str(Path("/sys/devices") / p.name) for p in (sys_root / "devices").glob("pci*"))
    return [p for p in paths if (sys_root / Path(p).relative_to("/sys")).exists()]


def gpu_nodes(dev: Path, only: str | None) -> list[Path]:
    """The GPU device nodes a sandbox binds: the driver's shared ones (nvidiactl, nvidia-uvm, ...) and every GPU's
    ``nvidiaN``, or of those only ``only`` (a run's own GPU: runners/gpus.py; several, comma-separated, for a run of
    several ranks: docs/multigpu.md)."""
    nodes = [node for pattern in _GPU_DEVICE_GLOBS for node in sorted(dev.glob(pattern))]
    if only is None:
        return nodes
    own = {Path(node).name for node in only.split(",")}
    return [n for n in nodes if not re.fullmatch(r"nvidia\d+", n.name) or n.name in own]


def sandbox_argv(
    bwrap: str,
    workdir: Path,
    ro_paths: tuple[Path, ...],
    allow_gpu: bool,
    hardened: bool,
    shm_bytes: int = 256 * 1024 * 1024,
    gpu_node: str | None = None,
) -> list[str]:
    """bubblewrap's arguments up to (not including) the ``--`` before the command."""
    args = [bwrap, "--die-with-parent", "--new-session", "--unshare-net", "--unshare-pid", "--unshare-ipc"]
    args += ["--unshare-uts", "--unshare-cgroup-try", "--hostname", "kernelcup-sandbox"]
    if hardened:
        # A user namespace of our own, and none nested inside it: the submission cannot gain capabilities anywhere.
        args += ["--unshare-user", "--disable-userns"]
    if os.geteuid() == 0:
        args += ["--cap-drop", "ALL"]
    for system_path in _SYSTEM_RO:
        if os.path.islink(system_path):
            args += ["--symlink", os.readlink(system_path), system_path]
        elif os.path.isdir(system_path):
            args += ["--ro-bind", system_path, system_path]
    for name in _ETC_RO:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    # A fresh /dev with the usual nodes; /dev/shm (PyTorch's shared memory) a tmpfs of bounded size.
    args += ["--proc", "/proc", "--dev", "/dev", "--size", str(shm_bytes), "--tmpfs", "/dev/shm"]
    for path in sys_paths(allow_gpu):
        args += ["--ro-bind-try", path, path]
    if allow_gpu:
        for node in gpu_nodes(Path("/dev"), gpu_node):
            args += ["--dev-bind", str(node), str(node)]
    # /tmp: an empty tmpfs, mounted before the paths that may live below it, made read-only at the end.
    args += ["--tmpfs", "/tmp"]
    # Read-only paths inside the job dir (the problem's reference, the harness's files) go on top of it, after it.
    inside = [p for p in ro_paths if p != workdir and p.is_relative_to(workdir)]
    outside = [p for p in ro_paths if p not in inside]
    for p in outside:
        args += ["--ro-bind", str(p), str(p)]
    installs = (*python_ro_paths(), *toolchain_ro_paths())
    for p in outside:
        args += _masks(p, deep=not _installed(p, installs))
    work = str(workdir)
    args += ["--bind", work, work]
    for p in inside:
        args += ["--ro-bind", str(p), str(p)]
    if work != "/tmp":
        args += ["--remount-ro", "/tmp"]
    # bubblewrap builds the new root and /dev on tmpfs: make them read-only too (the device binds stay rw),
    # so that the job dir is the only writable place.
    args += ["--remount-ro", "/dev", "--remount-ro", "/"]
    args += ["--chdir", work]
    return args


# Files a read-only path may hold that the submission must never read: settings files with tokens, the git history,
# local databases, keys. Hidden at every depth of a read-only path that is not an installation of Python, of Python
# packages (a folder with pip's *.dist-info) or of a compiler (those are vendors' trees, hidden at their top level
# only: walking torch's 20,000 files for every run would cost a second; nothing of ours is written into them).
_MASK_NAMES = (".env", ".git", ".netrc", ".pgpass", ".aws", ".ssh", ".modal.toml", ".kernelcup")
_MASK_SUFFIXES = (".db", ".sqlite", ".sqlite3", ".pem", ".key")
# A read-only path that is walked must be small (the runner's package, a folder of wheels, the allocator's cache):
# one larger than this is refused rather than bound with parts unvetted.
MAX_WALKED_ENTRIES = 50_000


class UnvettedPath(ValueError):
    """A read-only path too large to search for secret-looking files: the sandbox is not started."""


def _secret_looking(name: str) -> bool:
    return name in _MASK_NAMES or name.startswith(".env.") or name.endswith(_MASK_SUFFIXES)


def _mask(entry: os.DirEntry[str]) -> list[str]:
    try:
        if entry.is_dir(follow_symlinks=False):
            return ["--tmpfs", entry.path, "--remount-ro", entry.path]
        if entry.is_file(follow_symlinks=False):
            return ["--ro-bind", "/dev/null", entry.path]
    except OSError:
        pass
    return []


def _masks(root: Path, *, deep: bool = True) -> list[str]:
    """bubblewrap arguments that hide secret-looking entries of ``root`` behind empty read-only ones: at every depth
    (``deep``), or at the top only. Symbolic links are not followed (a link to a secret file is hidden by name)."""
    args: list[str] = []
    pending, seen = [root], 0
    while pending:
        folder = pending.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > MAX_WALKED_ENTRIES:
                raise UnvettedPath(f"{root} holds more than {MAX_WALKED_ENTRIES} entries; bind a smaller folder")
            if _secret_looking(entry.name):
                args += _mask(entry)
            elif deep:
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(Path(entry.path))
    return args


def _installed(p: Path, installs: tuple[Path, ...]) -> bool:
    return any(p.is_relative_to(i) for i in installs) or _package_folder(p)


def _package_folder(p: Path) -> bool:
    """A folder pip installed packages into (``pip install --target``, put on ``PYTHONPATH``: how the GPU machines
    add the kernel DSLs): vendors' trees like site-packages, known by the ``*.dist-info`` folders pip writes."""
    try:
        return any(e.name.endswith(".dist-info") and e.is_dir(follow_symlinks=False) for e in os.scandir(p))
    except OSError:
        return False


@functools.lru_cache(maxsize=4)
def probe_sandbox(bwrap: str | None = None) -> tuple[str | None, bool, str]:
    """Whether bubblewrap can run here: (bwrap path or None, hardened flags usable, note). Cached per process."""
    if not sys.platform.startswith("linux"):
        return None, False, f"no sandbox on {sys.platform} (bubblewrap is Linux only)"
    bwrap = bwrap or shutil.which("bwrap")
    if bwrap is None:
        return None, False, "bubblewrap (bwrap) is not installed; `make setup` installs it"
    with tempfile.TemporaryDirectory(prefix="kernelcup-probe-") as tmp:
        err = ""
        for hardened in (True, False):
            argv = [*sandbox_argv(bwrap, Path(tmp), (), False, hardened), "--", "/bin/sh", "-c", "exit 0"]
            try:
                res = subprocess.run(argv, capture_output=True, timeout=20, env={"PATH": "/usr/bin:/bin"})
            except (OSError, subprocess.TimeoutExpired) as exc:
                err = str(exc)
                continue
            if res.returncode == 0:
                return bwrap, hardened, "sandboxed with bubblewrap" + ("" if hardened else " (no user namespace)")
            last = res.stderr.decode(errors="replace").strip().splitlines()[-1:]
            err = last[0] if last else f"exit {res.returncode}"
    return None, False, f"bubblewrap cannot run here ({err}); namespaces are probably forbidden in this container"
