"""The Python kernel DSLs (Helion, TileLang, CuTe DSL): one row and one runtime each, the package found from its
metadata without importing it (or the runner says it does not offer the language), their compile caches in the
job's folder, the site folder they are installed in visible read-only to the sandbox; Helion end to end on the CPU
(its interpret mode), TileLang and CuTe DSL end to end on a GPU."""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from leaderboards.problems import ProblemFormatError, load_problem, load_problem_set
from runners.contract import LANGUAGES, Language, Mode, Verdict
from runners.entry import run_request
from runners.entry.session import _env, _ro_python
from runners.sandbox.view import sandbox_argv, scrubbed_env
from runners.settings import RunnerSettings
from runners.submission.languages import (
    RUNTIMES,
    CuteDslRuntime,
    HelionRuntime,
    TileLangRuntime,
    Unavailable,
    _PythonPackageRuntime,
)

REPO = Path(__file__).resolve().parents[2]
PROBLEMS = REPO / "problems"
DSLS = {
    Language.HELION: (HelionRuntime, "softmax", "helion.py"),
    Language.TILELANG: (TileLangRuntime, "rmsnorm", "tilelang.py"),
    Language.CUTE_DSL: (CuteDslRuntime, "vectoradd", "cute_dsl.py"),
}


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _site(root: Path, distribution: str, version: str, module: Path) -> Path:
    """A site folder as ``pip install --target`` leaves it: the package's metadata and its module, whose import
    fails (finding the package must never import it)."""
    info = root / f"{distribution.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n")
    (root / module).mkdir(parents=True)
    (root / module / "__init__.py").write_text("raise ImportError('the trusted entry must not import the DSL')\n")
    return root


@pytest.mark.parametrize("lang", list(DSLS))
def test_each_dsl_is_one_row_and_one_runtime_taking_python_files(lang: Language) -> None:
    info, runtime = LANGUAGES[lang], RUNTIMES[lang]
    assert runtime is DSLS[lang][0] and issubclass(runtime, _PythonPackageRuntime)
    assert info.takes("kernel.py") and not info.takes("kernel.cu") and info.problem_files == ()
    assert not info.compile_step, "a DSL compiles at its first call, inside the run (never timed)"
    assert info.needs_cuda == (lang is not Language.HELION), "Helion alone runs on a CPU (its interpret mode)"
    assert len(lang.value) <= 8, "leaderboards.lang is a String(8)"


def test_the_version_comes_from_the_package_metadata_on_a_pythonpath_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(_site(tmp_path / "site", "helion", "9.8.7", Path("helion"))))
    importlib.invalidate_caches()
    headers = HelionRuntime.headers(RunnerSettings())
    assert headers.version == "Helion 9.8.7 (helion package)"
    assert headers.include_dirs == (), "a Python DSL binds no folder of its own: its site folder is already bound"


def test_cute_dsl_is_found_in_its_dsl_packages_folder_without_the_pth_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = _site(tmp_path / "site", "nvidia-cutlass-dsl", "4.8.1", Path("nvidia_cutlass_dsl/dsl_packages/cutlass"))
    _site(site, "nvidia-cutlass-dsl-libs-core", "4.8.1", Path("nvidia_cutlass_dsl/dsl_packages/cutlass/cute"))
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    assert CuteDslRuntime.headers(RunnerSettings()).version == "CuTe DSL 4.8.1 (nvidia-cutlass-dsl package)"
    spec = CuteDslRuntime.module_spec()
    assert spec is not None and spec.origin == str(site / "nvidia_cutlass_dsl/dsl_packages/cutlass/__init__.py")
    monkeypatch.setattr(sys, "path", list(sys.path))  # prepare() adds the folder, as the package's .pth file would
    CuteDslRuntime(tmp_path).prepare()
    assert sys.path[0] == str(site / "nvidia_cutlass_dsl" / "dsl_packages")


def test_a_cutlass_module_of_another_package_is_not_cute_dsl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = _site(tmp_path / "site", "nvidia-cutlass-dsl", "4.8.1", Path("cutlass"))  # metadata, but no DSL folder
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(CuteDslRuntime, "dsl_packages", classmethod(lambda cls: None))
    importlib.invalidate_caches()
    with pytest.raises(Unavailable, match=r"does not offer CuTe DSL: nvidia-cutlass-dsl 4\.8\.1 is installed"):
        CuteDslRuntime.headers(RunnerSettings())


def test_cute_dsl_without_its_frontend_is_not_offered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiler's wheels without the frontend's (``cutlass.cute``, nvidia-cutlass-dsl-libs-core): a
    ``pip install --no-deps`` of 4.8.1 leaves a ``cutlass`` folder that every submission fails to import from."""
    site = _site(tmp_path / "site", "nvidia-cutlass-dsl", "4.8.1", Path("nvidia_cutlass_dsl/dsl_packages/cutlass"))
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    assert CuteDslRuntime.module_spec() is None
    with pytest.raises(Unavailable, match=r"does not offer CuTe DSL: .* its module 'cutlass\.cute' cannot be found"):
        CuteDslRuntime.headers(RunnerSettings())
    with pytest.raises(Unavailable, match=r"does not offer CuTe DSL"):
        CuteDslRuntime(tmp_path).load(tmp_path / "kernel.py")


@pytest.mark.parametrize("lang", list(DSLS))
def test_a_runner_without_the_package_says_which_one_to_install(
    lang: Language, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = RUNTIMES[lang]
    monkeypatch.setattr(runtime, "distribution", "kernelcup-no-such-dsl")
    with pytest.raises(Unavailable, match=rf"this runner does not offer {runtime.library}: .*pip install kernelcup-"):  # type: ignore[attr-defined]
        runtime.headers(RunnerSettings())


@pytest.mark.parametrize("lang", list(DSLS))
def test_loading_without_the_package_is_unavailable_not_an_import_error(
    lang: Language, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = RUNTIMES[lang]
    monkeypatch.setattr(runtime, "module_spec", classmethod(lambda cls: None))
    (tmp_path / "submission.py").write_text("raise SystemExit('never imported')\n")
    with pytest.raises(Unavailable, match=f"does not offer {runtime.library}"):  # type: ignore[attr-defined]
        runtime(tmp_path).load(tmp_path / "submission.py")


@pytest.mark.skipif(_installed("tilelang"), reason="TileLang is installed here")
def test_a_run_of_a_language_the_runner_lacks_is_refused_before_anything_runs() -> None:
    problem = load_problem(PROBLEMS / "rmsnorm").in_language(Language.TILELANG)
    source = (PROBLEMS / "rmsnorm" / "templates" / "tilelang.py").read_bytes()
    result = run_request(problem.request("rmsnorm.py", source, Mode.TEST, device="cuda"))
    assert result.verdict is Verdict.INFRASTRUCTURE_ERROR, "the runner's lack, never the submission's"
    assert result.message.startswith("this runner does not offer TileLang") and "runners check" in result.message
    assert not result.system.ran


def test_a_local_worker_without_the_package_refuses_the_job_without_blame(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from runners.launchers.base import DeviceUnavailable
    from runners.launchers.local import LocalLauncher

    monkeypatch.setattr(CuteDslRuntime, "distribution", "kernelcup-no-such-dsl")
    problem = load_problem(PROBLEMS / "vectoradd").in_language(Language.CUTE_DSL)
    source = (PROBLEMS / "vectoradd" / "templates" / "cute_dsl.py").read_bytes()
    request = problem.request("add.py", source, Mode.TEST, device="cuda")
    with pytest.raises(DeviceUnavailable, match="does not offer CuTe DSL"):
        asyncio.run(LocalLauncher(RunnerSettings()).run(request, job=None))  # type: ignore[arg-type]


def test_runners_check_names_each_dsl_and_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    from runners.submission.languages import self_tests

    monkeypatch.setattr(TileLangRuntime, "distribution", "kernelcup-no-such-dsl")
    found = self_tests(RunnerSettings())
    assert {LANGUAGES[lang].display for lang in DSLS} <= set(found)
    assert "pip install kernelcup-no-such-dsl" in (found[LANGUAGES[Language.TILELANG].display] or "")


@pytest.mark.parametrize("lang", list(DSLS))
def test_every_compile_cache_of_the_language_is_in_the_job_folder(lang: Language, tmp_path: Path) -> None:
    env = scrubbed_env(tmp_path / "sub")
    for var in RUNTIMES[lang].cache_vars:  # type: ignore[attr-defined]
        assert Path(env[var]).is_relative_to(tmp_path / "sub"), f"{var}={env[var]} is outside the job folder"


def test_helion_runs_in_its_interpret_mode_where_triton_would_interpret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CPU run's sandbox sets TRITON_INTERPRET=1; Helion refuses both modes at once and its own runs the kernel's
    body in eager PyTorch, so the Helion runtime trades one for the other. On a GPU neither is set."""
    assert _env({}, "cpu")["TRITON_INTERPRET"] == "1" and "TRITON_INTERPRET" not in _env({}, "cuda")
    monkeypatch.setenv("HELION_AUTOTUNE_EFFORT", "full")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.delenv("HELION_INTERPRET", raising=False)
    HelionRuntime(tmp_path).prepare()
    assert os.environ.get("HELION_INTERPRET") == "1" and "TRITON_INTERPRET" not in os.environ
    monkeypatch.delenv("HELION_INTERPRET")
    HelionRuntime(tmp_path).prepare()
    assert "HELION_INTERPRET" not in os.environ, "a GPU run compiles to Triton for real"


def test_helion_never_autotunes_inside_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HELION_AUTOTUNE_EFFORT", "full")
    HelionRuntime(tmp_path).prepare()
    assert os.environ["HELION_AUTOTUNE_EFFORT"] == "none"


def test_a_pythonpath_site_folder_is_bound_read_only_into_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GPU machines install the DSLs with ``pip install --target`` on PYTHONPATH: the submission must import
    them, and must not be able to change them for later runs."""
    site = _site(tmp_path / "site", "tilelang", "0.1.15", Path("tilelang"))
    monkeypatch.syspath_prepend(str(site))
    ro = _ro_python()
    assert site.resolve() in ro
    job = tmp_path / "job"
    job.mkdir()
    argv = sandbox_argv("bwrap", job, tuple(ro), allow_gpu=False, hardened=True)
    binds = {argv[i + 1] for i, arg in enumerate(argv) if arg == "--ro-bind"}
    writable = {argv[i + 1] for i, arg in enumerate(argv) if arg == "--bind"}
    assert str(site.resolve()) in binds and writable == {str(job)}
    assert str(site.resolve()) in _env({}, "cuda")["PYTHONPATH"].split(":")


def test_a_pip_target_folder_is_vetted_like_site_packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A DSL's install (TileLang's holds 4,000 files, with its bundled TVM and CUTLASS) is a vendor's tree: its top
    level is searched for secret-looking names, not every file of it on every run (1.7 s a sandbox with the three
    DSLs installed); a folder without pip's metadata is still searched at every depth."""
    from runners.sandbox import view

    site = _site(tmp_path / "site", "tilelang", "0.1.15", Path("tilelang"))
    for i in range(20):
        (site / "tilelang" / f"f{i}.py").write_text("")
    (site / ".env").write_text("TOKEN=1")
    monkeypatch.setattr(view, "MAX_WALKED_ENTRIES", 10)
    job = tmp_path / "job"
    job.mkdir()
    argv = sandbox_argv("bwrap", job, (site,), allow_gpu=False, hardened=True)
    assert ["--ro-bind", "/dev/null", str(site / ".env")] == argv[argv.index(str(site / ".env")) - 2 :][:3]
    (site / "tilelang-0.1.15.dist-info").rename(tmp_path / "moved")
    with pytest.raises(view.UnvettedPath):
        sandbox_argv("bwrap", job, (site,), allow_gpu=False, hardened=True)


def test_a_problem_set_runs_a_python_problem_in_a_dsl_with_its_template(tmp_path: Path) -> None:
    shutil.copytree(PROBLEMS / "softmax", tmp_path / "problems" / "softmax")
    (tmp_path / "set.yaml").write_text(
        "name: dsl\nproblems:\n"
        "  - {directory: problems/softmax, name: softmax_helion, lang: helion, deadline: 2030-01-01, devices: [H100]}\n"
        "  - {directory: problems/softmax, deadline: 2030-01-01, devices: [H100]}\n"
    )
    _, problems = load_problem_set(tmp_path / "set.yaml")
    helion, python = problems["softmax_helion"], problems["softmax"]
    assert helion.task.lang is Language.HELION and set(helion.templates) == {"helion"}
    assert python.task.lang is Language.PYTHON and {"pytorch", "helion"} <= set(python.templates)
    assert helion.request("s.py", b"x", Mode.TEST, device="cuda").lang is Language.HELION


def test_a_problem_set_cannot_give_a_problem_a_language_of_other_files(tmp_path: Path) -> None:
    shutil.copytree(PROBLEMS / "softmax", tmp_path / "problems" / "softmax")
    (tmp_path / "set.yaml").write_text(
        "name: dsl\nproblems:\n"
        "  - {directory: problems/softmax, lang: cutlass, deadline: 2030-01-01, devices: [H100]}\n"
    )
    with pytest.raises(ProblemFormatError) as err:
        load_problem_set(tmp_path / "set.yaml")
    assert "problems.0.lang" in str(err.value) and "lang: cutlass" in str(err.value)


def test_the_dsl_problem_set_loads() -> None:
    _, problems = load_problem_set(PROBLEMS / "dsl.yaml")
    assert {name: p.task.lang for name, p in problems.items()} == {
        "softmax_helion": Language.HELION,
        "rmsnorm_tilelang": Language.TILELANG,
        "vectoradd_cute": Language.CUTE_DSL,
        "grayscale_cute": Language.CUTE_DSL,
        "matmul_cute": Language.CUTE_DSL,
    }
    assert all(set(p.templates) == {p.task.lang.value} for p in problems.values())


@pytest.mark.skipif(not _installed("helion"), reason="helion is not installed (the dev extra installs it)")
def test_helion_on_the_cpu_reports_its_version_and_is_accepted() -> None:
    problem = load_problem(PROBLEMS / "softmax").in_language(Language.HELION)
    source = (PROBLEMS / "softmax" / "solutions" / "correct" / "helion.py").read_bytes()
    result = run_request(problem.request("softmax.py", source, Mode.TEST, device="cpu"))
    assert result.verdict is Verdict.ACCEPTED, result.message + (result.stderr or "")[-2000:]
    assert result.system.headers == f"Helion {importlib.metadata.version('helion')} (helion package)"


def _gpu_only_sources() -> list[object]:
    folders = {Language.TILELANG: ["rmsnorm"], Language.CUTE_DSL: ["vectoradd", "grayscale", "matmul"]}
    return [
        pytest.param(lang, path, id=str(path.relative_to(PROBLEMS)))
        for lang, names in folders.items()
        for name in names
        for path in sorted([*(PROBLEMS / name).glob("solutions/*/*.py"), *(PROBLEMS / name).glob("templates/*.py")])
        if f"lang: {lang.value}" in path.read_text(encoding="utf-8") or path.stem == lang.value.replace("-", "_")
    ]


@pytest.mark.slow
@pytest.mark.parametrize(("lang", "path"), _gpu_only_sources())
def test_every_tilelang_and_cute_dsl_source_compiles_for_hopper_without_a_gpu(lang: Language, path: Path) -> None:
    """TileLang (its code generator and nvcc) and CuTe DSL (MLIR and ptxas) build each solution and template for
    sm_90a for every test case of its problem (CuTe DSL: and every benchmark case), on a machine without a GPU;
    skipped where the package is missing."""
    try:
        RUNTIMES[lang].headers(RunnerSettings())
    except Unavailable as exc:
        pytest.skip(str(exc))
    if lang is Language.TILELANG and shutil.which("nvcc") is None:
        pytest.skip("TileLang compiles with nvcc, which is not on PATH")
    cute = lang is Language.CUTE_DSL  # its benchmark shapes too: a fast path (TMA + WGMMA) only large shapes take
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("compile_dsl.py")), lang.value, str(path)]
        + (["--benchmarks"] if cute else []),
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *sys.path[1:]])},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    problem = next(p for p in path.parents if (p / "task.yml").is_file())
    task = load_problem(problem).task
    assert len(got["compiled"]) == len(task.tests) + (len(task.benchmarks) if cute else 0)
    print(f"{path.name}: {len(got['compiled'])} test shapes in {got['seconds']} s")


@pytest.mark.gpu
@pytest.mark.parametrize("lang", list(DSLS))
def test_the_dsl_solution_is_accepted_and_timed_on_the_gpu(lang: Language) -> None:
    runtime, folder, name = DSLS[lang]
    problem = load_problem(PROBLEMS / folder).in_language(lang)
    source = (PROBLEMS / folder / "solutions" / "correct" / name).read_bytes()
    result = run_request(problem.request(name, source, Mode.BENCHMARK, device="cuda"))
    if result.message.startswith("this runner does not offer"):
        pytest.skip(result.message)
    assert result.verdict is Verdict.ACCEPTED, result.message + (result.stderr or "")[-3000:]
    assert result.system.headers and result.system.headers.startswith(runtime.library)
    assert all(b.stats is not None and b.stats.median_ns > 0 for b in result.benchmarks)
    print(lang.value, result.system.headers, [round(b.stats.median_ns / 1e3, 1) for b in result.benchmarks if b.stats])
