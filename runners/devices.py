"""Datasheet peaks of the GPUs kernelcup runs on: memory bandwidth and dense FLOP/s per data type.

One table for every layer (the core reads it too). It answers two questions: the speed of light of a benchmark
case (the roofline bound: the bytes it must move over the bandwidth, the operations it must do over the peak for
its data type), and whether a measured time is impossible (faster than that bound under the most optimistic peak
of the device; such a result is never ranked). Figures are vendors' datasheets, dense (no structured sparsity);
where a family has several variants, the fastest one the device name can mean is used, so that an honest kernel is
never called impossible.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

TB = 1e12
TFLOP = 1e12


@dataclass(frozen=True)
class DevicePeaks:
    name: str
    match: tuple[str, ...]
    """Lower-case substrings of the name the driver reports (all must appear)."""
    memory_bytes_per_s: float
    flops_per_s: dict[str, float] = field(default_factory=dict)
    """Dense peaks by unit and type: fp32 (CUDA cores), tf32/fp16/bf16/fp8/int8/fp4 (tensor cores)."""
    source: str = ""

    @property
    def best_flops_per_s(self) -> float:
        return max(self.flops_per_s.values(), default=0.0)


PEAKS: tuple[DevicePeaks, ...] = (
    DevicePeaks("B200", ("b200",), 8.0 * TB,
                {"fp32": 80 * TFLOP, "tf32": 1100 * TFLOP, "fp16": 2250 * TFLOP, "bf16": 2250 * TFLOP,
                 "fp8": 4500 * TFLOP, "int8": 4500 * TFLOP, "fp4": 9000 * TFLOP},
                "NVIDIA Blackwell datasheet (HGX B200, per GPU, dense)"),
    DevicePeaks("H200", ("h200",), 4.8 * TB,
                {"fp32": 67 * TFLOP, "tf32": 494.7 * TFLOP, "fp16": 989.4 * TFLOP, "bf16": 989.4 * TFLOP,
                 "fp8": 1978.9 * TFLOP, "int8": 1978.9 * TFLOP},
                "NVIDIA H200 datasheet (SXM, dense)"),
    DevicePeaks("H100 NVL", ("h100", "nvl"), 3.9 * TB,
                {"fp32": 60 * TFLOP, "tf32": 417.5 * TFLOP, "fp16": 835 * TFLOP, "bf16": 835 * TFLOP,
                 "fp8": 1670 * TFLOP, "int8": 1670 * TFLOP},
                "NVIDIA H100 datasheet (NVL, dense)"),
    DevicePeaks("H100 PCIe", ("h100", "pcie"), 2.0 * TB,
                {"fp32": 51 * TFLOP, "tf32": 378 * TFLOP, "fp16": 756 * TFLOP, "bf16": 756 * TFLOP,
                 "fp8": 1513 * TFLOP, "int8": 1513 * TFLOP},
                "NVIDIA H100 datasheet (PCIe, dense)"),
    DevicePeaks("H100", ("h100",), 3.35 * TB,
                {"fp32": 67 * TFLOP, "tf32": 494.7 * TFLOP, "fp16": 989.4 * TFLOP, "bf16": 989.4 * TFLOP,
                 "fp8": 1978.9 * TFLOP, "int8": 1978.9 * TFLOP},
                "NVIDIA H100 datasheet (SXM, dense)"),
    DevicePeaks("A100", ("a100",), 2.039 * TB,
                {"fp32": 19.5 * TFLOP, "tf32": 156 * TFLOP, "fp16": 312 * TFLOP, "bf16": 312 * TFLOP,
                 "int8": 624 * TFLOP},
                "NVIDIA A100 datasheet (80GB SXM, dense)"),
    DevicePeaks("L40S", ("l40s",), 0.864 * TB,
                {"fp32": 91.6 * TFLOP, "tf32": 183 * TFLOP, "fp16": 362 * TFLOP, "bf16": 362 * TFLOP,
                 "fp8": 733 * TFLOP, "int8": 733 * TFLOP},
                "NVIDIA L40S datasheet (dense)"),
    DevicePeaks("L4", ("l4",), 0.3 * TB,
                {"fp32": 30.3 * TFLOP, "tf32": 60 * TFLOP, "fp16": 121 * TFLOP, "bf16": 121 * TFLOP,
                 "fp8": 242.5 * TFLOP, "int8": 242.5 * TFLOP},
                "NVIDIA L4 datasheet (dense)"),
    DevicePeaks("A10G", ("a10",), 0.6 * TB,
                {"fp32": 31.2 * TFLOP, "tf32": 62.5 * TFLOP, "fp16": 125 * TFLOP, "bf16": 125 * TFLOP,
                 "int8": 250 * TFLOP},
                "NVIDIA A10 datasheet (dense; A10G uses the A10's figures, the higher of the two)"),
    DevicePeaks("T4", ("t4",), 0.32 * TB,
                {"fp32": 8.1 * TFLOP, "fp16": 65 * TFLOP, "int8": 130 * TFLOP},
                "NVIDIA T4 datasheet"),
    DevicePeaks("MI355X", ("mi355",), 8.0 * TB,
                {"fp32": 157.3 * TFLOP, "fp16": 2500 * TFLOP, "bf16": 2500 * TFLOP, "fp8": 5000 * TFLOP,
                 "int8": 5000 * TFLOP, "fp4": 10000 * TFLOP},
                "AMD Instinct MI355X datasheet (dense)"),
    DevicePeaks("MI300X", ("mi300",), 5.3 * TB,
                {"fp32": 163.4 * TFLOP, "tf32": 653.7 * TFLOP, "fp16": 1307.4 * TFLOP, "bf16": 1307.4 * TFLOP,
                 "fp8": 2614.9 * TFLOP, "int8": 2614.9 * TFLOP},
                "AMD Instinct MI300X datasheet (dense)"),
)  # fmt: skip


def peaks_for(gpu_name: str | None) -> DevicePeaks | None:
    """The table row for the name the driver reports (e.g. 'NVIDIA H100 80GB HBM3'), or None if unknown."""
    if not gpu_name:
        return None
    low = gpu_name.lower()
    for row in PEAKS:
        if all(m in low for m in row.match):
            return row
    return None


def impossible_below_ns(bytes_moved: int | None, flops: int | None, peaks: DevicePeaks) -> float:
    """The least time any kernel can take for this work on this device, with every peak at its most optimistic."""
    t_mem = (bytes_moved or 0) / peaks.memory_bytes_per_s
    best = peaks.best_flops_per_s
    t_math = (flops or 0) / best if best else 0.0
    return max(t_mem, t_math) * 1e9


GENERIC_GPU_NAMES = ("cuda", "gpu")
"""Device names that ask for any GPU (``kernelcup run --device cuda``), not a model."""


def _words(name: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", name.lower())


def gpu_matches(device_name: str, gpu_name: str) -> bool:
    """Whether the GPU the driver reports (``NVIDIA H100 80GB HBM3``) is the model a device name asks for (``H100``):
    each word of the name is a word of the GPU's (so ``L4`` is not an ``L40S``), or the name is several of its
    words run together (``RTX4090`` for ``GeForce RTX 4090``)."""
    want, have = _words(device_name), _words(gpu_name)
    if not want:
        return False
    if all(w in have for w in want):
        return True
    joined = "".join(want)
    return any("".join(have[i:j]) == joined for i in range(len(have)) for j in range(i + 1, len(have) + 1))


def device_mismatch(device: str, device_name: str, gpu_name: str | None) -> str | None:
    """Why a machine whose GPU is ``gpu_name`` (None: no GPU) cannot run a job for ``device_name`` on ``device``
    (``cpu`` or ``cuda``); None when it can. The message is the operator's (or the user's) to act on."""
    if device == "cpu":
        return None
    if gpu_name is not None and (not device_name or device_name.lower() in GENERIC_GPU_NAMES):
        return None  # any GPU will do
    if gpu_name is not None and gpu_matches(device_name, gpu_name):
        return None
    has = f"has {gpu_name}" if gpu_name else "has no GPU"
    wants = device_name or "a GPU"
    return f"this worker {has}; the job wants {wants} (use -d cpu, or route {wants} to a runner that has one)"
