"""System information gathered by the trusted parent (nvidia-smi / pynvml, package metadata, nvcc)."""

from __future__ import annotations

import platform
import re
import shutil
import socket
import subprocess
import sys
from importlib import metadata

from runners.contract import SystemInfo

_SMI_TIMEOUT_S = 10.0


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def nvcc_version() -> str | None:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=_SMI_TIMEOUT_S).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"release ([\d.]+)", out)
    return m.group(1) if m else None


def gpu_query(index: int = 0) -> dict[str, str | int] | None:
    """Name, driver, count and current SM clock of GPU ``index`` via pynvml, else nvidia-smi; None without either."""
    try:
        import pynvml  # nvidia-ml-py, where installed

        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            name = pynvml.nvmlDeviceGetName(handle)
            return {
                "name": name.decode() if isinstance(name, bytes) else name,
                "driver": _text(pynvml.nvmlSystemGetDriverVersion()),
                "count": int(pynvml.nvmlDeviceGetCount()),
                "sm_clock": int(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)),
            }
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        pass
    out = smi_query("name,driver_version,clocks.sm", "csv,noheader,nounits")
    rows = [r.split(", ") for r in (out or "").strip().splitlines() if r.strip()]
    if len(rows) <= index or len(rows[index]) < 3:
        return None
    row = rows[index]
    try:
        clock = int(float(row[2]))
    except ValueError:
        clock = 0
    return {"name": row[0], "driver": row[1], "count": len(rows), "sm_clock": clock}


_ARCHS: dict[int, str] = {}


def compute_arch(index: int) -> str:
    """GPU ``index``'s compute capability as Triton's architecture number ("90" for 9.0), from nvidia-smi (asked
    until it answers, then remembered for the process); '' where it cannot say."""
    if index in _ARCHS:
        return _ARCHS[index]
    out = smi_query("index,compute_cap", "csv,noheader,nounits") or ""
    for row in out.strip().splitlines():
        parts = [p.strip() for p in row.split(",")]
        if len(parts) == 2 and parts[0].isdigit():
            major, _, minor = parts[1].partition(".")
            if major.isdigit() and minor.isdigit():
                _ARCHS[int(parts[0])] = f"{major}{minor}"
    return _ARCHS.get(index, "")


def smi_query(fields: str, fmt: str = "csv,noheader") -> str | None:
    """``nvidia-smi --query-gpu=FIELDS --format=FMT``'s output, or None without nvidia-smi or when it fails."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        proc = subprocess.run([smi, f"--query-gpu={fields}", f"--format={fmt}"], capture_output=True, text=True,
                              timeout=_SMI_TIMEOUT_S)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def sm_clock_mhz(index: int = 0) -> int | None:
    q = gpu_query(index)
    return int(q["sm_clock"]) if q and q.get("sm_clock") else None


def collect(device: str, gpu_index: int = 0) -> SystemInfo:
    """Everything the parent can learn without importing PyTorch (the evaluation process adds the rest)."""
    info = SystemInfo(
        hostname=socket.gethostname(),
        platform=platform.platform(),
        python=sys.version.split()[0],
        device=device,
        torch=_version("torch"),
        triton=_version("triton") or _version("pytorch-triton"),
        nvcc=nvcc_version(),
    )
    if device != "cpu":
        q = gpu_query(gpu_index)
        if q:
            info.gpu_name = str(q["name"])
            info.driver = str(q["driver"])
            info.gpu_count = int(q["count"])
            info.sm_clock_start_mhz = int(q["sm_clock"]) or None
    return info
