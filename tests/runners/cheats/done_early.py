"""Cheat (GPU): write the evaluator's "done" word itself, early, from a stream that does not wait for anything, so
that the evaluator's window would close before the work is done. The evaluator resets the word just before each
window and snapshots the output where its window closes: the work is counted, or the output is incomplete.
expect: no_gain
mode: ranked
device: cuda
"""
import gc

import torch

from runners.submission import serve

_side = []


def custom_kernel(data):
    proc = next((o for o in gc.get_objects() if isinstance(o, serve.SubmissionProcess)), None)
    if proc is not None and proc.ctrl is not None:
        if not _side:
            _side.append(torch.cuda.Stream())
        proc.driver.write_value(_side[0].cuda_stream, proc.ctrl.base + serve.DONE_OFFSET, 2**30)
    a, b, out = data
    return torch.add(a, b, out=out)
