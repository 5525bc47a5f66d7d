"""Test-wide fixtures: no network but loopback, and a GPU marker that skips without CUDA."""

from __future__ import annotations

import ipaddress
import os
import shutil
import socket
import tempfile

import pytest

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _is_local(address: object) -> bool:
    if isinstance(address, str | bytes):  # AF_UNIX path
        return True
    if isinstance(address, tuple) and address:
        host = address[0]
        if host in ("localhost", ""):
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False
    return False


def _guarded(real):
    def connect(self: socket.socket, address: object):
        if not _is_local(address):
            raise ConnectionRefusedError(f"tests may only reach loopback, not {address!r}")
        return real(self, address)

    return connect


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _guarded(_real_connect))
    monkeypatch.setattr(socket.socket, "connect_ex", _guarded(_real_connect_ex))


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


_GPU_LOCK_DIR = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    # Long-lived runners pre-start the next run's processes (KERNELCUP_PRESTART, default on): in the suite every
    # local launcher would leave a set of interpreters importing PyTorch behind each run, on CI's two cores, and
    # tests that count a run's processes would count them. Off here; tests/runners/test_prestart.py turns it on.
    os.environ.setdefault("KERNELCUP_PRESTART", "false")
    # Every GPU's machine-wide lock (runners/gpus.py): the suite's fake GPUs share UUIDs across xdist's processes, so
    # each test process (the controller and every worker: each runs this hook) gets a folder of its own, removed at
    # the end. Assigned, not setdefault: a worker inherits the controller's environment.
    lock_dir = tempfile.mkdtemp(prefix="kernelcup-gpu-locks-")
    os.environ["KERNELCUP_GPU_LOCK_DIR"] = lock_dir
    config.stash[_GPU_LOCK_DIR] = lock_dir


def pytest_unconfigure(config: pytest.Config) -> None:
    lock_dir = config.stash.get(_GPU_LOCK_DIR, None)
    if lock_dir is not None:
        shutil.rmtree(lock_dir, ignore_errors=True)


@pytest.hookimpl(trylast=True)  # after pytest-xdist's own hook, which tries the same and fails under pytest 9.2
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _keep_xdist_groups(config, items)
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def _keep_xdist_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Make ``--dist loadgroup`` keep each ``xdist_group``'s tests on one worker under pytest 9.2.

    pytest-xdist (3.8.0, the newest) marks a grouped test by appending ``@<group>`` to its node id in each worker
    (``item._nodeid = ...``), and its scheduler hands the tests of one suffix to one worker. pytest 9.2 keeps the
    node id in ``Node._id`` (a ``NodeId``), so that assignment changes nothing and every grouped test was spread
    over the workers like any other (seen: test_next_run_works on gw1, its module's cases on gw0). Here the suffix
    is set where pytest 9.2 reads it; with an xdist that manages by itself this finds the suffix there and does
    nothing.

    A test that uses a module-scoped fixture (a served site, a browser, a module's prepared data) joins its module's
    group, ``module:<file>``, unless it names a group of its own: spread over the workers, each worker set the
    fixture up again (the browser module's site, a real evaluation among it, was built twice). The scheduler sends
    groups before single tests, the largest first, so the groups start early and single tests fill the end."""
    if not getattr(config.option, "loadgroup", False):  # set in xdist's workers under --dist loadgroup only
        return
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # pytest before 9.2 (the lent GPU's 9.1.1): the id is the plain string ``_nodeid``
        NodeId = None

    for item in items:
        groups = {
            str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")
        }
        if not groups and _uses_a_module_fixture(item):
            groups = {f"module:{item.nodeid.split('::', 1)[0]}"}
        if not groups or "@" in item.nodeid:
            continue
        grouped = f"{item.nodeid}@{'_'.join(sorted(groups))}"
        if NodeId is None:
            item._nodeid = grouped
        else:
            item._id = NodeId.parse(grouped)


def _uses_a_module_fixture(item: pytest.Item) -> bool:
    """Whether ``item`` uses a fixture set up once per module (see ``_keep_xdist_groups``)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(defs and defs[-1].scope == "module" for defs in info.name2fixturedefs.values())


@pytest.fixture
def needs_hard_task_limit() -> None:
    """Skip a fork-bomb test unless the kernel itself will stop the bomb (see ``kernel_caps_tasks``): as root
    without a pids cgroup an exponential bomb can outrun the sandbox's polling watchdog and exhaust the machine's
    pids (seen here once: it took the whole machine down), so that case is not tried on shared machines."""
    from runners.sandbox.cgroups import kernel_caps_tasks

    if not kernel_caps_tasks():
        pytest.skip("as root without a pids cgroup only a polling watchdog would stop a fork bomb; not tried here")
