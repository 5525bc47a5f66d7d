"""Attack: answer a call with an error of the largest size the protocol allows (CallError.message: 64 KiB) and the
kind "bad_output". The evaluator prefixes it ("test 1: ...") and puts it in an RTest report whose message field has
the same 64 KiB limit: building the report raises a pydantic ValidationError inside the trusted evaluator, which
reports it as its own failure (fault "runner": an infrastructure error, retried).
expect: wrong_answer
mode: test
"""
from runners.ipc.protocol import CallError, Done
from runners.submission import serve

_orig = serve.SubmissionProcess.call_cpu

def _call_cpu(self, msg):
    done = _orig(self, msg)
    return Done(k=done.k, error=CallError(kind="bad_output", message="x" * (64 * 1024)))

serve.SubmissionProcess.call_cpu = _call_cpu

def custom_kernel(data):
    a, b, out = data
    return a + b
