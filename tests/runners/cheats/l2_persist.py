"""Cheat (GPU, red team 5, measurement): keep this call's inputs in L2 through the evaluator's flush. The flush is a
plain (normal-priority) read of a buffer twice the L2 (window.py, GpuWindow.call); lines a kernel marked
*persisting* (an access-policy window, with an L2 set-aside of cuCtxSetLimit(PERSISTING_L2_CACHE_SIZE)) are not
evicted by normal accesses while the set-aside holds them. The input arena is laid out the same way every call
(arena.place resets it), so marking the input arena's lines persisting once lets every later call's inputs, which
the evaluator's copy writes into those same lines, survive the flush: the kernel then reads L2, not DRAM, and its
(honest) reading is faster than a cold-L2 measurement should be. Nothing is forged; the gain is bounded by the
speed-of-light gate and is far below no_gain's 3x on vectoradd's small cases: compare the medians with an honest
run (redteam5/drive.py) to see whether the flush still flushes. Setup results go to stderr.
expect: no_gain
mode: benchmark
device: cuda
"""
import ctypes
import sys

import torch

from runners.submission import serve

_LIMIT_PERSISTING_L2 = 0x06  # CU_LIMIT_PERSISTING_L2_CACHE_SIZE
_ATTR_MAX_PERSISTING_L2 = 108  # CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE
_ATTR_MAX_WINDOW = 109  # CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE
_STREAM_ATTR_WINDOW = 1  # CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW
_PERSISTING, _STREAMING = 2, 1


class _Window(ctypes.Structure):  # CUaccessPolicyWindow
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t), ("hitRatio", ctypes.c_float),
                ("hitProp", ctypes.c_int), ("missProp", ctypes.c_int)]


class _AttrValue(ctypes.Union):  # CUstreamAttrValue (CUlaunchAttributeValue: 64 bytes)
    _fields_ = [("window", _Window), ("pad", ctypes.c_char * 64)]


_lib = ctypes.CDLL("libcuda.so.1") if torch.cuda.is_available() else None
_cuda = serve.SubmissionProcess.call_cuda
_st = {"window": None, "set": {}}


def _setup(proc):
    dev = ctypes.c_int()
    _lib.cuCtxGetDevice(ctypes.byref(dev))
    most, window = ctypes.c_int(), ctypes.c_int()
    _lib.cuDeviceGetAttribute(ctypes.byref(most), _ATTR_MAX_PERSISTING_L2, dev)
    _lib.cuDeviceGetAttribute(ctypes.byref(window), _ATTR_MAX_WINDOW, dev)
    rc = _lib.cuCtxSetLimit(_LIMIT_PERSISTING_L2, ctypes.c_size_t(most.value))
    arena = proc.arenas.get("dev_in")
    size = min(arena.size, window.value, most.value) if arena is not None else 0
    _st["window"] = (arena.base if arena is not None else 0, size)
    print(f"l2_persist: set-aside {most.value} bytes (rc {rc}), window {size} bytes of dev_in", file=sys.stderr,
          flush=True)


def _call_cuda(self, msg):
    if _lib is not None and _st["window"] is None:
        _setup(self)
    return _cuda(self, msg)


serve.SubmissionProcess.call_cuda = _call_cuda


def custom_kernel(data):
    a, b, out = data
    if _lib is not None and _st["window"] is not None and _st["window"][1]:
        stream = torch.cuda.current_stream().cuda_stream
        if stream not in _st["set"]:
            value = _AttrValue()
            value.window = _Window(_st["window"][0], _st["window"][1], 1.0, _PERSISTING, _STREAMING)
            rc = _lib.cuStreamSetAttribute(ctypes.c_void_p(stream), _STREAM_ATTR_WINDOW, ctypes.byref(value))
            _st["set"][stream] = rc
            print(f"l2_persist: access-policy window on the stream (rc {rc})", file=sys.stderr, flush=True)
    return torch.add(a, b, out=out)
