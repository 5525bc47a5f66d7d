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
