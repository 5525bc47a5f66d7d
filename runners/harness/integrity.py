"""In-process tamper checks, run in the evaluation process around every submission call.

The submission shares the process with the harness, so it could replace the timer, the checker or
PyTorch functions the checker uses. Before the submission is imported we take a snapshot of the
identity of every attribute (and every function's code object) in the namespaces that decide a
score; after the import and after each call we compare. Any change rejects the run. We also reject
Python threads left running (work hidden from the timer, or code that rewrites an output after it
was returned), tensor subclasses and ``__torch_function__`` objects in outputs (lazy tensors that
compute inside the checker), and active torch function/dispatch modes (which would intercept the
checker's operations). See docs/anti-cheat.md for what an adversary using ctypes can still do.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import threading
import types
from collections.abc import Iterable, Iterator
from typing import Any


class TamperError(Exception):
    """The submission changed something the harness relies on; the message says what."""


def _entries(ns: object) -> dict[str, tuple[int, int | None]]:
    try:
        items = list(vars(ns).items())
    except TypeError:
        return {}
    out = {}
    for name, value in items:
        # Plain values (flags such as torch.cuda._initialized) change legitimately; callables must not.
        if not (callable(value) or isinstance(value, types.ModuleType | classmethod | staticmethod | property)):
            continue
        code = getattr(value, "__code__", None)
        if isinstance(value, classmethod | staticmethod):
            code = getattr(value.__func__, "__code__", None)
        out[name] = (id(value), id(code) if code is not None else None)
    return out


def _instance_entries(obj: object, mutable: frozenset[str]) -> dict[str, int]:
    """Identity of every attribute of a harness object (its checker, timer, settings), except the listed ones."""
    return {k: id(v) for k, v in vars(obj).items() if k not in mutable}


def _hooks() -> dict[str, object]:
    """Interpreter hooks through which code could run inside the harness's own checks and timing."""
    hooks: dict[str, object] = {
        "sys.settrace": sys.gettrace(),
        "sys.setprofile": sys.getprofile(),
        "threading.settrace": getattr(threading, "_trace_hook", None),
        "threading.setprofile": getattr(threading, "_profile_hook", None),
        "gc.callbacks": tuple(id(c) for c in gc.callbacks),
        "sys.excepthook": id(sys.excepthook),
        "sys.unraisablehook": id(sys.unraisablehook),
    }
    monitoring = getattr(sys, "monitoring", None)  # Python 3.12+
    if monitoring is not None:
        hooks["sys.monitoring"] = tuple(monitoring.get_tool(i) for i in range(6))
    return hooks


class Snapshot:
    """Identities of attributes (and code objects) of watched namespaces, taken before the submission runs.

    ``instances`` are harness objects (the evaluation, its timer) whose attributes must keep their identity:
    a submission that finds them through ``gc`` and swaps the checker or the timer is caught. Interpreter
    hooks (trace, profile, ``gc.callbacks``, ``sys.monitoring``) would run submission code in the middle of
    a check, so any hook installed by the submission rejects the run too.
    """

    def __init__(
        self, namespaces: dict[str, object], instances: dict[str, tuple[object, frozenset[str]]] | None = None
    ) -> None:
        self._namespaces = dict(namespaces)
        self._objects = list(namespaces.values())  # keep them alive so ids stay meaningful
        self._taken = {label: _entries(ns) for label, ns in namespaces.items()}
        self._instances = dict(instances or {})
        self.seal()
        self._hooks = _hooks()
        self._threads = {t.ident for t in threading.enumerate()}

    def seal(self) -> None:
        """(Re)take the identities of the harness objects' attributes; called once they are all set."""
        self._instance_taken = {label: _instance_entries(o, m) for label, (o, m) in self._instances.items()}

    def verify(self) -> None:
        """Raise TamperError naming the first changed attribute, or a Python thread the submission left running."""
        for label, ns in self._namespaces.items():
            now = _entries(ns)
            before = self._taken[label]
            changed = [k for k in before if now.get(k) != before[k]]
            if isinstance(ns, type):  # a method added to a class shadows the one its base class had
                changed += [k for k in now if k not in before]
            # (additions to a module are fine: lazy imports add attributes)
            if changed:
                raise TamperError(
                    f"the submission modified {label}.{sorted(changed)[0]} (harness, timer or checker code)"
                )
        for label, (obj, mutable) in self._instances.items():
            now_i = _instance_entries(obj, mutable)
            before_i = self._instance_taken[label]
            changed = sorted(k for k in before_i.keys() | now_i.keys() if now_i.get(k) != before_i.get(k))
            if changed:
                raise TamperError(f"the submission modified the harness's {label}.{changed[0]}")
        hooks = _hooks()
        for name, value in self._hooks.items():
            if hooks.get(name) != value:
                raise TamperError(f"the submission installed a hook ({name}) that would run inside the harness")
        extra = [t for t in threading.enumerate() if t.ident not in self._threads and t.is_alive()]
        if extra:
            raise TamperError(
                f"the submission left a Python thread running ({extra[0].name!r}); work must finish before "
                "custom_kernel returns"
            )


def watched_namespaces(torch: Any, extra: dict[str, object]) -> dict[str, object]:
    """The namespaces whose attributes decide a score: torch's functions, Tensor, CUDA events, ours, the reference."""
    ns: dict[str, object] = {"torch": torch, "torch.Tensor": torch.Tensor, "torch._C._TensorBase": torch._C.TensorBase}
    for name in ("cuda", "testing", "nn.functional", "linalg", "special", "fft", "overrides", "random"):
        mod: Any = torch
        try:
            for part in name.split("."):
                mod = getattr(mod, part)
        except AttributeError:
            continue
        ns[f"torch.{name}"] = mod
    if hasattr(torch, "cuda"):
        ns["torch.cuda.Event"] = torch.cuda.Event
        ns["torch.cuda.Stream"] = torch.cuda.Stream
    for name in ("time", "math", "json", "os", "hmac", "hashlib", "builtins", "gc", "threading"):
        if name in sys.modules:
            ns[name] = sys.modules[name]
    for name, module in list(sys.modules.items()):
        if name.startswith("runners.") and isinstance(module, types.ModuleType):
            ns[name] = module
            for attr in vars(module).values():
                if isinstance(attr, type) and attr.__module__ == name:
                    ns[f"{name}.{attr.__name__}"] = attr
    ns.update(extra)
    return ns


_NUMERIC_FLAGS = (
    (
        "cuda.matmul",
        (
            "allow_tf32",
            "allow_fp16_reduced_precision_reduction",
            "allow_bf16_reduced_precision_reduction",
            "fp32_precision",
        ),
    ),
    ("cudnn", ("allow_tf32", "enabled", "deterministic", "benchmark", "fp32_precision")),
    ("mkldnn", ("fp32_precision",)),
)


def _backend(torch: Any, path: str) -> Any:
    obj = torch.backends
    for part in path.split("."):
        obj = getattr(obj, part, None)
    return obj


def numeric_state(torch: Any) -> dict[str, Any]:
    """Global numeric settings a reference's computation depends on (TF32, reduced-precision reductions, dtype)."""
    state: dict[str, Any] = {"default_dtype": torch.get_default_dtype()}
    with contextlib.suppress(Exception):
        state["float32_matmul_precision"] = torch.get_float32_matmul_precision()
    for path, names in _NUMERIC_FLAGS:
        backend = _backend(torch, path)
        for name in names:
            with contextlib.suppress(Exception):
                state[f"{path}.{name}"] = getattr(backend, name)
    state["deterministic_algorithms"] = torch.are_deterministic_algorithms_enabled()
    return state


def _apply_numeric_state(torch: Any, state: dict[str, Any]) -> None:
    """Set only what differs (PyTorch refuses to read a precision set through both its old and new APIs)."""
    order = sorted(state, key=lambda k: k != "float32_matmul_precision")  # the legacy switch first: it sets others
    for key in order:
        value = state[key]
        if numeric_state(torch).get(key) == value:
            continue
        with contextlib.suppress(Exception):
            if key == "default_dtype":
                torch.set_default_dtype(value)
            elif key == "float32_matmul_precision":
                torch.set_float32_matmul_precision(value)
            elif key == "deterministic_algorithms":
                torch.use_deterministic_algorithms(value)
            else:
                path, name = key.rsplit(".", 1)
                setattr(_backend(torch, path), name, value)


@contextlib.contextmanager
def pristine_numerics(torch: Any, pristine_items: Iterable[tuple[str, Any]]) -> Iterator[None]:
    """Run the reference and its check under the settings from before the submission was imported.

    A submission may switch on TF32 or a lower default precision for its own kernels; it must not lower the
    precision of the reference it is compared with. Its own settings are put back afterwards.
    """
    pristine = dict(pristine_items)
    theirs = numeric_state(torch)
    if theirs == pristine:
        yield
        return
    _apply_numeric_state(torch, pristine)
    try:
        yield
    finally:
        _apply_numeric_state(torch, theirs)


def modes_active(torch: Any) -> str | None:
    """A torch function or dispatch mode left active by the submission intercepts the checker's operations."""
    try:
        from torch.overrides import _get_current_function_mode_stack
        from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

        if _get_current_function_mode_stack():
            return "a torch function mode is active"
        if _get_current_dispatch_mode_stack():
            return "a torch dispatch mode is active"
    except ImportError:  # pragma: no cover - older torch
        return None
    return None


def check_output_types(torch: Any, value: object, depth: int = 0) -> None:
    """Reject tensor subclasses and objects that override torch functions anywhere in the output."""
    if depth > 8:
        raise TamperError("the output is nested too deeply")
    if isinstance(value, torch.Tensor):
        if type(value) is not torch.Tensor and type(value) is not torch.nn.Parameter:
            raise TamperError(
                f"custom_kernel returned a {type(value).__qualname__}, a subclass of torch.Tensor; "
                "return a plain tensor"
            )
        return
    if isinstance(value, list | tuple):
        _each(torch, value, depth)
        return
    if isinstance(value, dict):
        _each(torch, value.values(), depth)
        return
    if hasattr(type(value), "__torch_function__") or hasattr(type(value), "__torch_dispatch__"):
        raise TamperError(f"custom_kernel returned a {type(value).__qualname__} that overrides torch functions")


def _each(torch: Any, values: Iterable[object], depth: int) -> None:
    for v in values:
        check_output_types(torch, v, depth + 1)
