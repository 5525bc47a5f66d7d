"""The CUTLASS and ThunderKittens languages: their headers are found (or the runner says it does not offer the
language), their solutions compile with nvcc through the real runtime, and on a GPU they run end to end."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from leaderboards.problems import load_problem
from runners.contract import LANGUAGES, Language, Mode, Verdict
from runners.entry import run_request
from runners.entry.session import SessionSpec
from runners.settings import RunnerSettings
from runners.submission import languages
from runners.submission.languages import CutlassRuntime, ThunderKittensRuntime, Unavailable

REPO = Path(__file__).resolve().parents[2]
PROBLEMS = {
    Language.CUTLASS: REPO / "problems" / "matmul_cutlass",
    Language.THUNDERKITTENS: REPO / "problems" / "matmul_tk",
}
TK_COMMIT = "0b55588d2769dde0c7a9a606ffc015b0ca7a9551"


def _cutlass_tree(root: Path, version: tuple[int, int, int] = (4, 2, 1)) -> Path:
    include = root / "include"
    (include / "cute").mkdir(parents=True)
    (include / "cutlass").mkdir()
    major, minor, patch = version
    (include / "cutlass" / "version.h").write_text(
        f"#define CUTLASS_MAJOR {major}\n#define CUTLASS_MINOR {minor}\n#define CUTLASS_PATCH {patch} \n"
    )
    return include


def test_cutlass_headers_from_the_setting_with_tools_util_beside_them(tmp_path: Path) -> None:
    include = _cutlass_tree(tmp_path / "cutlass")
    util = tmp_path / "cutlass" / "tools" / "util" / "include"
    util.mkdir(parents=True)
    headers = CutlassRuntime.headers(RunnerSettings(cutlass_include=include))
    assert headers.include_dirs == (include.resolve(), util.resolve())
    assert headers.version == "CUTLASS 4.2.1 (KERNELCUP_CUTLASS_INCLUDE)"


def test_cutlass_headers_from_the_nvidia_cutlass_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "site" / "cutlass_library"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('finding the headers must not import the package')\n")
    include = _cutlass_tree(package / "source", (4, 2, 0))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    importlib.invalidate_caches()
    headers = CutlassRuntime.headers(RunnerSettings(cutlass_include=None))
    assert headers.include_dirs == (include.resolve(),)
    assert headers.version == "CUTLASS 4.2.0 (nvidia-cutlass package)"


def test_a_runner_without_cutlass_says_how_to_add_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(languages.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(Unavailable, match=r"does not offer CUTLASS.*pip install nvidia-cutlass.*KERNELCUP_CUTLASS_"):
        CutlassRuntime.headers(RunnerSettings(cutlass_include=None))


def test_a_cutlass_setting_without_headers_names_the_folder(tmp_path: Path) -> None:
    with pytest.raises(Unavailable, match=f"does not offer CUTLASS: {tmp_path} .*holds no cutlass/"):
        CutlassRuntime.headers(RunnerSettings(cutlass_include=tmp_path))


def test_thunderkittens_headers_with_its_prototype_folder_and_pinned_commit(tmp_path: Path) -> None:
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "kittens.cuh").write_text("#pragma once\n")
    (tmp_path / "prototype").mkdir()
    (tmp_path / "REVISION").write_text(TK_COMMIT + "\n")
    headers = ThunderKittensRuntime.headers(RunnerSettings(thunderkittens_include=tmp_path / "include"))
    assert headers.include_dirs == ((tmp_path / "include").resolve(), (tmp_path / "prototype").resolve())
    assert headers.version == f"ThunderKittens {TK_COMMIT[:12]}"


@pytest.mark.parametrize("configured", [False, True])
def test_a_runner_without_thunderkittens_says_how_to_add_it(tmp_path: Path, configured: bool) -> None:
    settings = RunnerSettings(thunderkittens_include=tmp_path if configured else None)
    why = f"{tmp_path} has no kittens.cuh" if configured else "KERNELCUP_THUNDERKITTENS_INCLUDE is not set"
    with pytest.raises(Unavailable, match=f"does not offer ThunderKittens \\({why}\\): set KERNELCUP_THUNDER"):
        ThunderKittensRuntime.headers(settings)


def test_a_language_the_runner_lacks_is_refused_before_anything_runs() -> None:
    problem = load_problem(PROBLEMS[Language.THUNDERKITTENS])
    source = (PROBLEMS[Language.THUNDERKITTENS] / "templates" / "thunderkittens.cu").read_bytes()
    request = problem.request("matmul.cu", source, Mode.TEST, device="cuda")
    result = run_request(request, settings=RunnerSettings(thunderkittens_include=None))
    # the runner's lack, never the submission's: an infrastructure error (retried elsewhere), no host path in it
    assert result.verdict is Verdict.INFRASTRUCTURE_ERROR
    assert result.message.startswith("this runner does not offer ThunderKittens")
    assert "KERNELCUP_" not in result.message and "runners check" in result.message
    assert not result.system.ran


def test_a_local_worker_without_the_headers_refuses_the_job_without_blame() -> None:
    import asyncio

    from runners.launchers.base import DeviceUnavailable
    from runners.launchers.local import LocalLauncher

    problem = load_problem(PROBLEMS[Language.THUNDERKITTENS])
    source = (PROBLEMS[Language.THUNDERKITTENS] / "templates" / "thunderkittens.cu").read_bytes()
    request = problem.request("matmul.cu", source, Mode.TEST, device="cuda")
    launcher = LocalLauncher(RunnerSettings(thunderkittens_include=None))
    with pytest.raises(DeviceUnavailable, match="does not offer ThunderKittens"):
        asyncio.run(launcher.run(request, job=None))  # type: ignore[arg-type]


def test_loading_without_the_headers_is_unavailable_not_a_compile_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(languages.HEADERS_ENV, raising=False)
    with pytest.raises(Unavailable, match="does not offer CUTLASS"):
        CutlassRuntime(tmp_path).load(tmp_path / "submission.cu")


def test_cu_files_belong_to_every_cuda_language_and_keys_fit_the_leaderboard_column() -> None:
    for key in (Language.CUDA, Language.CUTLASS, Language.THUNDERKITTENS):
        info = LANGUAGES[key]
        assert info.takes("matmul.cu") and info.takes("K.CU") and not info.takes("matmul.py")
        assert info.needs_cuda and info.compile_step and info.problem_files == ("harness.cu",)
    assert all(len(key.value) <= 8 for key in LANGUAGES), "leaderboards.lang is a String(8)"


def test_each_problem_is_in_its_language_with_a_template() -> None:
    for key, folder in PROBLEMS.items():
        problem = load_problem(folder)
        assert problem.task.lang is key
        assert [b.function for b in problem.task.baselines] == ["cublas"]
        assert len(problem.templates) == 1


# ---- nvcc through the real runtime ---------------------------------------------------------------------------


def _sources() -> list[object]:
    return [
        pytest.param(key, path, id=f"{folder.name}/{path.relative_to(folder)}")
        for key, folder in PROBLEMS.items()
        for path in sorted([*folder.glob("solutions/*/*.cu"), *folder.glob("templates/*.cu")])
    ]


@pytest.mark.slow
@pytest.mark.parametrize(("lang", "path"), _sources())
def test_every_solution_and_template_compiles_with_nvcc(lang: Language, path: Path, tmp_path: Path) -> None:
    """nvcc compiles each source with the harness, the language's flags and its headers, as a run would. Without
    nvcc, or without the language's headers on this machine (KERNELCUP_CUTLASS_INCLUDE or the nvidia-cutlass
    package; KERNELCUP_THUNDERKITTENS_INCLUDE), it is skipped with the reason."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    try:
        languages.RUNTIMES[lang].headers(RunnerSettings())
    except Unavailable as exc:
        pytest.skip(str(exc))
    script = Path(__file__).with_name("compile_language.py")
    done = subprocess.run(
        [sys.executable, str(script), lang.value, str(path), str(tmp_path / "job")],
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{path.name}: {got['command']}: {got['seconds']} s, loaded={got['loaded']}")
    if got["loaded"]:
        return  # a PyTorch with CUDA: built, linked and imported
    # A CPU-only PyTorch: nvcc must have written the object; only the link may fail, for torch's CUDA libraries.
    assert got["objects"] == ["harness.cuda.o"], got["error"]
    errors = [line for line in got["error"].splitlines() if "error:" in line or "cannot find" in line]
    assert errors and all("cannot find -l" in e or "ld returned" in e or "subcommand failed" in e for e in errors), (
        got["error"][-4000:]
    )


# ---- on the GPU ----------------------------------------------------------------------------------------------


def _offered(lang: Language) -> RunnerSettings:
    settings = RunnerSettings()
    try:
        languages.RUNTIMES[lang].headers(settings)
    except Unavailable as exc:
        pytest.skip(str(exc))
    return settings


@pytest.mark.gpu
@pytest.mark.parametrize("lang", list(PROBLEMS), ids=[k.value for k in PROBLEMS])
def test_the_correct_solution_is_accepted_and_timed_against_cublas(lang: Language) -> None:
    """The fast solution runs end to end on the GPU (sandboxed, its headers bound read-only), with its library's
    version in the system info; benchmark mode times cuBLAS's fp16 GEMM on the same inputs. CUTLASS must be
    within 10% of cuBLAS at 4096x5120x4096 on an H100; ThunderKittens' ratio is printed."""
    settings = _offered(lang)
    folder = PROBLEMS[lang]
    (solution,) = folder.glob("solutions/correct/*.cu")
    problem = load_problem(folder)
    request = problem.request(solution.name, solution.read_bytes(), Mode.BENCHMARK, device="cuda")
    result = run_request(request, settings=settings)
    assert result.verdict is Verdict.ACCEPTED, f"{result.message}\n{result.compile_output[-3000:]}"
    assert result.system.headers and result.system.headers.startswith(LANGUAGES[lang].short)
    cases = [(b["m"], b["k"], b["n"]) for b in request.benchmarks]
    big = cases.index((4096, 5120, 4096))
    (cublas,) = [b for b in result.baselines if b.label == "cuBLAS"]
    ratios = dict(zip(cases, cublas.speedups, strict=True))
    print(f"{lang.value} on {result.system.gpu_name}: speedup over cuBLAS per case {ratios} ({result.system.headers})")
    assert cublas.speedups[big] is not None, cublas.note
    if lang is Language.CUTLASS and "H100" in (result.system.gpu_name or ""):
        assert cublas.speedups[big] >= 0.9, f"CUTLASS at 4096x5120x4096 is {cublas.speedups[big]:.2f}x cuBLAS"


@pytest.mark.gpu
@pytest.mark.parametrize("lang", list(PROBLEMS), ids=[k.value for k in PROBLEMS])
def test_the_wrong_solution_is_a_wrong_answer_on_the_gpu(lang: Language) -> None:
    settings = _offered(lang)
    folder = PROBLEMS[lang]
    (solution,) = folder.glob("solutions/wrong/*.cu")
    request = load_problem(folder).request(solution.name, solution.read_bytes(), Mode.TEST, device="cuda")
    result = run_request(request, settings=settings)
    assert result.verdict is Verdict.WRONG_ANSWER, f"{result.message}\n{result.compile_output[-3000:]}"


def test_the_entry_binds_only_the_include_folders_read_only_and_tells_the_submission(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a run of a library language hands its sandboxes, up to the start of the processes (no GPU needed)."""
    import runners.entry

    root = tmp_path / "ThunderKittens"
    (root / "include").mkdir(parents=True)
    (root / "include" / "kittens.cuh").write_text("#pragma once\n")
    (root / "prototype").mkdir()
    (root / "REVISION").write_text(TK_COMMIT)
    (root / "secrets.txt").write_text("the rest of the checkout is never bound")
    seen: dict[str, object] = {}

    class Stop(Exception):
        pass

    def session(spec: SessionSpec) -> None:
        seen.update(extra_ro=spec.shape.extra_ro, submission_env=dict(spec.shape.submission_env))
        raise Stop

    monkeypatch.setattr(runners.entry, "Session", session)
    monkeypatch.setattr(runners.entry, "allocator_library", lambda cache: tmp_path / "alloc" / "arena_alloc.so")
    folder = PROBLEMS[Language.THUNDERKITTENS]
    source = (folder / "templates" / "thunderkittens.cu").read_bytes()
    request = load_problem(folder).request("matmul.cu", source, Mode.TEST, device="cuda")
    settings = RunnerSettings(thunderkittens_include=root / "include", cache_dir=tmp_path / "cache")
    result = run_request(request, settings=settings)
    assert "Stop" in result.message  # stopped where the sandboxes would start
    dirs = ((root / "include").resolve(), (root / "prototype").resolve())
    assert seen["extra_ro"] == (tmp_path / "alloc", *dirs)
    assert seen["submission_env"] == {languages.HEADERS_ENV: os.pathsep.join(map(str, dirs))}
