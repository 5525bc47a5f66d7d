"""The submission of the exploit battery (``leaderboards.battery``): a generic bad solution for each call.

This file is not imported by kernelcup: ``leaderboards.battery`` sends its text as the submission of a test-mode run
of the problem on the CPU, with ``PLAN`` and ``FILES`` appended, so the trusted evaluator checks each bad answer with
the problem's own ``check_implementation`` in the sandbox, exactly as it checks a competitor's. The evaluator calls
``custom_kernel`` once per test case, in order; ``PLAN[k]`` is the bad solution of the k-th call (its case and item).

A bad answer that equals the reference's own (the first row broadcast of a one-row output, a precision the inputs
are already at) proves nothing; such calls print ``kernelcup-battery <k> same`` and the battery does not count them.
Lint observations go out the same way: ``uniform <i>`` (input i's rows are all equal), ``seedless <i>`` (integer
input i is the same for the next seed), and ``kernelcup-battery-light <i> <bytes> <flops>``: benchmark case i's
``speed_of_light``; ``kernelcup-battery-work <j> <bytes> <dtype:flops,...> <light bytes> <light flops> <b|t><i>``:
what the reference (j = 0) and the task's other baselines (j = 1, 2, ...: ``BASELINES``) read, write and compute,
operator by operator, on benchmark case i (with fake tensors: shapes, no data) or test case i, for the weak-reference
lint.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry

PLAN: list[dict[str, Any]] = []
"""One entry per call: {"case": the case, "item": the bad solution}; ``leaderboards.battery`` appends the run's."""
FILES: dict[str, str] = {}
"""The problem's Python files (reference.py, ``_lib/*``); ``leaderboards.battery`` appends the problem's."""
BENCHMARKS: list[dict[str, Any]] = []
"""The problem's benchmark cases (never run here: their ``speed_of_light`` goes to the lint)."""

BASELINES: list[str] = []
"""The functions of reference.py named by the task's ``baselines:`` (after ref_kernel), for the weak-reference lint."""
TESTS: list[dict[str, Any]] = []
"""The problem's test cases (the weak-reference lint measures the reference on the largest)."""

_calls = itertools.count()
_reference: Any = None

_MANTISSA = {torch.float32: 23, torch.float16: 10, torch.bfloat16: 7}
_RUNGS = {"tf32": 10, "fp16": 10, "bf16": 7, "fp8": 3}
"""Mantissa bits of each lower precision."""
_BELOW = {torch.float32: ("tf32", "fp16", "bf16"), torch.float16: ("bf16",), torch.bfloat16: ("fp8",)}
"""The lower precisions tried for a problem whose widest floating-point input has that dtype."""
ROUGH_SHARE = 1 / 16
"""The rough answer: the reference's plus this share of its root-mean-square, with alternating signs."""


def next_seed(seed: int) -> int:
    """Another seed for the case: the next one, within the 0 .. 2**31 - 1 that every seeding API takes (the reference
    check made sure the generator takes those)."""
    return seed + 1 if seed < 2**31 - 1 else seed - 1


def reference() -> Any:
    global _reference
    if _reference is None:
        folder = Path(tempfile.mkdtemp(prefix="battery-"))
        for rel, text in FILES.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text)
        sys.path.insert(0, str(folder))  # beside reference.py: its _lib
        spec = importlib.util.spec_from_file_location("battery_reference", folder / "reference.py")
        assert spec is not None and spec.loader is not None
        _reference = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_reference)
    return _reference


def clone(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, list | tuple):
        return type(value)(clone(v) for v in value)
    return value


def tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [t for v in value for t in tensors(v)]
    return []


def scalars(value: Any) -> list[float]:
    if isinstance(value, bool | int | float):
        return [value]
    if isinstance(value, list | tuple):
        return [s for v in value for s in scalars(v)]
    return []


def like(ref: Any, tensor: Any, scalar: Any) -> Any:
    """``ref``'s structure with each tensor ``tensor(t)`` and each number ``scalar(x)``."""
    if isinstance(ref, torch.Tensor):
        return tensor(ref)
    if isinstance(ref, bool | int | float):
        return type(ref)(scalar(ref))
    if isinstance(ref, list | tuple):
        return type(ref)(like(v, tensor, scalar) for v in ref)
    return ref


def same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (
            isinstance(a, torch.Tensor)
            and isinstance(b, torch.Tensor)
            and a.shape == b.shape
            and a.dtype == b.dtype
            and bool(torch.equal(a, b))
        )
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def constant(ref: Any) -> Any:
    values = [t.double().mean() for t in tensors(ref) if t.numel()] + [float(s) for s in scalars(ref)]
    mean = float(sum(values) / len(values)) if values else 0.0
    return like(
        ref,
        lambda t: torch.full_like(t, mean if t.is_floating_point() else round(mean)),
        lambda x: mean if isinstance(x, float) else round(mean),
    )


def passed_through(data: Any, ref: Any) -> Any:
    """The first input, cast and cut (or repeated) to the output's shape."""
    inputs = [t for t in tensors(data) if t.numel()]
    numbers = iter(scalars(data) or [0])

    def tensor(t: torch.Tensor) -> torch.Tensor:
        if not inputs:
            return torch.zeros_like(t)
        flat = inputs[0].reshape(-1).to(t.dtype)
        return flat.repeat(-(-t.numel() // flat.numel()))[: t.numel()].reshape(t.shape).to(t.device)

    return like(ref, tensor, lambda x: next(numbers, x))


def first_row(ref: Any) -> Any:
    if isinstance(ref, list) and ref and all(isinstance(x, bool | int | float) for x in ref):
        return [ref[0]] * len(ref)
    return like(ref, lambda t: t[:1].expand_as(t).clone() if t.dim() and len(t) else t.clone(), lambda x: x)


def rough(ref: Any) -> Any:
    def tensor(t: torch.Tensor) -> torch.Tensor:
        if not t.is_floating_point() or not t.numel():
            return t.clone()
        rms = t.double().square().mean().sqrt()
        signs = (torch.arange(t.numel(), device=t.device) % 2 * 2 - 1).reshape(t.shape)
        return (t.double() + ROUGH_SHARE * rms * signs).to(t.dtype)

    return like(ref, tensor, lambda x: x)


def round_to(t: torch.Tensor, rung: str) -> torch.Tensor:
    """``t`` rounded to the lower precision ``rung`` and back to its dtype (fp8: e4m3 with a per-tensor scale, as fp8
    kernels scale; TF32: fp32 rounded to 10 mantissa bits, to nearest even)."""
    if rung == "tf32":
        bits = t.float().view(torch.int32)
        bits = (bits + 0xFFF + ((bits >> 13) & 1)) & ~0x1FFF
        return bits.view(torch.float32).to(t.dtype)
    if rung == "fp8":
        if not t.numel():  # an empty tensor (a KV cache of no past tokens) has no scale and nothing to round
            return t.clone()
        scale = t.abs().amax().float().clamp(min=1e-30) / 448
        return ((t.float() / scale).to(torch.float8_e4m3fn).float() * scale).to(t.dtype)
    return t.to({"fp16": torch.float16, "bf16": torch.bfloat16}[rung]).to(t.dtype)


def lower_precision(data: Any, rung: str) -> Any:
    """``data`` with its floating-point tensors of the widest dtype rounded to ``rung`` (None where ``rung`` is no
    lower precision for them)."""
    widest = max((t.dtype for t in tensors(data) if t.dtype in _MANTISSA), key=_MANTISSA.__getitem__, default=None)
    if widest is None or rung not in _BELOW[widest]:
        return None

    def rounded(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return round_to(value, rung) if value.dtype == widest else value.clone()
        if isinstance(value, list | tuple):
            return type(value)(rounded(v) for v in value)
        return value

    return rounded(data)


def observe(k: int, case: dict[str, Any], data: Any) -> None:
    """Lint: inputs whose rows are all alike, integer inputs that do not change with the seed."""
    for i, t in enumerate(tensors(data)):
        if t.dim() >= 2 and len(t) >= 2 and t.numel() and bool((t == t[:1]).all()):
            print(f"kernelcup-battery {k} uniform {i}")
    if "seed" in case:
        other = tensors(reference().generate_input(**{**case, "seed": next_seed(case["seed"])}))
        for i, (a, b) in enumerate(zip(tensors(data), other, strict=False)):
            if not a.is_floating_point() and not a.is_complex() and a.numel() > 1 and same(a, b):
                print(f"kernelcup-battery {k} seedless {i}")


def answer(item: str, case: dict[str, Any], data: Any, ref: Any) -> Any:
    """The bad solution ``item``'s answer (None where it does not apply)."""
    module = reference()
    if item == "zeros":
        return like(ref, torch.zeros_like, lambda x: 0)
    if item == "ones":
        return like(ref, torch.ones_like, lambda x: 1)
    if item == "constant":
        return constant(ref)
    if item == "input":
        return passed_through(data, ref)
    if item == "other_seed":
        return module.ref_kernel(module.generate_input(**{**case, "seed": next_seed(case["seed"])}))
    if item == "first_row":
        return first_row(ref)
    if item == "rough":
        return rough(ref)
    rounded = lower_precision(data, item)
    return None if rounded is None else module.ref_kernel(rounded)


def report_speed_of_light() -> None:
    """Lint: each benchmark case's ``speed_of_light`` (bytes, flops), for the launch-bound floor."""
    function = getattr(reference(), "speed_of_light", None)
    if not callable(function):
        return
    for i, case in enumerate(BENCHMARKS):
        light = function(**case)
        print(f"kernelcup-battery-light {i} {int(light.get('bytes', 0))} {int(light.get('flops', 0))}")


class _Work(TorchDispatchMode):
    """Counts what the operators run under it read and write (the distinct tensors each takes and returns; views and
    allocations move nothing) and their flops by the dtype they compute in (torch's flop formulas)."""

    def __init__(self) -> None:
        super().__init__()
        self.bytes = 0
        self.flops: dict[str, int] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func.is_view or func in _FREE or func.namespace != "aten":  # prim.device and the like move nothing
            return out
        seen = {id(t): _nbytes(t) for t in [*tensors(list(args)), *tensors(list(kwargs.values())), *tensors(out)]}
        self.bytes += sum(seen.values())
        formula = flop_registry.get(_SAME_FLOPS.get(func.overloadpacket, func.overloadpacket))
        operands = tensors(list(args))
        if formula is not None and operands:
            dtype = str(operands[0].dtype).removeprefix("torch.")
            self.flops[dtype] = self.flops.get(dtype, 0) + int(formula(*args, out_val=out, **kwargs))
        return out


_FREE = frozenset({torch.ops.aten.detach.default, torch.ops.aten.lift_fresh.default, torch.ops.aten.empty.memory_format,
                   torch.ops.aten.empty_like.default, torch.ops.aten.empty_strided.default})  # fmt: skip
"""Operators that move no data."""
_SAME_FLOPS = {
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: torch.ops.aten._scaled_dot_product_flash_attention
}
"""CPU operators counted with the flop formula of their GPU twin."""


def _nbytes(t: torch.Tensor) -> int:
    """The bytes a tensor occupies: an expanded view (a weight broadcast over a batch) reads its storage once."""
    size = t.numel() * t.element_size()
    try:
        return min(size, t.untyped_storage().nbytes())
    except (NotImplementedError, RuntimeError):  # a tensor without a storage of its own
        return size


def _work(function: Any, case: dict[str, Any], fake: bool) -> _Work | None:
    """What ``function`` (ref_kernel or a baseline) reads, writes and computes on ``case``'s inputs: with fake tensors
    (shapes only, no data, no time: a benchmark case) or real ones; None where it cannot run here."""
    module = reference()
    try:  # made before the timer starts: its first construction imports torch._dynamo (and sympy), which an
        mode = FakeTensorMode() if fake else contextlib.nullcontext()  # alarm must not cut in half
    except Exception:
        return None
    timed = signal.getitimer(signal.ITIMER_REAL)[0] == 0  # never displace a timer the evaluator set
    previous = signal.signal(signal.SIGALRM, _too_long) if timed else None
    if timed:
        signal.setitimer(signal.ITIMER_REAL, WORK_SECONDS)
    try:
        with mode:
            data = module.generate_input(**case)
            with _Work() as work:
                function(data)
    except Exception:  # a shape that depends on the data (fake), a GPU library call, too long: not measured this way
        return None
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    return work


WORK_SECONDS = 20.0
"""How long one count may take: with fake tensors it costs no arithmetic, but a generate_input that loops in Python
over a benchmark's elements would still take that long (the count then falls back to a test case, or is left out)."""


class _TooLong(Exception):
    pass


def _too_long(signum: int, frame: Any) -> None:
    raise _TooLong(f"counting the reference's work took over {WORK_SECONDS:.0f} s")


def report_reference_work() -> None:
    """Lint: the bytes and flops of ref_kernel and each baseline function, on the largest benchmark case (by
    ``speed_of_light``, with fake tensors) or, where that cannot run with fake tensors, on the largest test case."""
    module = reference()
    function = getattr(module, "speed_of_light", None)
    if not callable(function):
        return
    for j, name in enumerate(["ref_kernel", *BASELINES]):
        baseline = getattr(module, name, None)
        if not callable(baseline):
            continue
        for kind, cases, fake in (("b", BENCHMARKS, True), ("t", TESTS, False)):
            if not cases:
                continue
            lights = [function(**case) for case in cases]
            index = max(
                range(len(cases)), key=lambda i: (int(lights[i].get("bytes", 0)), int(lights[i].get("flops", 0)))
            )
            work = _work(baseline, cases[index], fake)
            if work is None:
                continue
            flops = ",".join(f"{d}:{n}" for d, n in sorted(work.flops.items())) or "-"
            light = lights[index]
            print(f"kernelcup-battery-work {j} {work.bytes} {flops} {int(light.get('bytes', 0))} "
                  f"{int(light.get('flops', 0))} {kind}{index}")  # fmt: skip
            break


def custom_kernel(data: Any) -> Any:
    k = next(_calls)
    if k == 0:
        report_speed_of_light()
        report_reference_work()
    case, item = PLAN[k]["case"], PLAN[k]["item"]
    ref = reference().ref_kernel(clone(data))
    if item == "zeros":  # once per case: the lint looks at its inputs
        observe(k, case, data)
    bad = answer(item, case, clone(data), ref)
    if bad is None or same(bad, ref):
        print(f"kernelcup-battery {k} same", flush=True)
        return ref
    sys.stdout.flush()
    return bad
