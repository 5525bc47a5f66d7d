# expect: wrong_answer
# Block-causal instead of causal: each block of 64 queries sees every key up to the end of its own block, so the
# diagonal block is left unmasked (a query sees up to 63 keys of its future). The last query of every block is
# right, and so is a checker that only looks at the final row or at seq = 1.
import math

import torch

BLOCK = 64


def custom_kernel(data):
    q, k, v = data
    seq, dim = q.shape[-2], q.shape[-1]
    out = torch.empty_like(q)
    for start in range(0, seq, BLOCK):
        end = min(start + BLOCK, seq)
        scores = (q[..., start:end, :].float() @ k[..., :end, :].float().transpose(-1, -2)) / math.sqrt(dim)
        out[..., start:end, :] = (scores.softmax(dim=-1) @ v[..., :end, :].float()).to(torch.bfloat16)
    return out
