"""Shared memory between the trusted evaluator and the submission process, and values placed in it.

An *arena* is one block of memory both processes map: device memory exported as a file descriptor (CUDA, see
``runners.ipc.cuda``) or a ``memfd`` (host). The evaluator places each call's inputs in an input arena and the
submission process's CUDA allocations all come from a heap arena, so the evaluator reads the returned output where
the submission's kernels wrote it. Values cross the socket as :class:`~runners.ipc.protocol.Value` trees whose
tensors are (arena, offset, dtype, shape, stride) references; :func:`materialize` turns a tree back into tensors,
checking every reference against the arena's bounds.
"""

from __future__ import annotations

import ctypes
import fcntl
import mmap
import os
from dataclasses import dataclass, field
from typing import Any

from runners.ipc.protocol import Mapping, Scalar, Seq, TensorRef, Value, check_value_size

ALIGN = 512


class ArenaError(ValueError):
    """A value that cannot cross between the processes (a type we do not carry, a reference out of bounds)."""


@dataclass
class Arena:
    name: str
    kind: str
    size: int
    torch: Any
    base: int
    owner: Any = None
    """What keeps the memory mapped (a SharedMemory or an mmap)."""
    fd: int = -1
    device: str = "cpu"
    used: int = 0

    # ---- making and opening ----------------------------------------------------------------------------------
    @classmethod
    def create(cls, torch: Any, name: str, kind: str, size: int, driver: Any = None, device: int = 0) -> Arena:
        if kind == "cuda":
            from runners.ipc.cuda import SharedMemory

            mem = SharedMemory.create(driver, size, device)
            return cls(name, kind, mem.size, torch, mem.ptr, mem, mem.fd, f"cuda:{device}")
        size = max(ALIGN, -(-size // mmap.PAGESIZE) * mmap.PAGESIZE)
        fd = os.memfd_create(f"kernelcup-{name}", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(fd, size)
        # Sealed at its size: the other process keeps a descriptor (mmap holds a dup of the one it is sent), and a
        # memfd shrunk under our mapping kills us with SIGBUS at the next touch, the submission's doing reported as
        # the evaluator's crash (red team, 2026-11-25).
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        return cls._map_host(torch, name, size, fd, keep_fd=True)

    @classmethod
    def open(cls, torch: Any, name: str, kind: str, size: int, fd: int, driver: Any = None, device: int = 0,
             *, populate: bool = False) -> Arena:  # fmt: skip
        """Map an arena the other process made; ``fd`` is consumed. ``populate``: a host arena's pages are mapped at
        once (``MAP_POPULATE``), in one system call, rather than one fault at a time as they are first touched."""
        if kind == "cuda":
            from runners.ipc.cuda import SharedMemory

            # No tensor is made here: the submission process maps its arenas before PyTorch's CUDA allocator may be
            # touched (the heap arena becomes that allocator).
            mem = SharedMemory.open(driver, fd, size, device)
            return cls(name, kind, size, torch, mem.ptr, mem, -1, f"cuda:{device}")
        if os.fstat(fd).st_size < size:
            os.close(fd)
            raise ArenaError(f"the {name} arena is smaller than announced")
        return cls._map_host(torch, name, size, fd, keep_fd=False, populate=populate)

    @classmethod
    def _map_host(cls, torch: Any, name: str, size: int, fd: int, keep_fd: bool, populate: bool = False) -> Arena:
        flags = mmap.MAP_SHARED | (getattr(mmap, "MAP_POPULATE", 0) if populate else 0)
        mm = mmap.mmap(fd, size, flags, mmap.PROT_READ | mmap.PROT_WRITE)
        if not keep_fd:
            os.close(fd)
            fd = -1
        base = ctypes.addressof(ctypes.c_char.from_buffer(mm))
        return cls(name, "host", size, torch, base, mm, fd, "cpu")

    def close_fd(self) -> None:
        """Close the descriptor that was sent (the mapping stays)."""
        close_fd = getattr(self.owner, "close_fd", None)
        if close_fd is not None:  # CUDA: the shared memory object owns the descriptor
            close_fd()
        elif self.fd >= 0:
            os.close(self.fd)
        self.fd = -1

    # ---- placing ---------------------------------------------------------------------------------------------
    def take(self, nbytes: int) -> int:
        """Offset of ``nbytes`` fresh bytes (bump allocation; :meth:`reset` starts over)."""
        offset = self.used
        end = offset + aligned(nbytes)
        if end > self.size:
            raise MemoryError(f"the {self.name} arena ({self.size:,} bytes) is too small for {end:,} bytes")
        self.used = end
        return offset

    def reset(self) -> None:
        self.used = 0

    def view(self, torch: Any, ref: TensorRef) -> Any:
        """The tensor ``ref`` names, over this arena's memory (bounds and alignment checked). Its storage is exactly
        its own bytes, not the whole arena, so saving or resizing it never touches anything else."""
        dtype = getattr(torch, ref.dtype)
        if len(ref.shape) != len(ref.stride):
            raise ArenaError("a tensor reference's shape and stride differ in length")
        itemsize = torch.empty((), dtype=dtype).element_size()
        if any(s == 0 for s in ref.shape):
            return torch.empty(ref.shape, dtype=dtype, device=self.device)
        span = 1 + sum((s - 1) * st for s, st in zip(ref.shape, ref.stride, strict=True))
        end = ref.offset + span * itemsize
        if ref.offset % itemsize or end > self.size:
            raise ArenaError(f"a tensor reference points outside the {self.name} arena")
        return self.span(torch, ref.offset, span * itemsize).view(dtype).as_strided(ref.shape, ref.stride)

    def span(self, torch: Any, offset: int, nbytes: int) -> Any:
        """A uint8 tensor of its own over ``nbytes`` of this arena from ``offset``."""
        if self.kind == "cuda":
            from runners.ipc.cuda import byte_tensor

            return byte_tensor(torch, self.base + offset, nbytes, int(self.device.split(":")[1]))
        return torch.frombuffer(self.owner, dtype=torch.uint8, count=nbytes, offset=offset)

    def contains(self, ptr: int, nbytes: int) -> int | None:
        """Offset of ``[ptr, ptr + nbytes)`` in this arena, or None if it is not all inside."""
        offset = ptr - self.base
        return offset if offset >= 0 and offset + nbytes <= self.size else None


_FALLOC_PUNCH = 0x02 | 0x01
"""``FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE``."""


def release(arena: Arena) -> None:
    """Give a host arena's memory back now and close its descriptor, whoever else still maps it: its pages are
    freed (a hole punched over all of it: a mapping elsewhere then reads zeros, and the size, sealed, stays, so no
    one meets SIGBUS) and its mapping here goes when the last tensor over it does."""
    if arena.kind != "host":
        return
    if arena.fd >= 0:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.fallocate.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
        libc.fallocate(arena.fd, _FALLOC_PUNCH, 0, arena.size)  # (a failure leaves them to the last unmap)
        os.close(arena.fd)
        arena.fd = -1


def span_elements(shape: tuple[int, ...] | list[int], stride: tuple[int, ...] | list[int]) -> int:
    if any(s == 0 for s in shape):
        return 0
    return 1 + sum((s - 1) * st for s, st in zip(shape, stride, strict=True))


@dataclass
class Placement:
    """Where one call's inputs go: the value tree for the submission process and the copies that fill it."""

    value: Value
    copies: list[tuple[Any, Any]] = field(default_factory=list)
    """(shared view, private tensor) pairs: the evaluator copies each private tensor into its shared view."""


def place(torch: Any, data: Any, arenas: dict[str, Arena], *, cuda: str, host: str, reset: bool = True) -> Placement:
    """Lay ``data`` (what ``generate_input`` returned) out in the input arenas ``cuda`` / ``host`` (emptied first,
    unless ``reset`` is false: the next input set of a batch goes after the last one)."""
    for name in {cuda, host}:
        if reset and name in arenas:
            arenas[name].reset()
    copies: list[tuple[Any, Any]] = []

    def walk(v: Any, depth: int) -> Value:
        if depth > 8:
            raise ArenaError("the inputs are nested more than 8 levels deep")
        if isinstance(v, torch.Tensor):
            arena = arenas.get(cuda if v.is_cuda else host)
            if arena is None:
                raise ArenaError(f"an input tensor is on {v.device}, where this run has no shared memory")
            shape = list(v.shape)
            stride = list(v.stride())
            if span_elements(shape, stride) != v.numel() or v.numel() == 0:  # overlapping or empty: lay out densely
                stride = list(torch.empty(shape, dtype=v.dtype, device="meta").stride())
            ref = TensorRef(
                arena=arena.name,
                offset=arena.take(span_elements(shape, stride) * v.element_size()),
                dtype=str(v.dtype).removeprefix("torch."),
                shape=shape,
                stride=stride,
            )
            copies.append((arena.view(torch, ref), v))
            return ref
        if v is None or isinstance(v, bool | int | float | str):
            return Scalar(v=v)
        if isinstance(v, tuple | list):
            return Seq(t="tuple" if isinstance(v, tuple) else "list", items=[walk(x, depth + 1) for x in v])
        if isinstance(v, dict) and all(isinstance(k, str) for k in v):
            return Mapping(items={k: walk(x, depth + 1) for k, x in v.items()})
        raise ArenaError(
            f"a {type(v).__name__} cannot be passed to custom_kernel; inputs are tensors, numbers, strings, None "
            "and tuples, lists or dicts (with string keys) of them"
        )

    value = walk(data, 0)
    check_value_size(value)
    return Placement(value, copies)


def aligned(nbytes: int) -> int:
    """The bytes ``nbytes`` take in an arena: at least one, rounded up to ``ALIGN``."""
    return -(-max(nbytes, 1) // ALIGN) * ALIGN


class _Measure:
    """Stands in for an arena in :func:`check_inputs`: offsets, no memory."""

    def __init__(self, name: str) -> None:
        self.name, self.used = name, 0

    def reset(self) -> None:
        self.used = 0

    def take(self, nbytes: int) -> int:
        offset, self.used = self.used, self.used + aligned(nbytes)
        return offset

    def view(self, torch: Any, ref: TensorRef) -> None:
        return None


def check_inputs(torch: Any, data: Any) -> None:
    """Raise what :func:`place` would raise for ``data`` (types, nesting, the size of the value tree: ``ArenaError``
    or ``ValueError``), without any shared memory: a problem's inputs checked where no submission runs."""
    measures = {"cuda": _Measure("cuda"), "host": _Measure("host")}
    place(torch, data, measures, cuda="cuda", host="host")  # type: ignore[arg-type]


def materialize(torch: Any, value: Value, arenas: dict[str, Arena]) -> Any:
    """The Python value a tree describes, its tensors as views of the arenas (every reference checked)."""
    check_value_size(value)

    def walk(v: Value) -> Any:
        if isinstance(v, TensorRef):
            arena = arenas.get(v.arena)
            if arena is None:
                raise ArenaError(f"a tensor reference names an unknown arena {v.arena!r}")
            return arena.view(torch, v)
        if isinstance(v, Scalar):
            return v.v
        if isinstance(v, Seq):
            items = [walk(x) for x in v.items]
            return tuple(items) if v.t == "tuple" else items
        return {k: walk(x) for k, x in v.items.items()}

    return walk(value)


def tensor_refs(value: Value) -> list[TensorRef]:
    out: list[TensorRef] = []

    def walk(v: Value) -> None:
        if isinstance(v, TensorRef):
            out.append(v)
        elif isinstance(v, Seq):
            for x in v.items:
                walk(x)
        elif isinstance(v, Mapping):
            for x in v.items.values():
                walk(x)

    walk(value)
    return out
