"""The problems on several GPUs (docs/multigpu.md): task.yml's world_size and per-world-size cases, the multi-rank
reference format, both sides of each check's tolerance (in-process on the CPU), and on a machine with two GPUs the
whole proof: every solution gets its verdict with NCCL, and timings repeat within 2%."""

from __future__ import annotations

import shutil
import statistics
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml
from problem_catalog import PROBLEMS, import_reference

from leaderboards.problems import ProblemFormatError, Task, load_problem
from runners.contract import Mode, Verdict

MULTI = ("allreduce", "allgather_gemm")


def _task(**overrides: Any) -> dict[str, Any]:
    return {
        "description": "Sum over ranks.",
        "world_size": 2,
        "tests": [{"size": 3, "seed": 1}],
        "benchmarks": [{"size": 100, "seed": 2, "world_size": 2}, {"size": 100, "seed": 3, "world_size": 8}],
        **overrides,
    }


# ---- the format -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", MULTI)
def test_each_device_runs_its_own_world_sizes_cases(name: str) -> None:
    problem = load_problem(PROBLEMS / name)
    cpu = problem.request("s.py", b"", Mode.TEST, device="cpu")
    assert cpu.world_size == 2 and cpu.baselines == [] and len(cpu.benchmarks) == 3
    for device, world in (("H200x2", 2), ("H100x4", 4), ("H100x8", 8)):
        request = problem.request("s.py", b"", Mode.RANKED, device="cuda", device_name=device, seed=7)
        assert request.world_size == world and len(request.tests) == len(problem.task.tests)
        assert len(request.benchmarks) == 3 and all("world_size" not in c for c in request.benchmarks)
    with pytest.raises(ProblemFormatError, match="no case runs at world_size 3"):
        problem.request("s.py", b"", Mode.TEST, device="cuda", device_name="H100x3")


def test_a_one_gpu_problem_is_what_it_was() -> None:
    problem = load_problem(PROBLEMS / "vectorsum")
    assert not problem.task.multi_rank and "world_size" not in problem.snapshot()["task"]
    request = problem.request("s.py", b"", Mode.TEST, device="cuda", device_name="H100")
    assert request.world_size == 1 and request.benchmarks == problem.task.benchmarks


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"baselines": [{"label": "compiled", "function": "compiled"}]}, "has no baselines"),
        ({"library_policy": {"deny": ["cublas"]}}, "cannot have a library_policy"),
        ({"tests": [{"size": 3, "seed": 1, "world_size": 4}]}, "no test runs at world_size 2"),
        ({"tests": [{"size": 3, "seed": 1, "world_size": 0}]}, "whole number from 1 to 16"),
        ({"world_size": 32}, "less than or equal to 16"),
    ],
)
def test_task_yml_refuses_what_cannot_run_at_its_world_size(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Task.model_validate(_task(**overrides))


def test_a_multi_rank_reference_must_take_rank_and_world_size(tmp_path: Path) -> None:
    folder = tmp_path / "sum"
    folder.mkdir()
    (folder / "task.yml").write_text(yaml.safe_dump(_task()))
    (folder / "reference.py").write_text(
        "def generate_input(size, seed):\n    return ()\n\ndef ref_kernel(inputs):\n    return []\n\n"
        "def check_implementation(inputs, rank, output):\n    return True, ''\n"
    )
    with pytest.raises(ProblemFormatError, match=r"needs generate_input\(rank, world_size, \.\.\.\)"):
        load_problem(folder)


# ---- both sides of each tolerance -------------------------------------------------------------------------------
def _allreduce_inputs(world: int, size: int = 100_003) -> list[tuple[torch.Tensor]]:
    ref = import_reference("allreduce")
    return [ref.generate_input(rank=r, world_size=world, size=size, seed=31) for r in range(world)]


@pytest.mark.parametrize("world", [2, 8])
def test_allreduce_accepts_any_order_of_bf16_additions_and_refuses_a_missing_rank(world: int) -> None:
    ref = import_reference("allreduce")
    inputs = _allreduce_inputs(world)
    xs = [x for (x,) in inputs]
    ring = xs[0].clone()
    for x in xs[1:]:
        ring = (ring.float() + x.float()).to(torch.bfloat16)  # each partial sum rounded to bf16, as a ring does
    reverse = xs[-1].clone()
    for x in reversed(xs[:-1]):
        reverse = (reverse.float() + x.float()).to(torch.bfloat16)
    for rank in range(world):
        for honest in (ref.ref_kernel(inputs)[rank], ring, reverse):
            ok, message = ref.check_implementation(inputs, rank, honest)
            assert ok, message
    missing = torch.stack([x.float() for x in xs[:-1]]).sum(0).to(torch.bfloat16)
    assert not ref.check_implementation(inputs, 0, missing)[0]
    assert not ref.check_implementation(inputs, 0, xs[0] * world)[0]
    assert not ref.check_implementation(inputs, 0, ring.float())[0]  # the wrong dtype


def test_allgather_gemm_accepts_fp32_accumulation_in_any_order_and_refuses_wrong_rows() -> None:
    ref = import_reference("allgather_gemm")
    world = 4
    inputs = [ref.generate_input(rank=r, world_size=world, m=24, k=2048, n=40, seed=5) for r in range(world)]
    a_all = torch.cat([a for a, _ in inputs])
    for rank in range(world):
        b = inputs[rank][1]
        halves = [(ac.float() @ bc.float()) for ac, bc in zip(a_all.chunk(2, 1), b.chunk(2, 0), strict=True)]
        split_k = (halves[0] + halves[1]).to(torch.bfloat16)  # fp32 partials summed once
        for honest in (ref.ref_kernel(inputs)[rank], split_k):
            ok, message = ref.check_implementation(inputs, rank, honest)
            assert ok, message
    b = inputs[1][1]
    reversed_rows = torch.cat([a for a, _ in reversed(inputs)]).float() @ b.float()
    assert not ref.check_implementation(inputs, 1, reversed_rows.to(torch.bfloat16))[0]
    own_only = torch.cat([inputs[1][0]] * world).float() @ b.float()
    assert not ref.check_implementation(inputs, 1, own_only.to(torch.bfloat16))[0]
    chunks = [(ac.float() @ bc.float()).to(torch.bfloat16) for ac, bc in zip(a_all.chunk(64, 1), b.chunk(64, 0),
                                                                              strict=True)]  # fmt: skip
    bf16_accumulator = chunks[0]
    for c in chunks[1:]:
        bf16_accumulator = (bf16_accumulator + c).to(torch.bfloat16)
    assert not ref.check_implementation(inputs, 1, bf16_accumulator)[0]


@pytest.mark.parametrize("name", MULTI)
def test_speed_of_light_grows_with_the_world_size_or_stays_a_lower_bound(name: str) -> None:
    ref = import_reference(name)
    case = load_problem(PROBLEMS / name).task.benchmarks[0]
    case = {k: v for k, v in case.items() if k != "world_size"}
    one, eight = ref.speed_of_light(**case), ref.speed_of_light(**case, world_size=8)
    assert eight["bytes"] >= one["bytes"] > 0 and eight["flops"] >= one["flops"] > 0


# ---- the proof on a machine with two GPUs ---------------------------------------------------------------------
def _two_gpus() -> None:
    if not torch.cuda.is_available() or torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")


def _solutions(name: str) -> list[Path]:
    folder = PROBLEMS / name / "solutions"
    return [PROBLEMS / name / "templates" / "pytorch.py", *sorted(folder.glob("correct/*.py")),
            *sorted(folder.glob("wrong/*.py"))]  # fmt: skip


@pytest.mark.gpu
@pytest.mark.parametrize("path", [p for name in MULTI for p in _solutions(name)],
                         ids=lambda p: str(p.relative_to(PROBLEMS)))  # fmt: skip
def test_every_solution_gets_its_verdict_on_two_gpus(path: Path) -> None:
    from runners.entry import run_request

    _two_gpus()
    problem = load_problem(PROBLEMS / path.relative_to(PROBLEMS).parts[0])
    request = problem.request(path.name, path.read_bytes(), Mode.TEST, device="cuda", device_name="cudax2")
    result = run_request(request)
    expected = Verdict.WRONG_ANSWER if path.parent.name == "wrong" else Verdict.ACCEPTED
    assert result.verdict is expected, result.message + result.stderr[-3000:]
    assert result.system.world_size == 2 and result.system.sandboxed


@pytest.mark.gpu
@pytest.mark.parametrize("name", MULTI)
def test_ranked_timings_on_two_gpus_repeat_within_two_percent(name: str) -> None:
    from runners.entry import run_request

    _two_gpus()
    problem = load_problem(PROBLEMS / name)
    path = PROBLEMS / name / "templates" / "pytorch.py"  # NCCL's collective, then (allgather_gemm) cuBLAS
    medians: list[list[float]] = []
    for seed in (11, 12, 13):
        request = problem.request(path.name, path.read_bytes(), Mode.RANKED, device="cuda", device_name="cudax2",
                                  seed=seed)  # fmt: skip
        result = run_request(request)
        assert result.verdict is Verdict.ACCEPTED, result.message + result.stderr[-3000:]
        medians.append([b.stats.median_ns for b in result.benchmarks if b.stats is not None])
    for case, values in enumerate(zip(*medians, strict=True)):
        spread = (max(values) - min(values)) / statistics.median(values)
        assert spread <= 0.02, f"{name} benchmark {case + 1}: medians {values} spread {spread:.1%}"


def test_the_multigpu_set_loads_and_a_set_must_name_each_devices_gpu_count(tmp_path: Path) -> None:
    from leaderboards.problems import load_problem_set

    _, problems = load_problem_set(PROBLEMS / "multigpu.yaml")
    assert set(problems) == set(MULTI)
    shutil.copytree(PROBLEMS / "allreduce", tmp_path / "allreduce")
    shutil.copytree(PROBLEMS / "vectorsum", tmp_path / "vectorsum")
    bad = tmp_path / "set.yaml"
    for directory, devices, message in (
        ("allreduce", ["H100"], "name the count, e.g. H100x2"),
        ("allreduce", ["H100x3"], "no test or benchmark for world_size 3"),
        ("vectorsum", ["H100x8"], "H100x8 runs 8 ranks; vectorsum runs on one GPU"),
    ):
        entries = [{"directory": directory, "deadline": "2030-01-01", "devices": devices}]
        bad.write_text(yaml.safe_dump({"name": "s", "problems": entries}))
        with pytest.raises(ProblemFormatError, match=message):
            load_problem_set(bad)
