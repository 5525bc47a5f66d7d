"""Datasheet peaks of the GPUs kernelcup runs on: memory bandwidth and dense FLOP/s per data type.

The one table of device peaks (every layer reads it through the results the runner computes with it). It answers
two questions: the speed of light of a benchmark case (the roofline bound: the bytes it must move over the
bandwidth, or the operations it must do over the peak for the problem's data type, whichever takes longer), and
whether a measured time is impossible (faster than that bound under the most optimistic peak of the device; such a
result is never ranked). Figures are vendors' datasheets, dense (no structured sparsity); where a family has
several variants, the fastest one the device name can mean is used, so that an honest kernel is never called
impossible. An operator corrects or adds a device with ``KERNELCUP_DEVICE_PEAKS`` (``with_overrides``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from runners.contract import DataType

TB = 1e12
TFLOP = 1e12
MEMORY = "memory"
"""The key of the bandwidth (bytes/s) in an operator's override, beside the data types' keys."""

FP32, TF32, FP16, BF16, FP8, INT8, FP4 = (DataType.FP32, DataType.TF32, DataType.FP16, DataType.BF16, DataType.FP8,
                                          DataType.INT8, DataType.FP4)  # fmt: skip


@dataclass(frozen=True)
class DevicePeaks:
    name: str
    match: tuple[str, ...]
    """Lower-case substrings of the name the driver reports (all must appear)."""
    memory_bytes_per_s: float
    flops_per_s: dict[DataType, float] = field(default_factory=dict)
    """Dense peaks by unit and type: fp32 (CUDA cores), tf32/fp16/bf16/fp8/int8/fp4 (tensor cores)."""
    source: str = ""

    @property
    def best_flops_per_s(self) -> float:
        return max(self.flops_per_s.values(), default=0.0)


PEAKS: tuple[DevicePeaks, ...] = (
    DevicePeaks("B200", ("b200",), 8.0 * TB,
                {FP32: 80 * TFLOP, TF32: 1100 * TFLOP, FP16: 2250 * TFLOP, BF16: 2250 * TFLOP,
                 FP8: 4500 * TFLOP, INT8: 4500 * TFLOP, FP4: 9000 * TFLOP},
                "NVIDIA Blackwell datasheet (HGX B200, per GPU, dense)"),
    DevicePeaks("H200", ("h200",), 4.8 * TB,
                {FP32: 67 * TFLOP, TF32: 494.7 * TFLOP, FP16: 989.4 * TFLOP, BF16: 989.4 * TFLOP,
                 FP8: 1978.9 * TFLOP, INT8: 1978.9 * TFLOP},
                "NVIDIA H200 datasheet (SXM, dense)"),
    DevicePeaks("H100 NVL", ("h100", "nvl"), 3.9 * TB,
                {FP32: 60 * TFLOP, TF32: 417.5 * TFLOP, FP16: 835 * TFLOP, BF16: 835 * TFLOP,
                 FP8: 1670 * TFLOP, INT8: 1670 * TFLOP},
                "NVIDIA H100 datasheet (NVL, dense)"),
    DevicePeaks("H100 PCIe", ("h100", "pcie"), 2.0 * TB,
                {FP32: 51 * TFLOP, TF32: 378 * TFLOP, FP16: 756 * TFLOP, BF16: 756 * TFLOP,
                 FP8: 1513 * TFLOP, INT8: 1513 * TFLOP},
                "NVIDIA H100 datasheet (PCIe, dense)"),
    DevicePeaks("H100", ("h100",), 3.35 * TB,
                {FP32: 67 * TFLOP, TF32: 494.7 * TFLOP, FP16: 989.4 * TFLOP, BF16: 989.4 * TFLOP,
                 FP8: 1978.9 * TFLOP, INT8: 1978.9 * TFLOP},
                "NVIDIA H100 datasheet (SXM, dense)"),
    DevicePeaks("A100", ("a100",), 2.039 * TB,
                {FP32: 19.5 * TFLOP, TF32: 156 * TFLOP, FP16: 312 * TFLOP, BF16: 312 * TFLOP,
                 INT8: 624 * TFLOP},
                "NVIDIA A100 datasheet (80GB SXM, dense)"),
    DevicePeaks("L40S", ("l40s",), 0.864 * TB,
                {FP32: 91.6 * TFLOP, TF32: 183 * TFLOP, FP16: 362 * TFLOP, BF16: 362 * TFLOP,
                 FP8: 733 * TFLOP, INT8: 733 * TFLOP},
                "NVIDIA L40S datasheet (dense)"),
    DevicePeaks("L4", ("l4",), 0.3 * TB,
                {FP32: 30.3 * TFLOP, TF32: 60 * TFLOP, FP16: 121 * TFLOP, BF16: 121 * TFLOP,
                 FP8: 242.5 * TFLOP, INT8: 242.5 * TFLOP},
                "NVIDIA L4 datasheet (dense)"),
    DevicePeaks("A10G", ("a10",), 0.6 * TB,
                {FP32: 31.2 * TFLOP, TF32: 62.5 * TFLOP, FP16: 125 * TFLOP, BF16: 125 * TFLOP,
                 INT8: 250 * TFLOP},
                "NVIDIA A10 datasheet (dense; A10G uses the A10's figures, the higher of the two)"),
    DevicePeaks("T4", ("t4",), 0.32 * TB,
                {FP32: 8.1 * TFLOP, FP16: 65 * TFLOP, INT8: 130 * TFLOP},
                "NVIDIA T4 datasheet"),
    DevicePeaks("MI355X", ("mi355",), 8.0 * TB,
                {FP32: 157.3 * TFLOP, FP16: 2500 * TFLOP, BF16: 2500 * TFLOP, FP8: 5000 * TFLOP,
                 INT8: 5000 * TFLOP, FP4: 10000 * TFLOP},
                "AMD Instinct MI355X datasheet (dense)"),
    DevicePeaks("MI300X", ("mi300",), 5.3 * TB,
                {FP32: 163.4 * TFLOP, TF32: 653.7 * TFLOP, FP16: 1307.4 * TFLOP, BF16: 1307.4 * TFLOP,
                 FP8: 2614.9 * TFLOP, INT8: 2614.9 * TFLOP},
                "AMD Instinct MI300X datasheet (dense)"),
)  # fmt: skip


def peaks_for(gpu_name: str | None, table: Sequence[DevicePeaks] = PEAKS) -> DevicePeaks | None:
    """The table row for the name the driver reports (e.g. 'NVIDIA H100 80GB HBM3'), or None if unknown."""
    if not gpu_name:
        return None
    words = re.findall(r"[a-z0-9]+", gpu_name.lower())
    for row in table:
        if all(any(_names(word, m) for word in words) for m in row.match):
            return row
    return None


def _names(word: str, model: str) -> bool:
    """Whether a word of a GPU's name names ``model``: the word itself, or with a letter after it ('a10' in
    'A10G', 'mi300' in 'MI300X'), never with a digit after it ('l4' is not the 'L40')."""
    return word == model or (word.startswith(model) and not word[len(model)].isdigit())


def impossible_below_ns(bytes_moved: int | None, flops: int | None, peaks: DevicePeaks) -> float:
    """The least time any kernel can take for this work on this device, with every peak at its most optimistic."""
    t_mem = (bytes_moved or 0) / peaks.memory_bytes_per_s
    best = peaks.best_flops_per_s
    t_math = (flops or 0) / best if best else 0.0
    return max(t_mem, t_math) * 1e9


def roofline_bound(
    bytes_moved: int | None, flops: int | None, peaks: DevicePeaks, dtype: DataType
) -> tuple[float, str] | None:
    """The roofline bound of some work on a device for a problem of ``dtype``, in ns, and what sets it (``memory``
    or the peak's unit, ``fp16 tensor``); None when it is unknown (no work declared, or only flops on a device with
    no peak for ``dtype``). A device with no peak for ``dtype`` (an A100 has no fp8 units) bounds the work by its
    memory alone."""
    t_mem = (bytes_moved or 0) / peaks.memory_bytes_per_s
    peak = peaks.flops_per_s.get(dtype)
    t_math = (flops or 0) / peak if peak else 0.0
    if t_mem <= 0 and t_math <= 0:
        return None
    return (t_math * 1e9, dtype.unit) if t_math > t_mem else (t_mem * 1e9, MEMORY)


def check_overrides(overrides: Mapping[str, Mapping[str, float]]) -> None:
    """Raise ValueError naming what is wrong with an operator's peaks (``{"H100": {"memory": 3.35e12, "fp16":
    989e12}}``): each key is ``memory`` (bytes/s) or a data type (FLOP/s), each value a positive number, and a
    device not in the table must give its memory bandwidth."""
    allowed = [MEMORY, *(t.value for t in DataType)]
    rows = {row.name.lower() for row in PEAKS}
    for device, figures in overrides.items():
        if not _words(device):
            raise ValueError(f"{device!r} is not a device name (use one like 'H100' or 'RTX 4090')")
        for key, value in figures.items():
            if key not in allowed:
                raise ValueError(f"{device}: {key!r} is not a peak; use {', '.join(allowed)}")
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"{device}: {key} must be a positive number (bytes/s or FLOP/s), not {value!r}")
        if device.lower() not in rows and MEMORY not in figures:
            known = ", ".join(row.name for row in PEAKS)
            raise ValueError(
                f"{device} is not in the table ({known}); a new device needs its {MEMORY!r} bandwidth (bytes/s)"
            )


def with_overrides(overrides: Mapping[str, Mapping[str, float]]) -> tuple[DevicePeaks, ...]:
    """The table with an operator's peaks (checked by ``check_overrides``): a row named by a key (any case) takes
    the figures given and keeps the rest; another key adds a device, matched by the words of its name and looked up
    before the datasheet rows."""
    check_overrides(overrides)
    by_name = {device.lower(): figures for device, figures in overrides.items()}
    note = "operator setting KERNELCUP_DEVICE_PEAKS"

    def updated(row: DevicePeaks, figures: Mapping[str, float]) -> DevicePeaks:
        flops = {**row.flops_per_s, **{DataType(k): float(v) for k, v in figures.items() if k != MEMORY}}
        memory = float(figures.get(MEMORY, row.memory_bytes_per_s))
        source = f"{note} ({', '.join(figures)}); {row.source}" if row.source else note
        return replace(row, memory_bytes_per_s=memory, flops_per_s=flops, source=source)

    rows = {row.name.lower() for row in PEAKS}
    added = tuple(
        updated(DevicePeaks(device, tuple(_words(device)), float(figures[MEMORY])), figures)
        for device, figures in overrides.items()
        if device.lower() not in rows
    )
    corrected = tuple(updated(row, by_name[row.name.lower()]) if row.name.lower() in by_name else row for row in PEAKS)
    return added + corrected


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


_COUNTED = re.compile(r"(?P<model>.*?\d[a-z]*|cuda|gpu)\s*[x×]\s*(?P<count>[1-9]\d?)", re.IGNORECASE)


def split_device(device_name: str) -> tuple[str, int | None]:
    """A device name's model and the GPUs it names (``H100x8`` -> ``("H100", 8)``; ``H100`` -> ``("H100", None)``;
    ``cudax2``: any two GPUs). The model before the ``x`` must hold a digit (or be ``cuda`` or ``gpu``), so
    ``RTX4090`` is a model, not an ``RT`` times 4090."""
    m = _COUNTED.fullmatch(device_name.strip())
    if m is None or not 1 <= int(m["count"]) <= MAX_DEVICE_GPUS:
        return device_name, None
    return m["model"], int(m["count"])


MAX_DEVICE_GPUS = 16
"""The most GPUs one device entry may name (the run contract's ``MAX_WORLD_SIZE``)."""


def device_gpus(device_name: str) -> int:
    """How many GPUs a job for ``device_name`` takes: the count it names, else one."""
    return split_device(device_name)[1] or 1


def device_mismatch(device: str, device_name: str, gpu_name: str | None) -> str | None:
    """Why a machine whose GPU is ``gpu_name`` (None: no GPU) cannot run a job for ``device_name`` on ``device``
    (``cpu`` or ``cuda``); None when it can. The message is the operator's (or the user's) to act on. A name with a
    GPU count (``H100x8``) is matched by its model; whether there are enough is the GPU pool's question."""
    if device == "cpu":
        return None
    model = split_device(device_name)[0]
    if gpu_name is not None and (not model or model.lower() in GENERIC_GPU_NAMES):
        return None  # any GPU will do
    if gpu_name is not None and gpu_matches(model, gpu_name):
        return None
    has = f"has {gpu_name}" if gpu_name else "has no GPU"
    wants = device_name or "a GPU"
    return f"this worker {has}; the job wants {wants} (use -d cpu, or route {wants} to a runner that has one)"
