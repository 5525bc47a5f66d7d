# expect: accepted
# The starter: a Llama 3 layer as PyTorch writes it, attention by hand (GQA by repeating the KV heads, the
# softmax in fp32), every other step in bf16 with fp32 accumulation.
import torch

EPS, ROPE_THETA = 1e-5, 500000.0


def rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + EPS)).to(x.dtype) * weight


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin


def custom_kernel(data: tuple[torch.Tensor, ...]) -> torch.Tensor:
    x, k_cache, v_cache, attn_norm, wq, wk, wv, wo, mlp_norm, w_gate, w_up, w_down = data
    batch, seq, _ = x.shape
    kv_heads, past, head_dim = k_cache.shape[1:]
    heads = wq.shape[0] // head_dim
    h = rmsnorm(x, attn_norm)
    q = (h @ wq.T).view(batch, seq, heads, head_dim).transpose(1, 2)
    k = (h @ wk.T).view(batch, seq, kv_heads, head_dim).transpose(1, 2)
    v = (h @ wv.T).view(batch, seq, kv_heads, head_dim).transpose(1, 2)
    # rotary embedding at positions past .. past + seq - 1 (the two halves of a head share a frequency)
    inv = ROPE_THETA ** (-torch.arange(0, head_dim, 2, dtype=torch.float64, device=x.device) / head_dim)
    angles = torch.arange(past, past + seq, dtype=torch.float64, device=x.device)[:, None] * inv[None, :]
    angles = torch.cat([angles, angles], dim=-1)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    q, k = rotate(q, cos, sin), rotate(k, cos, sin)
    keys = torch.cat([k_cache, k], dim=2).repeat_interleave(heads // kv_heads, dim=1)
    values = torch.cat([v_cache, v], dim=2).repeat_interleave(heads // kv_heads, dim=1)
    scores = (q.float() @ keys.float().transpose(-1, -2)) / head_dim**0.5
    mask = torch.ones(seq, past + seq, dtype=torch.bool, device=x.device).tril(diagonal=past)
    probs = scores.masked_fill(~mask, float("-inf")).softmax(-1).to(x.dtype)
    attn = (probs @ values).transpose(1, 2).reshape(batch, seq, heads * head_dim)
    h1 = x + attn @ wo.T
    m = rmsnorm(h1, mlp_norm)
    return h1 + (torch.nn.functional.silu(m @ w_gate.T) * (m @ w_up.T)) @ w_down.T
