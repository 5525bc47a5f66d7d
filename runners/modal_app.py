"""The Modal app that runs submissions on Modal's GPUs. Deploy it with ``modal deploy runners/modal_app.py``.

One function per GPU type, each asking for exactly that GPU (``H100!`` keeps Modal from upgrading an H100
request to an H200, so an H100 leaderboard never gets H200 timings). Each function runs the same code as
every other launcher, ``python -m runners.entry REQUEST.json RESULT.json``, in a fresh container
(``single_use_containers``: a hostile submission cannot leave anything behind for the next one) with no
network and no Modal API access. The launcher (``runners/launchers/modal.py``) sets each call's time limit
from the request, above the entry point's own limit that it passes in.

Modal needs the app and its functions at module level (``modal deploy`` imports this file); building them
only describes the image and the functions, nothing is contacted until a deploy.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import modal

APP_NAME = os.environ.get("MODAL_APP_NAME", "kernelcup-runners")

GPUS: dict[str, str] = {
    "T4": "T4",
    "L4": "L4",
    "A100": "A100-40GB",
    "A100-80GB": "A100-80GB",
    "H100": "H100!",
    "H200": "H200",
    "B200": "B200",
    # Several GPUs in one container, for problems of several ranks (docs/multigpu.md): Modal's "TYPE:COUNT".
    "H100x2": "H100!:2",
    "H100x8": "H100!:8",
    "H200x2": "H200:2",
    "H200x8": "H200:8",
    "B200x8": "B200:8",
}
"""Device name (as routes and leaderboards spell it) -> Modal's GPU string, exact: no automatic upgrades. A name
with a count (``H100x8``) is a container of that many GPUs of one machine; the entry runs one rank per GPU."""

CUDA_BASE_IMAGE = "nvidia/cuda:12.8.1-devel-ubuntu24.04"  # nvcc; CUDA 12.8 is the first with sm_100 (B200)
PYTHON_VERSION = "3.12"
TORCH_SPEC = "torch==2.13.0"
"""The PyTorch that `make setup` installs for CI (Makefile's TORCH_SPEC), so that the DSL pins below are the ones CI
runs against it (Helion 1.5.1 imports torch._inductor.runtime.triton_compat.IntelGPUError, which torch 2.8 and 2.11
lack: with the 2.8 this image had, the helion language could not load)."""
TORCH_INDEX_URL = "https://download.pytorch.org/whl/cu128"
DSL_SPECS = ("helion==1.5.1", "tilelang==0.1.15", "nvidia-cutlass-dsl==4.8.1")
"""The Python kernel DSLs (languages helion, tilelang, cute-dsl), pinned like PyTorch; pyproject.toml's 'dsl' extra
holds the same pins. nvidia-cutlass-dsl brings its CUDA 12 libraries by default, as the CUDA 12.8 base needs."""
CUTLASS_REF = "v4.2.0"  # CUTLASS and CuTe headers: the release of the nvidia-cutlass 4.2.0.0 package
THUNDERKITTENS_COMMIT = "0b55588d2769dde0c7a9a606ffc015b0ca7a9551"  # HazyResearch/ThunderKittens, 2026-04-25
THUNDERKITTENS_REF = os.environ.get("KERNELCUP_THUNDERKITTENS_REF", THUNDERKITTENS_COMMIT)
MAX_FUNCTION_TIMEOUT_S = 3 * 3600
"""The deployed ceiling; each call asks for less through ``with_options(timeout=...)``."""

REPO_ROOT = Path(__file__).resolve().parent.parent
RUNNERS_DIR = REPO_ROOT / "runners"
REQUIREMENTS = RUNNERS_DIR / "remote-requirements.lock"
"""Hash-pinned (pip-compile --generate-hashes, from remote-requirements.txt): see the lock's header."""
REMOTE_ROOT = "/root"
BASELINE_CACHE_DIR = "/kernelcup-baselines"


def function_name(device: str) -> str:
    return "run_" + device.lower().replace("-", "_")


def build_image() -> modal.Image:
    """The GPU image: CUDA toolkit, PyTorch + Triton, the Python kernel DSLs (Helion, TileLang, CuTe DSL), CUTLASS/CuTe
    and ThunderKittens headers, the runner."""
    return (
        modal.Image.from_registry(CUDA_BASE_IMAGE, add_python=PYTHON_VERSION)
        .apt_install("git", "build-essential", "ninja-build", "bubblewrap")
        .pip_install(TORCH_SPEC, index_url=TORCH_INDEX_URL)
        .pip_install(*DSL_SPECS)
        .pip_install_from_requirements(str(REQUIREMENTS))
        .run_commands(
            f"git clone --depth 1 --branch {CUTLASS_REF} https://github.com/NVIDIA/cutlass.git /opt/cutlass",
            # A commit, branch or tag: fetched by name, so a commit pins it exactly.
            "git init -q /opt/ThunderKittens",
            f"git -C /opt/ThunderKittens fetch -q --depth 1 https://github.com/HazyResearch/ThunderKittens.git"
            f" {THUNDERKITTENS_REF}",
            "git -C /opt/ThunderKittens checkout -q FETCH_HEAD",
            "git -C /opt/ThunderKittens rev-parse HEAD > /opt/ThunderKittens/REVISION",
        )
        .env(
            {
                # The CUTLASS and ThunderKittens languages' headers (runners/settings.py): each run binds only
                # these folders, read-only, into the submission's sandbox.
                "KERNELCUP_CUTLASS_INCLUDE": "/opt/cutlass/include",
                "KERNELCUP_THUNDERKITTENS_INCLUDE": "/opt/ThunderKittens/include",
                "PYTHONPATH": REMOTE_ROOT,
                "KERNELCUP_BASELINE_CACHE_DIR": BASELINE_CACHE_DIR,
                "PYTHONUNBUFFERED": "1",
            }
        )
        # Last, so that changing the runner code does not rebuild the layers above.
        .add_local_dir(RUNNERS_DIR, f"{REMOTE_ROOT}/runners", ignore=["**/__pycache__", "**/*.pyc"])
    )


def run_entry(
    request_json: str, entry_timeout_s: float, *, python: str = sys.executable, cwd: str | None = None
) -> str:
    """Run ``python -m runners.entry`` on one request and return the result JSON it wrote.

    The entry point bounds the submission itself; ``entry_timeout_s`` bounds the entry point. A crash or an
    overrun without a result raises, which the launcher turns into an infrastructure failure (retried).
    """
    with tempfile.TemporaryDirectory(prefix="kernelcup-") as tmp:
        request_path, result_path = Path(tmp, "request.json"), Path(tmp, "result.json")
        request_path.write_text(request_json, encoding="utf-8")
        try:
            done = subprocess.run(
                # Always sandboxed: a container where bubblewrap cannot run gives an infrastructure error, never an
                # unsandboxed run next to the request and its secret seed.
                [python, "-m", "runners.entry", "--require-sandbox", str(request_path), str(result_path)],
                cwd=cwd or REMOTE_ROOT,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=entry_timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"the runner entry point overran its {entry_timeout_s:g} s limit") from None
        if result_path.is_file():
            return result_path.read_text(encoding="utf-8")
        tail = done.stderr[-4000:]
        raise RuntimeError(f"the runner entry point exited {done.returncode} without a result: {tail}")


BASELINE_CACHE = modal.Volume.from_name(f"{APP_NAME}-baselines", create_if_missing=True)
"""The baselines' medians (runners/baselines.py), shared by the single-use containers so that a problem's reference
is timed once per GPU model and software versions, not on every run. Only the trusted entry writes it; it is not in
any sandbox's view (the submission's read-only cache folder is another one)."""


def run_and_keep(request_json: str, entry_timeout_s: float) -> str:
    """``run_entry``, then the baselines it timed committed to the shared Volume (best effort: a failed commit costs
    only a later re-timing)."""
    try:
        return run_and_keep(request_json, entry_timeout_s)
    finally:
        try:
            BASELINE_CACHE.commit()
        except Exception as exc:  # never the run's failure
            print(f"kernelcup: committing the baselines' cache failed: {exc}", file=sys.stderr)


app = modal.App(APP_NAME)
_image = build_image()
_options = dict(
    volumes={BASELINE_CACHE_DIR: BASELINE_CACHE},
    image=_image,
    timeout=MAX_FUNCTION_TIMEOUT_S,
    single_use_containers=True,
    block_network=True,
    restrict_modal_access=True,
    retries=0,
)


@app.function(gpu=GPUS["T4"], **_options)
def run_t4(request_json: str, entry_timeout_s: float) -> str:
    return run_and_keep(request_json, entry_timeout_s)


@app.function(gpu=GPUS["L4"], **_options)
def run_l4(request_json: str, entry_timeout_s: float) -> str:
    return run_and_keep(request_json, entry_timeout_s)


@app.function(gpu=GPUS["A100"], **_options)
def run_a100(request_json: str, entry_timeout_s: float) -> str:
    return run_and_keep(request_json, entry_timeout_s)


@app.function(gpu=GPUS["A100-80GB"], **_options)
def run_a100_80gb(request_json: str, entry_timeout_s: float) -> str:
    return run_and_keep(request_json, entry_timeout_s)


@app.function(gpu=GPUS["H100"], **_options)
def run_h100(request_json: str, entry_timeout_s: float) -> str:
    return run_and_keep(request_json, entry_timeout_s)


@app.function(gpu=GPUS["H200"], **_options)
def run_h200(request_json: str, entry_timeout_s: float) -> str:
    return run_and_keep(request_json, entry_timeout_s)


@app.function(gpu=GPUS["B200"], **_options)
def run_b200(request_json: str, entry_timeout_s: float) -> str:
    return run_and_keep(request_json, entry_timeout_s)


@app.function(gpu=GPUS["H100x2"], **_options)
def run_h100x2(request_json: str, entry_timeout_s: float) -> str:
    return run_and_keep(request_json, entry_timeout_s)


@app.function(gpu=GPUS["H100x8"], **_options)
def run_h100x8(request_json: str, entry_timeout_s: float) -> str:
    return run_and_keep(request_json, entry_timeout_s)


@app.function(gpu=GPUS["H200x2"], **_options)
def run_h200x2(request_json: str, entry_timeout_s: float) -> str:
    return run_and_keep(request_json, entry_timeout_s)


@app.function(gpu=GPUS["H200x8"], **_options)
def run_h200x8(request_json: str, entry_timeout_s: float) -> str:
    return run_and_keep(request_json, entry_timeout_s)


@app.function(gpu=GPUS["B200x8"], **_options)
def run_b200x8(request_json: str, entry_timeout_s: float) -> str:
    return run_and_keep(request_json, entry_timeout_s)
