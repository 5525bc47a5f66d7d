# expect: wrong_answer
# Attends to the new tokens only: the KV cache (the past tokens' keys and values) is ignored. Right on the prefill
# cases without a past, wrong everywhere else.
import torch

EPS, ROPE_THETA = 1e-5, 500000.0


def rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + EPS)).to(x.dtype) * weight


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin


def custom_kernel(data: tuple[torch.Tensor, ...]) -> torch.Tensor:
    x, k_cache, _v_cache, attn_norm, wq, wk, wv, wo, mlp_norm, w_gate, w_up, w_down = data
    batch, seq, _ = x.shape
    kv_heads, past, head_dim = k_cache.shape[1:]
    heads = wq.shape[0] // head_dim
    h = rmsnorm(x, attn_norm)
    q = (h @ wq.T).view(batch, seq, heads, head_dim).transpose(1, 2)
    k = (h @ wk.T).view(batch, seq, kv_heads, head_dim).transpose(1, 2)
    v = (h @ wv.T).view(batch, seq, kv_heads, head_dim).transpose(1, 2)
    inv = ROPE_THETA ** (-torch.arange(0, head_dim, 2, dtype=torch.float64, device=x.device) / head_dim)
    angles = torch.arange(past, past + seq, dtype=torch.float64, device=x.device)[:, None] * inv[None, :]
    angles = torch.cat([angles, angles], dim=-1)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    q, k = rotate(q, cos, sin), rotate(k, cos, sin)
    attn = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    h1 = x + attn.transpose(1, 2).reshape(batch, seq, heads * head_dim) @ wo.T
    m = rmsnorm(h1, mlp_norm)
    return h1 + (torch.nn.functional.silu(m @ w_gate.T) * (m @ w_up.T)) @ w_down.T
