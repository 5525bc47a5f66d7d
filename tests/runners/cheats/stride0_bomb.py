"""Attack: return (via the submission process's own describe) a TensorRef with a huge shape and stride 0. Its span is
one element (bounds check passes); the evaluator's CPU window then computes its copy allowance from numel*itemsize
and allocates that many bytes (torch.ones) -> RuntimeError/cgroup OOM inside the trusted evaluator, reported as its own
failure (an infrastructure error, retried). Shapes like [0, 2**64] or [2**62, 4] (stride 0) make the snapshot itself
raise TypeError/RuntimeError, with the same outcome.
expect: wrong_answer
mode: test
"""
import torch
from runners.ipc.protocol import TensorRef
from runners.submission import serve

_orig = serve.SubmissionProcess._tensor_ref

def _tensor_ref(self, t):
    ref = _orig(self, t)
    return TensorRef(arena=ref.arena, offset=ref.offset, dtype=ref.dtype, shape=[2**42], stride=[0])

serve.SubmissionProcess._tensor_ref = _tensor_ref

def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
