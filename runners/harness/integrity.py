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

import sys
import threading
import types
from collections.abc import Iterable
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


class Snapshot:
    """Identities of attributes (and code objects) of watched namespaces, taken before the submission runs."""

    def __init__(self, namespaces: dict[str, object]) -> None:
        self._namespaces = dict(namespaces)
        self._objects = list(namespaces.values())  # keep them alive so ids stay meaningful
        self._taken = {label: _entries(ns) for label, ns in namespaces.items()}
        self._threads = {t.ident for t in threading.enumerate()}

    def verify(self) -> None:
        """Raise TamperError naming the first changed attribute, or a Python thread the submission left running."""
        for label, ns in self._namespaces.items():
            now = _entries(ns)
            before = self._taken[label]
            changed = sorted(k for k in before if now.get(k) != before[k])  # additions (lazy imports) are fine
            if changed:
                raise TamperError(f"the submission modified {label}.{changed[0]} (harness, timer or checker code)")
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
