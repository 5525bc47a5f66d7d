"""Property cases of attention's check, run by tests/problems/test_problem_checks.py (docs/authoring.md, section 6)."""

import torch

CASE = {"batch": 1, "heads": 2, "seq": 700, "head_dim": 64, "seed": 22}


def _flash(d: tuple, block: int = 64, p_dtype: torch.dtype | None = torch.bfloat16, rescale: bool = True,
           acc_bf16: bool = False, scores_bf16: bool = False) -> torch.Tensor:
    """An online softmax over key blocks (FlashAttention's forward), in fp32, with the options of its mistakes."""
    q, k, v = (t.float() for t in d)
    seq, dim = q.shape[-2], q.shape[-1]
    rows = torch.arange(seq)[:, None]
    running = torch.full((*q.shape[:-1], 1), float("-inf"))
    total, acc = torch.zeros_like(running), torch.zeros_like(q)
    for start in range(0, seq, block):
        scores = q @ k[..., start : start + block, :].transpose(-1, -2)
        if scores_bf16:
            scores = scores.bfloat16().float()
        scores = (scores / dim**0.5).masked_fill(torch.arange(start, min(start + block, seq))[None, :] > rows, -1e6)
        new = torch.maximum(running, scores.amax(dim=-1, keepdim=True))
        p = torch.exp(scores - new)
        alpha = torch.exp(running - new) if rescale else torch.ones_like(new)
        total = total * alpha + p.sum(dim=-1, keepdim=True)
        if p_dtype is not None:
            p = p.to(p_dtype).float()
        acc = acc * alpha + p @ v[..., start : start + block, :]
        if acc_bf16:
            acc = acc.bfloat16().float()
        running = new
    return (acc / total).bfloat16()


def _block_causal(d: tuple, block: int) -> torch.Tensor:
    """Each block of queries sees every key up to the end of its own block (the diagonal block unmasked)."""
    q, k, v = (t.float() for t in d)
    out = torch.empty_like(q)
    for start in range(0, q.shape[-2], block):
        end = min(start + block, q.shape[-2])
        scores = q[..., start:end, :] @ k[..., :end, :].transpose(-1, -2) / q.shape[-1] ** 0.5
        out[..., start:end, :] = scores.softmax(dim=-1) @ v[..., :end, :]
    return out.bfloat16()


CORRECT = {
    "fp32": lambda d: torch.nn.functional.scaled_dot_product_attention(
        *(t.float() for t in d), is_causal=True).bfloat16(),
    "torch bf16 sdpa": lambda d: torch.nn.functional.scaled_dot_product_attention(*d, is_causal=True),
    "key blocks of 64, p in bf16": lambda d: _flash(d, 64),
    "key blocks of 128, p in bf16": lambda d: _flash(d, 128),
    "p in fp16": lambda d: _flash(d, 64, torch.float16),
}

WRONG = {
    "diagonal block unmasked": lambda d, g: _block_causal(d, 64),
    "no rescaling": lambda d, g: _flash(d, 64, rescale=False),
    "bf16 accumulator": lambda d, g: _flash(d, 64, acc_bf16=True),
    "scale 1/d": lambda d, g: torch.nn.functional.scaled_dot_product_attention(
        *(t.float() for t in d), is_causal=True, scale=1 / d[0].shape[-1]).bfloat16(),
}
