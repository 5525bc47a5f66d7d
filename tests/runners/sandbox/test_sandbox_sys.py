"""What a run sees of /sys (issue 37, class 2): the CPUs' and NUMA nodes' description, and with a GPU its PCI devices
and driver modules; never /sys/fs/cgroup (every other run's cgroup, with live memory and task counters), /sys/kernel
or /sys/firmware."""

from __future__ import annotations

from pathlib import Path

import pytest

from runners.sandbox.cgroups import create_run_cgroups
from runners.sandbox.view import sys_paths

LIST_SYS = """
import os
found = []
for top, dirs, files in os.walk('/sys'):
    found += [os.path.join(top, d) for d in dirs] + [os.path.join(top, f) for f in files]
print('\\n'.join(found))
"""


def test_no_other_run_is_visible_in_sys(run_py, sandboxed: None) -> None:
    other = create_run_cgroups(64 << 20, 16)  # another run's cgroups, as a concurrent run would have them
    if not other.dirs:
        pytest.skip("no cgroups can be created on this machine")
    try:
        out = run_py(LIST_SYS, output_cap_bytes=16 << 20, timeout_s=60)
    finally:
        other.remove()
    assert out.returncode == 0, out.stderr
    seen = out.stdout.splitlines()
    assert seen, "the walk of /sys found nothing"
    assert not [p for p in seen if "kernelcup-" in p or p.startswith(("/sys/fs", "/sys/kernel", "/sys/firmware"))]
    assert {p.split("/")[2] for p in seen} == {"devices"}  # a CPU run: /sys/devices/system/{cpu,node} only


def test_what_the_cpu_path_reads_of_sys_is_there(run_py, sandboxed: None) -> None:
    out = run_py(
        """
        import os
        print(open('/sys/devices/system/cpu/online').read().strip(), open('/sys/devices/system/cpu/possible').read())
        print('cpus', os.cpu_count(), len(os.sched_getaffinity(0)))
        """
    )
    assert out.returncode == 0, out.stderr
    assert f"cpus {__import__('os').cpu_count()}" in out.stdout


def test_a_gpu_run_binds_the_pci_devices_and_the_driver_not_the_cgroups() -> None:
    gpu = sys_paths(True)
    assert set(sys_paths(False)) <= set(gpu)
    assert not [p for p in gpu if p.startswith(("/sys/fs", "/sys/kernel", "/sys/firmware", "/sys/class/net"))]
    pci_roots = sorted(str(Path("/sys/devices") / p.name) for p in Path("/sys/devices").glob("pci*"))
    assert all(root in gpu for root in pci_roots)
    if Path("/sys/bus/pci").exists():
        assert "/sys/bus/pci" in gpu
