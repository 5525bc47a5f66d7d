# expect: accepted
# Fused where PyTorch makes extra passes: RMSNorm in one pass per token (fp32 math, one rounding), the residual add
# fused into the second RMSNorm, the rotary embedding of every head of a token in one program (the angles computed
# in registers, no tables), SwiGLU's silu(gate) * up in one pass; the projections are cuBLAS bf16 GEMMs and the
# attention is SDPA with grouped-query heads (FlashAttention on a GPU), the causal mask offset by the cache's length.
import torch
import triton
import triton.language as tl

EPS, ROPE_THETA = 1e-5, 500000.0


@triton.jit
def _bf16(x):
    """fp32 -> bf16, round to nearest even, spelled out: Triton's CPU interpreter truncates in .to(tl.bfloat16)."""
    bits = x.to(tl.uint32, bitcast=True)
    bits += 0x7FFF + ((bits >> 16) & 1)
    return (bits >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True)


@triton.jit
def _add_rmsnorm(x_ptr, a_ptr, w_ptr, sum_ptr, y_ptr, hidden, eps, HAS_ADD: tl.constexpr, BLOCK: tl.constexpr):
    """y = rmsnorm(x (+ a)) * w for one token; with HAS_ADD the bf16 sum x + a is stored too (the residual)."""
    row = tl.program_id(0).to(tl.int64)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < hidden
    x = tl.load(x_ptr + row * hidden + offsets, mask=mask, other=0.0).to(tl.float32)
    if HAS_ADD:
        a = tl.load(a_ptr + row * hidden + offsets, mask=mask, other=0.0).to(tl.float32)
        s = _bf16(x + a)
        tl.store(sum_ptr + row * hidden + offsets, s, mask=mask)
        x = s.to(tl.float32)
    w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    inv = tl.rsqrt(tl.sum(x * x, axis=0) / hidden + eps)
    tl.store(y_ptr + row * hidden + offsets, _bf16(x * inv * w), mask=mask)


@triton.jit
def _rope(t_ptr, seq, past, heads, log2_theta, HEAD_DIM: tl.constexpr, HEADS: tl.constexpr, HALF: tl.constexpr):
    """Rotates every head of one token in place (the halves of a head share frequency i: theta ** (-2i / d)).
    HEADS and HALF: powers of two at least the heads and head_dim // 2 (a head_dim of 80 has halves of 40)."""
    token = tl.program_id(0).to(tl.int64)
    head = tl.arange(0, HEADS)[:, None]
    half = tl.arange(0, HALF)[None, :]
    mask = (head < heads) & (half < HEAD_DIM // 2)
    position = (past + token % seq).to(tl.float32)
    angle = position * tl.exp2(-(2 * half).to(tl.float32) / HEAD_DIM * log2_theta)
    cos, sin = tl.cos(angle), tl.sin(angle)
    base = t_ptr + token * heads * HEAD_DIM + head * HEAD_DIM
    lo = tl.load(base + half, mask=mask, other=0.0).to(tl.float32)
    hi = tl.load(base + HEAD_DIM // 2 + half, mask=mask, other=0.0).to(tl.float32)
    tl.store(base + half, _bf16(lo * cos - hi * sin), mask=mask)
    tl.store(base + HEAD_DIM // 2 + half, _bf16(hi * cos + lo * sin), mask=mask)


@triton.jit
def _swiglu(g_ptr, u_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    g = tl.load(g_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(u_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, _bf16(g / (1 + tl.exp(-g)) * u), mask=mask)


def rmsnorm(
    x: torch.Tensor, weight: torch.Tensor, add: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(rmsnorm(x + add) * weight, x + add) over the last dimension; without ``add``, (rmsnorm(x) * weight, x)."""
    hidden = x.shape[-1]
    rows = x.numel() // hidden
    y = torch.empty_like(x)
    total = torch.empty_like(x) if add is not None else x
    _add_rmsnorm[(rows,)](
        x, add if add is not None else x, weight, total, y, hidden, EPS,
        HAS_ADD=add is not None, BLOCK=triton.next_power_of_2(hidden),
    )  # fmt: skip
    return y, total


def custom_kernel(data: tuple[torch.Tensor, ...]) -> torch.Tensor:
    x, k_cache, v_cache, attn_norm, wq, wk, wv, wo, mlp_norm, w_gate, w_up, w_down = data
    batch, seq, _ = x.shape
    kv_heads, past, head_dim = k_cache.shape[1:]
    heads = wq.shape[0] // head_dim
    h, _ = rmsnorm(x, attn_norm)
    q, k, v = (h @ wq.T).contiguous(), (h @ wk.T).contiguous(), h @ wv.T
    log2_theta = float(torch.log2(torch.tensor(ROPE_THETA, dtype=torch.float64)))
    for t, n in ((q, heads), (k, kv_heads)):  # one program per token: all its heads at once
        _rope[(batch * seq,)](t, seq, past, n, log2_theta, HEAD_DIM=head_dim, HEADS=triton.next_power_of_2(n),
                              HALF=triton.next_power_of_2(head_dim // 2))
    q = q.view(batch, seq, heads, head_dim).transpose(1, 2)
    keys = torch.cat([k_cache, k.view(batch, seq, kv_heads, head_dim).transpose(1, 2)], dim=2)
    values = torch.cat([v_cache, v.view(batch, seq, kv_heads, head_dim).transpose(1, 2)], dim=2)
    mask = None  # one new token sees every key
    if seq > 1:
        mask = torch.ones(seq, past + seq, dtype=torch.bool, device=x.device).tril(diagonal=past)
    attn = torch.nn.functional.scaled_dot_product_attention(q, keys, values, attn_mask=mask, enable_gqa=True)
    attn_out = attn.transpose(1, 2).reshape(batch, seq, heads * head_dim) @ wo.T
    m, h1 = rmsnorm(x, mlp_norm, add=attn_out)
    gate, up = m @ w_gate.T, m @ w_up.T
    act = torch.empty_like(gate)
    _swiglu[(triton.cdiv(gate.numel(), 1024),)](gate, up, act, gate.numel(), BLOCK=1024)
    return h1 + act @ w_down.T
