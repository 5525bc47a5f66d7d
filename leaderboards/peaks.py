"""Speed of light: what fraction of a device's roofline bound a benchmark reached, and the peaks it needs.

Only bandwidth is listed for known devices: a FLOP/s peak depends on the data type and the units used (tensor
cores or not), so a problem whose results report ``flops`` gets a fraction only where an operator configures a
FLOP/s peak (``DISCORD_DEVICE_PEAKS``, ``KERNELCUP_API_DEVICE_PEAKS``). Values are the vendors' datasheet figures.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from runners.contract import BenchmarkResult

DATASHEET_BANDWIDTH = {
    "H100": 3.35e12,  # SXM5 80 GB, HBM3
    "H200": 4.8e12,
    "B200": 8.0e12,
    "A100": 2.039e12,  # SXM4 80 GB
    "L40S": 864e9,
    "L4": 300e9,
    "A10G": 600e9,
    "T4": 320e9,
}


@dataclass(frozen=True)
class DevicePeak:
    """What a device can do at best: memory bandwidth and arithmetic throughput (either may be unknown)."""

    bytes_per_s: float | None = None
    flops_per_s: float | None = None


PeakLookup = Callable[[str], DevicePeak | None]


def speed_of_light(bench: BenchmarkResult, peak: DevicePeak | None) -> float | None:
    """The fraction of the device's speed of light a benchmark reached, or None when it cannot be known.

    The speed-of-light time is the roofline bound: the longer of moving ``bytes_moved`` at peak
    bandwidth and doing ``flops`` at peak throughput. The fraction is that bound over the median time.
    """
    if peak is None or bench.stats is None or bench.stats.median_ns <= 0:
        return None
    bound = roofline_s(bench.bytes_moved, bench.flops, peak)
    return None if bound is None else bound / (bench.stats.median_ns * 1e-9)


def roofline_s(bytes_moved: int | None, flops: int | None, peak: DevicePeak) -> float | None:
    """The speed-of-light time of some work on a device (seconds), or None when neither bound is known."""
    bounds = []
    if bytes_moved and peak.bytes_per_s:
        bounds.append(bytes_moved / peak.bytes_per_s)
    if flops and peak.flops_per_s:
        bounds.append(flops / peak.flops_per_s)
    return max(bounds) if bounds else None


def parse_peaks(spec: Mapping[str, str]) -> dict[str, DevicePeak]:
    """``{"H100": "3.35e12,989e12"}`` (bytes/s, optional FLOP/s) into peaks; a bad entry raises ValueError."""
    out = {}
    for device, text in spec.items():
        parts = [p.strip() for p in text.split(",")]
        if not 1 <= len(parts) <= 2 or not parts[0]:
            raise ValueError(f"peak of {device!r} must be 'BYTES_PER_S[,FLOPS_PER_S]', not {text!r}")
        bw = float(parts[0])
        flops = float(parts[1]) if len(parts) == 2 and parts[1] else None
        out[device] = DevicePeak(bytes_per_s=bw, flops_per_s=flops)
    return out


def peak_lookup(configured: Mapping[str, DevicePeak]) -> PeakLookup:
    """A lookup by device name (case-insensitive): configured peaks first, then the datasheet bandwidths."""
    table = {k.lower(): v for k, v in configured.items()}
    datasheet = {k.lower(): DevicePeak(bytes_per_s=v) for k, v in DATASHEET_BANDWIDTH.items()}

    def lookup(device: str) -> DevicePeak | None:
        return table.get(device.lower()) or datasheet.get(device.lower())

    return lookup
