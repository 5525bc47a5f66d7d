"""Attack (red team, 2026-11-24): answer the first call with a message of 20,000 nested JSON brackets. The evaluator's
json.loads raised RecursionError, which the wire did not count as a malformed message: it escaped as the evaluator's
own failure (an infrastructure error, fault runner: retried, and three such files in a row made workers unhealthy).
expect: rejected
mode: test
words: malformed message
"""
import time

import torch

from runners.submission import serve


def _call(self, msg):
    depth = 20_000
    self.wire.sock.send(b'{"t":"prepared","k":' + str(msg.k).encode() + b',"x":' + b"[" * depth + b"]" * depth + b"}")
    time.sleep(3600)


serve.SubmissionProcess.call_cpu = _call
serve.SubmissionProcess.call_cuda = _call


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
