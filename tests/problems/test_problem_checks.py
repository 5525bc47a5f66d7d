"""Property tests of every problem's check, in-process on the CPU.

For each problem: the reference's own output passes; outputs that a correct kernel with a different order of
operations would give (split-K, tree or blocked reduction, sequential scan, TF32 inputs, FMA) pass; zeros, a
constant, one element left unwritten, an off-by-one shift and a lower-precision computation fail. These are the
two sides of each tolerance that the comments in the references cite.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from problem_catalog import import_reference, python_problem_names

Mutation = Callable[[tuple, torch.Tensor], torch.Tensor]

# A mid-sized case per problem: big enough that every wrong variant shows, small enough to be fast on a CPU.
CASES: dict[str, dict] = {
    "vectoradd": {"size": 300, "seed": 11},
    "vectorsum": {"size": 200_003, "seed": 12},
    "grayscale": {"height": 97, "width": 131, "seed": 13},
    "histogram": {"size": 100_003, "contention": 30, "seed": 14},
    "prefixsum": {"size": 200_003, "seed": 15},
    "sort": {"size": 50_001, "seed": 16},
    "softmax": {"rows": 64, "cols": 3001, "seed": 17},
    "rmsnorm": {"rows": 64, "hidden": 2049, "seed": 18},
    "matmul": {"m": 96, "k": 2048, "n": 80, "seed": 19},
    "conv2d": {"batch": 4, "channels": 64, "height": 23, "width": 29, "out_channels": 16, "kernel_size": 3, "seed": 20},
    "layernorm": {"rows": 64, "cols": 2049, "dtype": "bfloat16", "seed": 21},
    "attention": {"batch": 1, "heads": 2, "seq": 700, "head_dim": 64, "seed": 22},
    "fp8_gemm": {"m": 128, "n": 96, "k": 4096, "seed": 23},
    "grouped_gemm": {"groups": 16, "tokens": 1000, "k": 2048, "n": 96, "seed": 5},
}


def _tf32(t: torch.Tensor) -> torch.Tensor:
    """Round fp32 to TF32 (10 mantissa bits), round-to-nearest-even, as tensor cores read fp32 inputs."""
    bits = t.contiguous().view(torch.int32)
    rounded = (bits + 0xFFF + ((bits >> 13) & 1)) & ~0x1FFF
    return rounded.view(torch.float32)


def _tf32_truncated(t: torch.Tensor) -> torch.Tensor:
    """Round fp32 to TF32 toward zero, as Triton's tl.dot does on Hopper."""
    return (t.contiguous().view(torch.int32) & ~0x1FFF).view(torch.float32)


def _blocked_sum(x: torch.Tensor, block: int) -> torch.Tensor:
    pad = -x.numel() % block
    parts = torch.nn.functional.pad(x, (0, pad)).view(-1, block).sum(dim=1)  # fp32 partials
    return torch.cumsum(parts, 0)[-1]  # summed one after another, in fp32


# ---- outputs a correct kernel may give: must pass ------------------------------------------------------------
def _matmul_split_k(data: tuple, splits: int) -> torch.Tensor:
    a, b = data
    chunks = zip(a.float().chunk(splits, dim=1), b.float().chunk(splits, dim=0), strict=True)
    partials = [(ac @ bc).half() for ac, bc in chunks]  # fp16 partial products, as cuBLAS's split-K writes them
    return torch.stack(partials).float().sum(0).half()


def _scan_blocked(x: torch.Tensor, block: int) -> torch.Tensor:
    pad = -x.numel() % block
    blocks = torch.nn.functional.pad(x, (0, pad)).view(-1, block)
    inner = torch.cumsum(blocks, dim=1)
    carry = torch.cumsum(inner[:, -1], 0) - inner[:, -1]
    return (inner + carry[:, None]).flatten()[: x.numel()]


def _swap_zero_signs(x: torch.Tensor) -> torch.Tensor:
    """-0.0 and 0.0 in any order among the zeros (a radix sort on the bits puts -0.0 first)."""
    assert (x == 0).sum() > 1, "the sort case must hold zeros"
    return x.where(x != 0, -x)


def _sequential_cumsum(x: torch.Tensor) -> torch.Tensor:
    """A strictly sequential fp32 scan (numpy's cumsum adds one element after another)."""
    return torch.from_numpy(x.numpy().cumsum(dtype="float32"))


def _layernorm(
    x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, mean: torch.Tensor, var: torch.Tensor
) -> torch.Tensor:
    return ((x.float() - mean) * torch.rsqrt(var + 1e-5) * w.float() + b.float()).to(x.dtype)


def _layernorm_sequential(d: tuple) -> torch.Tensor:
    """Mean and variance summed one column after another in fp32 (one thread per row)."""
    x = d[0].float()
    total = torch.zeros(x.shape[0], 1)
    for j in range(x.shape[1]):
        total += x[:, j : j + 1]
    mean = total / x.shape[1]
    squares = torch.zeros_like(total)
    for j in range(x.shape[1]):
        squares += (x[:, j : j + 1] - mean).square()
    return _layernorm(d[0], d[1], d[2], mean, squares / x.shape[1])


def _layernorm_welford(d: tuple, chunk: int = 256) -> torch.Tensor:
    """Welford's mean and variance per chunk of columns in fp32, merged chunk by chunk (Chan et al.)."""
    x = d[0].float()
    count, mean, m2 = 0, torch.zeros(x.shape[0], 1), torch.zeros(x.shape[0], 1)
    for part in x.split(chunk, dim=1):
        n_b = part.shape[1]
        mean_b = part.mean(dim=1, keepdim=True)
        m2_b = (part - mean_b).square().sum(dim=1, keepdim=True)
        delta = mean_b - mean
        total = count + n_b
        mean = mean + delta * (n_b / total)
        m2 = m2 + m2_b + delta.square() * (count * n_b / total)
        count = total
    return _layernorm(d[0], d[1], d[2], mean, m2 / count)


def _layernorm_one_pass(d: tuple) -> torch.Tensor:
    x = d[0].float()
    mean = x.mean(dim=-1, keepdim=True)
    return _layernorm(d[0], d[1], d[2], mean, (x.square().mean(dim=-1, keepdim=True) - mean.square()).clamp(min=0))


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


def _truncate_mantissa(x: torch.Tensor, bits: int) -> torch.Tensor:
    return (x.contiguous().view(torch.int32) & ~((1 << (23 - bits)) - 1)).view(torch.float32)


def _fp8_limited_accumulator(d: tuple, promote: int | None) -> torch.Tensor:
    """Hopper's fp8 tensor cores as DeepSeek-V3 describes them: each 32-product step exact, the running sum kept to
    13 mantissa bits (truncated), and, unless ``promote`` is None (fast accumulation), added into an fp32 total
    every ``promote`` products."""
    a, b, scale_a, scale_b = d
    af, bf = a.float(), b.float()
    total = torch.zeros(a.shape[0], b.shape[0])
    acc = torch.zeros_like(total)
    for start in range(0, a.shape[1], 32):
        acc = _truncate_mantissa(acc + af[:, start : start + 32] @ bf[:, start : start + 32].T, 13)
        if promote is not None and (start + 32) % promote == 0:
            total, acc = total + acc, torch.zeros_like(acc)
    return ((total + acc) * scale_a * scale_b).bfloat16()


def _fp8_split_k(d: tuple, splits: int) -> torch.Tensor:
    a, b, scale_a, scale_b = d
    chunks = zip(a.float().chunk(splits, dim=1), b.float().chunk(splits, dim=1), strict=True)
    return torch.stack([((ac @ bc.T) * scale_a * scale_b).bfloat16() for ac, bc in chunks]).float().sum(0).bfloat16()


def _grouped(d: tuple, product: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> torch.Tensor:
    a, weights, offsets = d
    out = torch.zeros(a.shape[0], weights.shape[2])
    start = 0
    for g, end in enumerate(offsets.tolist()):
        if end > start:
            out[start:end] = product(a[start:end].float(), weights[g].float())
        start = end
    return out.bfloat16()


def _split_k_bf16(x: torch.Tensor, y: torch.Tensor, splits: int) -> torch.Tensor:
    chunks = zip(x.chunk(splits, dim=1), y.chunk(splits, dim=0), strict=True)
    return torch.stack([(xc @ yc).bfloat16() for xc, yc in chunks]).float().sum(0)


def _bf16_accumulator(x: torch.Tensor, y: torch.Tensor, chunk: int = 32) -> torch.Tensor:
    acc = torch.zeros(x.shape[0], y.shape[1])
    for start in range(0, x.shape[1], chunk):
        acc = (acc + x[:, start : start + chunk] @ y[start : start + chunk]).bfloat16().float()
    return acc


def _grouped_rows(d: tuple, shift: int) -> torch.Tensor:
    """Each row multiplied by the weights of the group ``shift`` places after its own (clamped)."""
    a, weights, offsets = d
    group = torch.searchsorted(offsets, torch.arange(a.shape[0], dtype=offsets.dtype), right=True)
    group = (group + shift).clamp_(0, weights.shape[0] - 1)
    return torch.bmm(a.float().unsqueeze(1), weights.float()[group]).squeeze(1).bfloat16()


def _grouped_skipping_empty(d: tuple) -> torch.Tensor:
    a, weights, offsets = d
    sizes = torch.diff(offsets, prepend=offsets.new_zeros(1)).tolist()
    chunks = [c for c in a.split(sizes) if c.shape[0]]
    return torch.cat([c.float() @ w.float() for c, w in zip(chunks, weights, strict=False)]).bfloat16()


ALTERNATIVES: dict[str, dict[str, Callable[[tuple], torch.Tensor]]] = {
    "vectoradd": {"fp16 add": lambda d: d[0] + d[1]},
    "vectorsum": {
        "blocks of 65536": lambda d: _blocked_sum(d[0], 65536),
        "blocks of 128": lambda d: _blocked_sum(d[0], 128),
        "sequential": lambda d: _sequential_cumsum(d[0])[-1],
        "pairwise": lambda d: d[0].sum(),
    },
    "grayscale": {
        "reversed order": lambda d: 0.1140 * d[0][..., 2] + 0.5870 * d[0][..., 1] + 0.2989 * d[0][..., 0],
        "matrix-vector": lambda d: d[0] @ torch.tensor([0.2989, 0.5870, 0.1140]),
    },
    "histogram": {"bincount": lambda d: torch.bincount(d[0].long(), minlength=256).int()},
    "prefixsum": {
        "sequential": lambda d: _sequential_cumsum(d[0]),
        "blocked 1024": lambda d: _scan_blocked(d[0], 1024),
        "blocked 4096": lambda d: _scan_blocked(d[0], 4096),
    },
    "sort": {"signed zeros swapped": lambda d: _swap_zero_signs(torch.sort(d[0]).values)},
    "softmax": {
        "fp32": lambda d: torch.softmax(d[0].float(), dim=-1).half(),
        "reciprocal": lambda d: (lambda e: (e * (1 / e.sum(-1, keepdim=True))).half())(
            (d[0].float() - d[0].float().amax(-1, keepdim=True)).exp()),
    },
    "rmsnorm": {
        "fp32": lambda d: torch.nn.functional.rms_norm(d[0].float(), (d[0].shape[-1],), d[1].float(), 1e-6).bfloat16(),
        "weight first": lambda d: (d[0].float() * (d[1].float() * torch.rsqrt(
            d[0].float().square().mean(-1, keepdim=True) + 1e-6))).bfloat16(),
    },
    "matmul": {
        "fp32 accumulate": lambda d: (d[0].float() @ d[1].float()).half(),
        "split-K 4, fp16 partials": lambda d: _matmul_split_k(d, 4),
        "split-K 16, fp16 partials": lambda d: _matmul_split_k(d, 16),
    },
    "layernorm": {
        "fp32 layer_norm": lambda d: torch.nn.functional.layer_norm(
            d[0].float(), (d[0].shape[-1],), d[1].float(), d[2].float(), 1e-5).to(d[0].dtype),
        "sequential fp32 sums": _layernorm_sequential,
        "Welford over chunks": _layernorm_welford,
    },
    "attention": {
        "fp32": lambda d: torch.nn.functional.scaled_dot_product_attention(
            *(t.float() for t in d), is_causal=True).bfloat16(),
        "torch bf16 sdpa": lambda d: torch.nn.functional.scaled_dot_product_attention(*d, is_causal=True),
        "key blocks of 64, p in bf16": lambda d: _flash(d, 64),
        "key blocks of 128, p in bf16": lambda d: _flash(d, 128),
        "p in fp16": lambda d: _flash(d, 64, torch.float16),
    },
    "fp8_gemm": {
        "fp32 dequantised": lambda d: ((d[0].float() @ d[1].float().T) * d[2] * d[3]).bfloat16(),
        "torch._scaled_mm": lambda d: torch._scaled_mm(d[0], d[1].T, scale_a=d[2], scale_b=d[3],
                                                       out_dtype=torch.bfloat16),
        "13-bit accumulator promoted every 128": lambda d: _fp8_limited_accumulator(d, 128),
    },
    "grouped_gemm": {
        "fp32 per group": lambda d: _grouped(d, torch.matmul),
        "split-K 4, bf16 partials": lambda d: _grouped(d, lambda x, y: _split_k_bf16(x, y, 4)),
        "split-K 16, bf16 partials": lambda d: _grouped(d, lambda x, y: _split_k_bf16(x, y, 16)),
        "torch._grouped_mm": lambda d: torch._grouped_mm(d[0], d[1], offs=d[2], out_dtype=torch.bfloat16),
    },
    "conv2d": {
        "TF32 inputs": lambda d: torch.nn.functional.conv2d(_tf32(d[0]), _tf32(d[1])),
        "TF32 truncated inputs": lambda d: torch.nn.functional.conv2d(_tf32_truncated(d[0]), _tf32_truncated(d[1])),
        "fp64 rounded": lambda d: torch.nn.functional.conv2d(d[0].double(), d[1].double()).float(),
    },
}


# ---- outputs of a wrong kernel: must fail ----------------------------------------------------------------------
def _zeros(data: tuple, good: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(good)


def _constant(data: tuple, good: torch.Tensor) -> torch.Tensor:
    if good.numel() == 1 or not good.is_floating_point():
        return torch.full_like(good, 1)
    return torch.full_like(good, good.double().mean().item())


def _skip_one(data: tuple, good: torch.Tensor) -> torch.Tensor:
    """One element left as it was allocated (zero), the one with the largest magnitude so it cannot be zero."""
    bad = good.clone().flatten()
    bad[bad.double().abs().argmax()] = 0
    return bad.view(good.shape)


def _off_by_one(data: tuple, good: torch.Tensor) -> torch.Tensor:
    return good.roll(1, dims=-1) if good.dim() else good


def _lower_precision(data: tuple, good: torch.Tensor) -> torch.Tensor:
    lower = torch.bfloat16 if good.dtype != torch.bfloat16 else torch.float8_e4m3fn
    return good.to(lower).to(good.dtype)


WRONG: dict[str, Mutation] = {
    "zeros": _zeros, "constant": _constant, "skipped element": _skip_one, "off by one": _off_by_one,
    "lower precision": _lower_precision,
}
# Problem-specific versions of the same mistakes where the generic one does not apply.
SPECIFIC: dict[str, dict[str, Mutation]] = {
    "vectorsum": {
        "skipped element": lambda d, g: d[0][1:].sum(),
        "off by one": lambda d, g: d[0][:-1].sum(),
        "lower precision": lambda d, g: d[0].bfloat16().float().sum(),
    },
    "histogram": {
        "lower precision": lambda d, g: g.long(),  # the wrong dtype
        "skipped element": lambda d, g: torch.bincount(d[0][:-1].long(), minlength=256).int(),
    },
    "prefixsum": {
        "off by one": lambda d, g: torch.cumsum(d[0], 0) - d[0],  # exclusive scan
        "lower precision": lambda d, g: torch.cumsum(d[0].half(), 0).float(),
    },
    "softmax": {"lower precision": lambda d, g: torch.softmax(d[0].float(), -1).bfloat16().half()},
    "rmsnorm": {
        "lower precision": lambda d, g: (d[0] * torch.rsqrt(d[0].square().mean(-1, keepdim=True) + 1e-6) * d[1]),
        "eps outside": lambda d, g: (d[0].float() / (d[0].float().square().mean(-1, keepdim=True).sqrt() + 1e-6)
                                     * d[1].float()).bfloat16(),
    },
    "matmul": {
        "lower precision": lambda d, g: (d[0].bfloat16().float() @ d[1].bfloat16().float()).half(),
        "fp16 accumulator": lambda d, g: _fp16_accumulate(d[0], d[1]),
    },
    "layernorm": {
        "one-pass variance": lambda d, g: _layernorm_one_pass(d),
        "unbiased variance": lambda d, g: _layernorm(d[0], d[1], d[2], d[0].float().mean(-1, keepdim=True),
                                                     d[0].float().var(-1, keepdim=True)),
        "eps outside": lambda d, g: (lambda x, m: ((x - m) / ((x - m).square().mean(-1, keepdim=True).sqrt() + 1e-5)
                                                   * d[1].float() + d[2].float()).to(d[0].dtype))(
            d[0].float(), d[0].float().mean(-1, keepdim=True)),
        "no bias": lambda d, g: _layernorm((d[0]), d[1], torch.zeros_like(d[2]), d[0].float().mean(-1, keepdim=True),
                                           d[0].float().var(-1, keepdim=True, correction=0)),
        "lower precision": lambda d, g: torch.nn.functional.layer_norm(
            d[0].float(), (d[0].shape[-1],), d[1].float(), d[2].float(), 1e-5).to(torch.float8_e4m3fn).to(d[0].dtype),
    },
    "attention": {
        "diagonal block unmasked": lambda d, g: _block_causal(d, 64),
        "no rescaling": lambda d, g: _flash(d, 64, rescale=False),
        "bf16 accumulator": lambda d, g: _flash(d, 64, acc_bf16=True),
        "scale 1/d": lambda d, g: torch.nn.functional.scaled_dot_product_attention(
            *(t.float() for t in d), is_causal=True, scale=1 / d[0].shape[-1]).bfloat16(),
    },
    "fp8_gemm": {
        "scale_b dropped": lambda d, g: ((d[0].float() @ d[1].float().T) * d[2]).bfloat16(),
        "scale_a dropped": lambda d, g: ((d[0].float() @ d[1].float().T) * d[3]).bfloat16(),
        "bf16 dequantised inputs": lambda d, g: ((d[0].float() * d[2]).bfloat16().float()
                                                 @ (d[1].float() * d[3].T).bfloat16().float().T).bfloat16(),
        "split-K 4, bf16 partials": lambda d, g: _fp8_split_k(d, 4),
        "fast accumulation (never promoted)": lambda d, g: _fp8_limited_accumulator(d, None),
        "e5m2 inputs": lambda d, g: ((d[0].float().to(torch.float8_e5m2).float()
                                      @ d[1].float().to(torch.float8_e5m2).float().T) * d[2] * d[3]).bfloat16(),
    },
    "grouped_gemm": {
        "bf16 accumulator": lambda d, g: _grouped(d, _bf16_accumulator),
        "next group's weights": lambda d, g: _grouped_rows(d, 1),
        "empty groups skipped": lambda d, g: _grouped_skipping_empty(d),
        "first row of a group to the previous group": lambda d, g: _grouped_boundary(d),
    },
    "conv2d": {
        "lower precision": lambda d, g: torch.nn.functional.conv2d(d[0].bfloat16().float(), d[1].bfloat16().float()),
        "flipped kernel": lambda d, g: torch.nn.functional.conv2d(d[0], d[1].flip(2, 3)),
    },
}


def _fp16_accumulate(a: torch.Tensor, b: torch.Tensor, chunk: int = 32) -> torch.Tensor:
    """Each chunk of 32 products summed exactly, the running total kept in fp16 (an fp16-accumulator MMA)."""
    acc = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float16)
    for start in range(0, a.shape[1], chunk):
        acc = (acc.float() + a[:, start : start + chunk].float() @ b[start : start + chunk].float()).half()
    return acc


def _block_causal(d: tuple, block: int) -> torch.Tensor:
    """Each block of queries sees every key up to the end of its own block (the diagonal block unmasked)."""
    q, k, v = (t.float() for t in d)
    out = torch.empty_like(q)
    for start in range(0, q.shape[-2], block):
        end = min(start + block, q.shape[-2])
        scores = q[..., start:end, :] @ k[..., :end, :].transpose(-1, -2) / q.shape[-1] ** 0.5
        out[..., start:end, :] = scores.softmax(dim=-1) @ v[..., :end, :]
    return out.bfloat16()


def _grouped_boundary(d: tuple) -> torch.Tensor:
    """searchsorted without right=True: the first row of each group goes to the group before it."""
    a, weights, offsets = d
    group = torch.searchsorted(offsets, torch.arange(a.shape[0], dtype=offsets.dtype)).clamp_(max=weights.shape[0] - 1)
    return torch.bmm(a.float().unsqueeze(1), weights.float()[group]).squeeze(1).bfloat16()


def _wrong_cases(problem: str) -> list[tuple[str, Mutation]]:
    mutations = {**WRONG, **SPECIFIC.get(problem, {})}
    return sorted(mutations.items())


PROBLEMS = [p for p in python_problem_names() if p in CASES]


@pytest.fixture(scope="module")
def prepared() -> dict[str, tuple]:
    """Each problem's reference, case data and reference output (computed once)."""
    out = {}
    with torch.device("cpu"):
        for problem in PROBLEMS:
            ref = import_reference(problem)
            data = ref.generate_input(**CASES[problem])
            out[problem] = (ref, data, ref.ref_kernel(data))
    return out


def test_every_problem_has_a_case_here() -> None:
    assert sorted(PROBLEMS) == sorted(CASES), "add a case (and its alternatives and mistakes) for the new problem"


@pytest.mark.parametrize("problem", PROBLEMS)
def test_reference_output_passes(problem: str, prepared: dict) -> None:
    ref, data, good = prepared[problem]
    ok, message = ref.check_implementation(data, good)
    assert ok, message


@pytest.mark.parametrize(
    ("problem", "how"), [(p, how) for p in PROBLEMS for how in ALTERNATIVES.get(p, {})]
)
def test_correct_alternative_passes(problem: str, how: str, prepared: dict) -> None:
    ref, data, _ = prepared[problem]
    output = ALTERNATIVES[problem][how](data)
    ok, message = ref.check_implementation(data, output)
    assert ok, f"{problem}: a correct {how} result was rejected: {message}"


@pytest.mark.parametrize(("problem", "how"), [(p, how) for p in PROBLEMS for how, _ in _wrong_cases(p)])
def test_mistake_fails(problem: str, how: str, prepared: dict) -> None:
    ref, data, good = prepared[problem]
    mutation = dict(_wrong_cases(problem))[how]
    output = mutation(data, good)
    if isinstance(output, torch.Tensor) and isinstance(good, torch.Tensor) and output.dtype == good.dtype:
        assert not torch.equal(output, good), f"the {how} mutation did not change the output; pick a better case"
    ok, message = ref.check_implementation(data, output)
    assert not ok, f"{problem}: a {how} result was accepted"
    assert message, "a failing check must say why"


@pytest.mark.parametrize("problem", PROBLEMS)
def test_inputs_are_deterministic_and_seeded(problem: str) -> None:
    ref = import_reference(problem)
    case = CASES[problem]
    first, again = ref.generate_input(**case), ref.generate_input(**case)
    other = ref.generate_input(**{**case, "seed": case["seed"] + 1})
    for x, y, z in zip(first, again, other, strict=True):
        assert torch.equal(x, y) or (x.isnan().all() and y.isnan().all())
        if not x.isnan().all():
            assert not torch.equal(x, z), "a different seed must give different inputs"


@pytest.mark.parametrize("problem", PROBLEMS)
def test_check_rejects_wrong_type_shape_and_dtype(problem: str, prepared: dict) -> None:
    ref, data, good = prepared[problem]
    one_more = torch.cat([good.reshape(-1), good.reshape(-1)[:1]])
    for bad in ([1, 2, 3], good.tolist(), one_more, good.double()):
        ok, message = ref.check_implementation(data, bad)
        assert not ok and message


@pytest.mark.parametrize("problem", PROBLEMS)
def test_check_leaves_inputs_and_output_untouched(problem: str, prepared: dict) -> None:
    ref, data, good = prepared[problem]
    output, inputs = good.clone(), [t.clone() for t in data]
    ref.check_implementation(data, output)
    assert torch.equal(output, good)
    for before, after in zip(inputs, data, strict=True):
        assert torch.equal(before, after) or (before.isnan().all() and after.isnan().all())
