"""What the evaluator's window costs: two processes in two bubblewrap sandboxes share CUDA memory (VMM exported
as file descriptors) and order their streams with stream memory operations; one times the other's kernels.

    PYTHONPATH=. python3 benchmarks/window_probe.py launch OUTDIR     # on a GPU machine; bwrap on PATH
    KC_PROBE_MODES=plain ...                                          # only the unsandboxed pair (e.g. under MPS)

For each kernel (none, vector adds of 1024², 4096² and 16384² fp16, a 4096×5120×4096 fp16 matmul, and three
cheats: a synchronising call, work left on a side stream, "done" written before the work) it prints the trusted
window U, the submitting process's own event reading r, today's single-process measurement ("baseline": events with
a spin kernel ahead), and the evaluator's copy, flush and snapshot times; whether legacy CUDA IPC works across the
sandboxes; and whether every output was right. docs/measurement.md quotes what it printed on the lent H100.
This is the probe the runner's design was checked with before it was built; it does not use the runner itself.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

GO, DONE = 0, 128
ROLE = "?"


def log(*a) -> None:
    print(f"[{ROLE} {time.strftime('%H:%M:%S')}]", *a, file=sys.stderr, flush=True)


def wait_event(ev, what: str, limit: float = 10.0) -> None:
    deadline = time.monotonic() + limit
    while not ev.query():
        if time.monotonic() > deadline:
            log("DEADLOCK waiting for", what)
            os._exit(3)
        time.sleep(0.00005)


def send(sock: socket.socket, msg: dict, fds: list[int] | None = None) -> None:
    data = json.dumps(msg).encode()
    if fds:
        socket.send_fds(sock, [data], fds)
    else:
        sock.send(data)


def recv(sock: socket.socket, timeout: float | None = None) -> tuple[dict | None, list[int]]:
    if timeout is not None:
        r, _, _ = select.select([sock], [], [], timeout)
        if not r:
            return None, []
    data, fds, _, _ = socket.recv_fds(sock, 1 << 20, 8)
    if not data:
        raise EOFError
    return json.loads(data), fds


def q(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * (len(xs) - 1) + 0.5))]


def summary(xs: list[float]) -> dict:
    if not xs:
        return {}
    return {
        "n": len(xs),
        "med": round(statistics.median(xs), 3),
        "p05": round(q(xs, 0.05), 3),
        "p25": round(q(xs, 0.25), 3),
        "p75": round(q(xs, 0.75), 3),
        "p95": round(q(xs, 0.95), 3),
        "min": round(min(xs), 3),
        "max": round(max(xs), 3),
    }


KINDS = {
    # name: (maker of inputs, calls)
    "empty": (lambda torch, g: (torch.randn(16, device="cuda", generator=g),), 120),
    "add1024": (
        lambda torch, g: tuple(
            torch.randn(1024, 1024, device="cuda", dtype=torch.float16, generator=g) for _ in range(2)
        ),
        120,
    ),
    "add4096": (
        lambda torch, g: tuple(
            torch.randn(4096, 4096, device="cuda", dtype=torch.float16, generator=g) for _ in range(2)
        ),
        60,
    ),
    "add16384": (
        lambda torch, g: tuple(
            torch.randn(16384, 16384, device="cuda", dtype=torch.float16, generator=g) for _ in range(2)
        ),
        12,
    ),
    "mm": (
        lambda torch, g: (
            torch.randn(4096, 5120, device="cuda", dtype=torch.float16, generator=g),
            torch.randn(5120, 4096, device="cuda", dtype=torch.float16, generator=g),
        ),
        30,
    ),
    "sync_add1024": (
        lambda torch, g: tuple(
            torch.randn(1024, 1024, device="cuda", dtype=torch.float16, generator=g) for _ in range(2)
        ),
        12,
    ),
    "side_add4096": (
        lambda torch, g: tuple(
            torch.randn(4096, 4096, device="cuda", dtype=torch.float16, generator=g) for _ in range(2)
        ),
        12,
    ),
    "late_add4096": (
        lambda torch, g: tuple(
            torch.randn(4096, 4096, device="cuda", dtype=torch.float16, generator=g) for _ in range(2)
        ),
        12,
    ),
}


def sub_fn(torch, kind: str):
    if kind == "empty":
        return lambda x: x
    if kind.startswith("add") or kind == "late_add4096":
        return lambda a, b: torch.add(a, b)
    if kind == "mm":
        return lambda a, b: a @ b
    if kind == "sync_add1024":

        def f(a, b):
            out = torch.add(a, b)
            _ = float(out[0, 0].item())
            return out

        return f
    if kind == "side_add4096":
        side = torch.cuda.Stream()

        def f(a, b):
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                out = torch.add(a, b)
            return out  # the main stream writes 'done' at once: the add runs on after it

        return f
    raise KeyError(kind)


# ----------------------------------------------------------------------------------------------------------------
def role_sub(sock_fd: int, so_path: str) -> None:
    from runners.ipc.cuda import Driver, SharedMemory, byte_tensor

    sock = socket.socket(fileno=sock_fd)
    t_start = time.perf_counter()
    import torch

    t_torch = time.perf_counter()
    drv = Driver()
    dev = drv.device(0)
    drv.use_primary_context(dev)
    log("driver up; waiting for setup")
    msg, fds = recv(sock, 60)
    log("setup received", msg, fds)
    assert msg["t"] == "setup", msg
    ctrl = SharedMemory.open(drv, fds[0], msg["ctrl"], dev)
    inputs = SharedMemory.open(drv, fds[1], msg["inputs"], dev)
    heap = SharedMemory.open(drv, fds[2], msg["heap"], dev)
    log("mapped", hex(ctrl.ptr), hex(inputs.ptr), hex(heap.ptr))
    # legacy IPC attempt
    legacy = "not tried"
    if msg.get("legacy"):

        class H(ctypes.Structure):
            _fields_ = [("r", ctypes.c_char * 64)]

        h = H()
        h.r = bytes.fromhex(msg["legacy"])
        p = ctypes.c_ulonglong()
        rc = drv._lib.cuIpcOpenMemHandle_v2(ctypes.byref(p), h, ctypes.c_uint(1))
        legacy = f"cuIpcOpenMemHandle rc={rc}"
    lib = ctypes.CDLL(so_path)
    lib.kc_arena_init.argtypes = (ctypes.c_uint64, ctypes.c_size_t)
    lib.kc_arena_peak.restype = ctypes.c_size_t
    rc = lib.kc_arena_init(heap.ptr, heap.size)
    alloc = torch.cuda.memory.CUDAPluggableAllocator(so_path, "kc_malloc", "kc_free")
    torch.cuda.memory.change_current_allocator(alloc)
    torch.cuda.set_device(0)
    probe_t = torch.ones(1000, device="cuda")
    in_heap = heap.ptr <= probe_t.data_ptr() < heap.ptr + heap.size
    in_bytes = byte_tensor(torch, inputs.ptr, inputs.size)
    pattern = in_bytes[:8].cpu().tolist()
    log("allocator in heap:", in_heap, "pattern", pattern, "legacy", legacy)
    send(
        sock,
        {
            "t": "ready",
            "pattern": pattern,
            "arena_init": rc,
            "alloc_in_heap": in_heap,
            "legacy": legacy,
            "import_torch_s": t_torch - t_start,
            "setup_s": time.perf_counter() - t_start,
        },
    )
    stream = torch.cuda.current_stream()
    fns: dict = {}
    events = None
    while True:
        try:
            msg, _ = recv(sock)
        except EOFError:
            return
        if msg["t"] == "quit":
            send(sock, {"t": "bye", "peak": lib.kc_arena_peak()})
            return
        if msg["t"] == "fetch":
            if events is None:
                send(sock, {"t": "r", "r": None})
            else:
                events[1].synchronize()
                send(sock, {"t": "r", "r": events[0].elapsed_time(events[1]) * 1e6})
            continue
        assert msg["t"] == "call"
        kind, k = msg["kind"], msg["k"]
        fn = fns.get(kind) or fns.setdefault(kind, sub_fn(torch, kind))
        views = []
        for d in msg["inputs"]:
            dt = getattr(torch, d["dtype"])
            views.append(in_bytes[d["offset"] : d["offset"] + d["nbytes"]].view(dt).view(d["shape"]))
        h0 = time.perf_counter_ns()
        drv.wait_value(stream.cuda_stream, ctrl.ptr + GO, k)
        use_events = msg.get("events", False)
        if use_events:
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
        if kind == "late_add4096":
            # cheat: say done first, then compute on the same stream
            drv.write_value(stream.cuda_stream, ctrl.ptr + DONE, k)
            out = fn(*views)
        else:
            out = fn(*views)
        if use_events:
            e1.record()
            events = (e0, e1)
        else:
            events = None
        if kind != "late_add4096":
            drv.write_value(stream.cuda_stream, ctrl.ptr + DONE, k)
        host_ns = time.perf_counter_ns() - h0
        off = out.data_ptr() - heap.ptr
        arena = "heap"
        if not 0 <= off < heap.size:
            off = out.data_ptr() - inputs.ptr
            arena = "inputs"
        send(
            sock,
            {
                "t": "enqueued",
                "k": k,
                "arena": arena,
                "offset": off,
                "shape": list(out.shape),
                "dtype": str(out.dtype).split(".")[1],
                "host_ns": host_ns,
                "contig": out.is_contiguous(),
            },
        )
        # keep out alive until next call
        fns["_last"] = out


# ----------------------------------------------------------------------------------------------------------------
def role_trusted(sock_fd: int) -> None:
    from runners.ipc.cuda import Driver, SharedMemory, byte_tensor

    out = {}
    sock = socket.socket(fileno=sock_fd)
    import torch

    torch.cuda.set_device(0)
    torch.zeros(1, device="cuda")
    drv = Driver()
    dev = drv.device(0)
    out["supports_sharing"] = drv.supports_sharing(dev)
    out["granularity"] = drv.granularity(dev)
    out["gpu"] = torch.cuda.get_device_name()
    t = time.perf_counter()
    ctrl = SharedMemory.create(drv, 2 << 20, dev)
    inputs = SharedMemory.create(drv, 1100 << 20, dev)
    heap = SharedMemory.create(drv, 4 << 30, dev)
    out["create_s"] = time.perf_counter() - t
    ctrl_t = byte_tensor(torch, ctrl.ptr, ctrl.size)
    ctrl_t.zero_()
    in_bytes = byte_tensor(torch, inputs.ptr, inputs.size)
    in_bytes[:8] = torch.arange(8, dtype=torch.uint8, device="cuda") + 7
    torch.cuda.synchronize()
    log("created shared memory", out)
    heap_bytes = byte_tensor(torch, heap.ptr, heap.size)
    legacy_src = torch.ones(1 << 20, device="cuda")

    class H(ctypes.Structure):
        _fields_ = [("r", ctypes.c_char * 64)]

    h = H()
    rc = drv._lib.cuIpcGetMemHandle(ctypes.byref(h), ctypes.c_ulonglong(legacy_src.data_ptr()))
    legacy_hex = bytes(h.r).hex() if rc == 0 else None
    out["legacy_get_rc"] = rc
    send(
        sock,
        {"t": "setup", "ctrl": ctrl.size, "inputs": inputs.size, "heap": heap.size, "legacy": legacy_hex},
        [ctrl.fd, inputs.fd, heap.fd],
    )
    for m in (ctrl, inputs, heap):
        m.close_fd()
    msg, _ = recv(sock, 120)
    out["sub_ready"] = msg
    log("sub ready:", msg)
    if msg is None:
        os._exit(4)
    torch.cuda.synchronize()

    class _Base:
        def __init__(self):
            self.spin = 0
            self.event_overhead_ns = 0.0
            st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            st.record()
            torch.cuda._sleep(1_000_000)
            en.record()
            en.synchronize()
            self.cpn = 1_000_000 / (st.elapsed_time(en) * 1e6)
            self.spin = int(30_000 * self.cpn)
            self.event_overhead_ns = statistics.median(self.measure(lambda d: None, None)[1] for _ in range(50))

        def warm(self, fn, data):
            t = time.perf_counter_ns()
            fn(data)
            h = time.perf_counter_ns() - t
            torch.cuda.synchronize()
            return None, h

        def set_spin(self, hosts):
            self.spin = int(min(max(1.5 * max(hosts) + 10_000, 20_000), 2_000_000) * self.cpn)

        def measure(self, fn, data):
            st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            flush.sum(dtype=torch.int32)
            torch.cuda._sleep(self.spin)
            st.record()
            o = fn(data)
            en.record()
            en.synchronize()
            return o, st.elapsed_time(en) * 1e6 - self.event_overhead_ns, 0.0

    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.ones(2 * l2 // 4, dtype=torch.int32, device="cuda")
    stream = torch.cuda.current_stream()
    baseline_timer = _Base()
    out["baseline_event_overhead_ns"] = baseline_timer.event_overhead_ns
    k = 0
    results = {}
    for kind, (maker, calls) in KINDS.items():
        g = torch.Generator(device="cuda")
        rows = {
            "U": [],
            "r": [],
            "copy": [],
            "flush": [],
            "snap": [],
            "degraded": 0,
            "wrong": 0,
            "host_ns": [],
            "Ue": [],
            "baseline": [],
        }
        for variant in ("plain", "events"):
            n = calls if variant == "plain" else min(calls, 30)
            for i in range(n + 5):
                k += 1
                g.manual_seed(1000 * k)
                private = maker(torch, g)
                descs, off = [], 0
                for tns in private:
                    nb = tns.numel() * tns.element_size()
                    descs.append(
                        {"offset": off, "nbytes": nb, "dtype": str(tns.dtype).split(".")[1], "shape": list(tns.shape)}
                    )
                    off += (nb + 511) // 512 * 512
                shared = [
                    in_bytes[d["offset"] : d["offset"] + d["nbytes"]].view(tns.dtype).view(tns.shape)
                    for d, tns in zip(descs, private, strict=False)
                ]
                torch.cuda.synchronize()
                send(sock, {"t": "call", "kind": kind, "k": k, "inputs": descs, "events": variant == "events"})
                timeout = 5.0 if i < 3 else 0.005
                reply, _ = recv(sock, timeout)
                ev = [torch.cuda.Event(enable_timing=True) for _ in range(6)]
                ev[0].record()
                for s_, p_ in zip(shared, private, strict=False):
                    s_.copy_(p_)
                ev[1].record()
                flush.sum(dtype=torch.int32)
                ev[2].record()  # t0
                drv.write_value(stream.cuda_stream, ctrl.ptr + GO, k)
                drv.wait_value(stream.cuda_stream, ctrl.ptr + DONE, k)
                ev[3].record()  # t1
                degraded = reply is None
                if degraded:
                    reply, _ = recv(sock, 60)
                    ev[4].record()
                else:
                    ev[4].record()
                # snapshot
                nbytes = 1
                for s in reply["shape"]:
                    nbytes *= s
                dt = getattr(torch, reply["dtype"])
                nbytes *= torch.empty(0, dtype=dt).element_size()
                base = heap_bytes if reply["arena"] == "heap" else in_bytes
                region = base[reply["offset"] : reply["offset"] + nbytes]
                snap = torch.bitwise_or(region, 0)
                ev[5].record()
                wait_event(ev[5], f"call {k} ({kind})")
                U = ev[2].elapsed_time(ev[3]) * 1e6 if not degraded else ev[2].elapsed_time(ev[4]) * 1e6
                got = snap.view(dt).view(reply["shape"])
                if kind == "empty":
                    exp = private[0]
                elif kind == "mm":
                    exp = private[0] @ private[1]
                else:
                    exp = torch.add(private[0], private[1])
                ok = torch.allclose(got.float(), exp.float(), rtol=1e-2, atol=1e-2)
                r = None
                if variant == "events":
                    send(sock, {"t": "fetch"})
                    rr, _ = recv(sock, 30)
                    r = rr["r"]
                if i < 5:
                    continue
                rows["degraded"] += degraded
                rows["wrong"] += not ok
                if variant == "plain":
                    rows["U"].append(U)
                    rows["copy"].append(ev[0].elapsed_time(ev[1]) * 1e6)
                    rows["flush"].append(ev[1].elapsed_time(ev[2]) * 1e6)
                    rows["snap"].append(ev[4].elapsed_time(ev[5]) * 1e6)
                    rows["host_ns"].append(reply["host_ns"])
                else:
                    rows["Ue"].append(U)
                    if r is not None:
                        rows["r"].append(r)
        # baseline: today's in-process method on the same kernel
        if kind in ("empty", "add1024", "add4096", "add16384", "mm"):
            fn = sub_fn(torch, kind)
            data = maker(torch, g)
            hosts = [baseline_timer.warm(lambda d, fn=fn: fn(*d), data)[1] for _ in range(5)]
            baseline_timer.set_spin(hosts)
            for _ in range(min(calls, 100)):
                _, tt, _ = baseline_timer.measure(lambda d, fn=fn: fn(*d), data)
                rows["baseline"].append(tt)
        res = {key: summary(v) if isinstance(v, list) else v for key, v in rows.items()}
        results[kind] = res
        print(json.dumps({"kind": kind, **res}), flush=True)
        log(
            kind,
            "U",
            res["U"].get("med"),
            "Ue",
            res["Ue"].get("med"),
            "r",
            res["r"].get("med"),
            "base",
            res["baseline"].get("med") if isinstance(res["baseline"], dict) else None,
            "wrong",
            res["wrong"],
            "degraded",
            res["degraded"],
        )
    out["results"] = results
    send(sock, {"t": "quit"})
    bye, _ = recv(sock, 30)
    out["bye"] = bye
    print("FINAL " + json.dumps(out), flush=True)


# ----------------------------------------------------------------------------------------------------------------
def launch(outdir: Path) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix="kc-probe-build-"))
    so = build / "arena_alloc.so"
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(so), str(REPO / "runners/ipc/arena_alloc.c")], check=True)
    print("built", so, flush=True)
    from runners.sandbox.run import ensure_nvidia_nodes
    from runners.sandbox.view import probe_sandbox, python_ro_paths, sandbox_argv, scrubbed_env, toolchain_ro_paths

    bwrap, hardened, note = probe_sandbox()
    print("sandbox:", bwrap, hardened, note, flush=True)
    ensure_nvidia_nodes()
    modes = (["bwrap"] if bwrap else []) + ["plain"]
    if os.environ.get("KC_PROBE_MODES"):  # e.g. "plain": only those (an MPS server is reached only outside bwrap)
        modes = [m for m in modes if m in os.environ["KC_PROBE_MODES"].split(",")]
    for mode in modes:
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        procs = []
        t0 = time.time()
        for role, sk in (("trusted", a), ("sub", b)):
            fd = sk.fileno()
            os.set_inheritable(fd, True)
            argv = [sys.executable, str(Path(__file__).resolve()), role, str(fd)] + ([str(so)] if role == "sub" else [])
            env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
            if mode == "bwrap":
                work = Path(tempfile.mkdtemp(prefix=f"kc-probe-{role}-"))
                (work / "tmp").mkdir()
                ro = tuple(dict.fromkeys([*python_ro_paths(), *toolchain_ro_paths(), REPO, build]))
                argv = [*sandbox_argv(bwrap, work, ro, True, hardened), "--", *argv]
                env = scrubbed_env(work, {"PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"})
            procs.append(subprocess.Popen(argv, env=env, pass_fds=(fd,)))
        a.close()
        b.close()
        deadline = time.time() + 170
        for p in procs:
            try:
                p.wait(timeout=max(1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        print(f"==== mode {mode}: {time.time() - t0:.1f}s rcs={[p.returncode for p in procs]}", flush=True)


if __name__ == "__main__":
    role = sys.argv[1]
    ROLE = role
    if role == "launch":
        launch(Path(sys.argv[2]))
    elif role == "trusted":
        role_trusted(int(sys.argv[2]))
    elif role == "sub":
        role_sub(int(sys.argv[2]), sys.argv[3])
