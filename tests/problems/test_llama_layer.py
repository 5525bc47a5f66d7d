"""llama_layer's check (problems/llama_layer/reference.py), in process: the tolerance its docstring derives accepts a
bf16 pipeline and refuses what it says must fail, and the model's pieces are Llama's (rotary layout, causal mask
offset by the cache, grouped-query heads). The solutions run end to end in test_problem_solutions.py."""

from __future__ import annotations

import torch
from problem_catalog import import_reference

CASE = {"batch": 2, "seq": 9, "past": 23, "hidden": 256, "heads": 8, "kv_heads": 2, "ffn": 704, "seed": 1404}


def test_the_reference_passes_its_check_and_matches_a_second_implementation() -> None:
    reference = import_reference("llama_layer")
    data = reference.generate_input(**CASE)
    out = reference.ref_kernel(data)
    assert out.shape == (2, 9, 256) and out.dtype == torch.bfloat16
    assert reference.check_implementation(data, out)[0]
    # the fp64 computation by hand: GQA as repeated KV heads, the mask as -inf above the cache's diagonal
    x, k_cache, v_cache, attn_norm, wq, wk, wv, wo, mlp_norm, w_gate, w_up, w_down = (t.double() for t in data)
    head_dim, heads, kv_heads, past, seq = 32, 8, 2, 23, 9

    def norm(v: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return v / torch.sqrt(v.square().mean(-1, keepdim=True) + 1e-5) * w

    h = norm(x, attn_norm)
    q = (h @ wq.T).view(2, seq, heads, head_dim).transpose(1, 2)
    k = (h @ wk.T).view(2, seq, kv_heads, head_dim).transpose(1, 2)
    v = (h @ wv.T).view(2, seq, kv_heads, head_dim).transpose(1, 2)
    freq = 500000.0 ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    angle = torch.arange(past, past + seq, dtype=torch.float64)[:, None] * freq
    cos, sin = torch.cat([angle.cos()] * 2, -1), torch.cat([angle.sin()] * 2, -1)

    def rope(t: torch.Tensor) -> torch.Tensor:
        return t * cos + torch.cat([-t[..., head_dim // 2 :], t[..., : head_dim // 2]], -1) * sin

    keys = torch.cat([k_cache, rope(k)], 2).repeat_interleave(heads // kv_heads, 1)
    values = torch.cat([v_cache, v], 2).repeat_interleave(heads // kv_heads, 1)
    scores = rope(q) @ keys.transpose(-1, -2) / head_dim**0.5
    future = torch.arange(past + seq)[None, :] > torch.arange(past, past + seq)[:, None]
    attn = scores.masked_fill(future, float("-inf")).softmax(-1) @ values
    h1 = x + attn.transpose(1, 2).reshape(2, seq, 256) @ wo.T
    m = norm(h1, mlp_norm)
    exact = h1 + (torch.nn.functional.silu(m @ w_gate.T) * (m @ w_up.T)) @ w_down.T
    assert reference.check_implementation(data, exact.to(torch.bfloat16))[0]
    assert torch.allclose(reference._branches(data, torch.float64)[2], exact, atol=1e-9)


def test_the_tolerance_refuses_fp8_weights_and_a_rough_answer() -> None:
    reference = import_reference("llama_layer")
    data = reference.generate_input(**CASE)

    def fp8(t: torch.Tensor) -> torch.Tensor:
        scale = t.float().abs().amax() / 448
        return ((t.float() / scale).to(torch.float8_e4m3fn).float() * scale).to(t.dtype)

    rounded = tuple(fp8(t) if t.dim() == 2 else t for t in data)  # the weight matrices
    ok, message = reference.check_implementation(data, reference.ref_kernel(rounded))
    assert not ok and "differ" in message
    out = reference.ref_kernel(data)
    rms = out.double().square().mean().sqrt()
    signs = (torch.arange(out.numel()) % 2 * 2 - 1).reshape(out.shape)
    assert not reference.check_implementation(data, (out.double() + rms / 16 * signs).to(torch.bfloat16))[0]
