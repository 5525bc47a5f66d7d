# expect: wrong_answer
# An online softmax over key blocks of 64 that forgets to rescale the running sum and output when the running
# maximum grows: each block's exponentials are taken against a different maximum. Exact whenever the keys fit in
# one block, which is all a checker with short sequences tries.
import math

import torch

BLOCK = 64


def custom_kernel(data):
    q, k, v = data
    seq, dim = q.shape[-2], q.shape[-1]
    qf, kf, vf = q.float(), k.float(), v.float()
    rows = torch.arange(seq, device=q.device)[:, None]
    running_max = torch.full((*q.shape[:-1], 1), float("-inf"), device=q.device)
    total = torch.zeros_like(running_max)
    acc = torch.zeros_like(qf)
    for start in range(0, seq, BLOCK):
        cols = torch.arange(start, min(start + BLOCK, seq), device=q.device)[None, :]
        scores = (qf @ kf[..., start : start + BLOCK, :].transpose(-1, -2)) / math.sqrt(dim)
        scores = scores.masked_fill(cols > rows, float("-inf"))
        running_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        p = torch.exp(scores - running_max.nan_to_num(neginf=0.0))  # the mistake: acc and total keep their scale
        total = total + p.sum(dim=-1, keepdim=True)
        acc = acc + p @ vf[..., start : start + BLOCK, :]
    return (acc / total).to(torch.bfloat16)
