"""Before anything runs: is the file one we can evaluate, and the job's folders and files."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from runners.contract import LANGUAGES, Language, RunRequest, Verdict, language_of_file
from runners.settings import RunnerSettings
from runners.submission.languages import RUNTIMES, Headers, Unavailable

ALLOCATOR_SOURCE = Path(__file__).resolve().parents[1] / "ipc" / "arena_alloc.cpp"


class Rejected(Exception):
    """The file is refused before evaluation; the message says why and what to do."""

    def __init__(self, verdict: Verdict, message: str) -> None:
        super().__init__(message)
        self.verdict = verdict


def check_submission(request: RunRequest) -> str:
    """The submission's text, or :class:`Rejected` with a message the user can act on."""
    sub = request.submission
    size = len(sub.content)
    if size > request.limits.max_submission_bytes:
        limit = request.limits.max_submission_bytes
        raise Rejected(Verdict.REJECTED, f"{sub.name} is {size:,} bytes; the limit is {limit:,} bytes")
    lang = LANGUAGES[Language(request.lang)]
    suffix = PurePosixPath(sub.name).suffix.lower()
    if suffix not in lang.suffixes:
        other = language_of_file(sub.name)
        wanted = " or ".join(lang.suffixes)
        if other is None:
            raise Rejected(Verdict.REJECTED, f"{sub.name}: unknown file type {suffix or '(none)'}; problem "
                           f"{request.problem} takes {lang.display} submissions ({wanted} files)")  # fmt: skip
        raise Rejected(Verdict.REJECTED, f"problem {request.problem} takes {lang.display} submissions ({wanted} "
                       f"files), not {other.display} ({suffix})")  # fmt: skip
    if b"\x00" in sub.content:
        raise Rejected(Verdict.REJECTED, f"{sub.name} is not a text file (it contains NUL bytes)")
    try:
        text = sub.content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Rejected(Verdict.REJECTED, f"{sub.name} is not UTF-8 text (invalid byte at offset {exc.start})") from None
    if not text.strip():
        raise Rejected(Verdict.REJECTED, f"{sub.name} is empty; start from one of the problem's templates")
    if request.device == "cpu" and lang.needs_cuda:
        raise Rejected(
            Verdict.NEEDS_CUDA,
            f"this submission needs a CUDA device: {lang.display} compiles for the GPU; run it on a GPU runner",
        )
    missing = [f for f in lang.problem_files if f not in request.files]
    if missing:
        raise Rejected(Verdict.REJECTED, f"problem {request.problem} has no {', '.join(missing)} to compile "
                       f"{lang.display} against; submit another language")  # fmt: skip
    return text


class NotOffered(Exception):
    """This runner lacks what the request's language compiles against: the operator's to fix, never the user's."""


def not_offered_text(lang: Language) -> str:
    """What a user is told when a runner lacks a language (no host paths: the operator's details are in
    ``kernelcup runners check``)."""
    return (f"this runner does not offer {LANGUAGES[lang].display}: the run was not started; its operator installs "
            "the library (`kernelcup runners check` says how)")  # fmt: skip


def language_headers(request: RunRequest, settings: RunnerSettings) -> Headers | None:
    """The C++ library the request's language compiles against, found on this runner (None: it needs none), or
    :class:`NotOffered` when this runner does not offer the language (an operator's matter, not the submission's)."""
    try:
        return RUNTIMES[Language(request.lang)].headers(settings)
    except (Unavailable, OSError):
        raise NotOffered(not_offered_text(Language(request.lang))) from None


@dataclass(frozen=True)
class JobDirs:
    """One folder each for the evaluator and the submission process: neither sees the other's."""

    root: Path
    oracle: Path
    problem: Path
    """The problem's files (the reference among them), read-only inside the evaluator's folder."""
    submission: Path
    submission_file: str
    shared_ro: tuple[Path, ...]
    """Files in the submission's folder it may read but not change (what it is compiled against)."""


def shared_files(request: RunRequest) -> tuple[str, ...]:
    """The problem's files the submission's folder gets too, read-only (what it is compiled against), relative."""
    lang = LANGUAGES[Language(request.lang)]
    return tuple(rel for rel in request.files
                 if rel in lang.problem_files or PurePosixPath(rel).suffix in (".h", ".cuh", ".hpp"))  # fmt: skip


def new_job_root(parent: Path | None) -> Path:
    """A fresh, empty folder for one run's job (in ``parent``, made if missing; None: the system's temporary folder)."""
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="kernelcup-job-", dir=parent)).resolve()


def job_dirs(root: Path, shared: tuple[str, ...]) -> JobDirs:
    """The job's folders in ``root`` (made if missing), with the submission's read-only files in place, empty until
    :func:`write_job` fills them (a pre-started sandbox binds them before its job exists)."""
    oracle = root / "oracle"
    problem = oracle / "problem"
    sub = root / "sub"
    for d in (oracle, problem, sub):
        d.mkdir(parents=True, exist_ok=True)
    files = []
    for rel in shared:
        path = PurePosixPath(rel)
        if path.is_absolute() or ".." in path.parts or not path.parts:
            raise ValueError(f"problem file {rel!r} must be a relative path inside the problem")
        (sub / path).parent.mkdir(parents=True, exist_ok=True)
        (sub / path).touch()
        files.append(sub / path)
    return JobDirs(root, oracle, problem, sub, "", tuple(files))


def write_job(root: Path, request: RunRequest) -> JobDirs:
    """The job's files into its folders (made here, or already made by :func:`job_dirs` for a pre-started set)."""
    dirs = job_dirs(root, shared_files(request))
    lang = LANGUAGES[Language(request.lang)]
    for rel, text in request.files.items():
        path = PurePosixPath(rel)
        if path.is_absolute() or ".." in path.parts or not path.parts:
            raise ValueError(f"problem file {rel!r} must be a relative path inside the problem")
        _write(dirs.problem / path, text)
    for rel in shared_files(request):  # in place: a bound file keeps its inode, so a waiting sandbox sees the text
        _write(dirs.submission / rel, request.files[rel])
    name = "submission" + lang.suffixes[0]
    (dirs.submission / name).write_bytes(request.submission.content)
    return JobDirs(root, dirs.oracle, dirs.problem, dirs.submission, name, dirs.shared_ro)


def _write(target: Path, text: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def allocator_library(cache_dir: Path) -> Path:
    """The submission process's CUDA allocator (``runners/ipc/arena_alloc.cpp``) built once per source version with
    this machine's C++ compiler, kept in the runner's cache (read-only to submissions)."""
    source = ALLOCATOR_SOURCE.read_bytes()
    digest = hashlib.sha256(source).hexdigest()[:16]
    target = cache_dir / f"arena_alloc-{digest}.so"
    if target.exists():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    cc = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if cc is None:
        raise RuntimeError("no C++ compiler (c++, g++ or $CXX) to build the submission process's CUDA allocator")
    # A name of this process's and thread's own: a worker's slots are threads of one process, and two first runs
    # built it at once into one temporary file (one renamed it away under the other: an infrastructure error, seen
    # on the H100 with the solution suite's parallel runs).
    tmp = target.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
    proc = subprocess.run(
        [*cc.split(), "-O2", "-shared", "-fPIC", "-o", str(tmp), str(ALLOCATOR_SOURCE), "-lpthread"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"building the submission allocator failed: {proc.stderr[-2000:]}")
    tmp.replace(target)
    return target


def read_capped(path: Path, limit: int) -> str | None:
    """The last ``limit`` bytes of a regular file the submission could have touched, never following a link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        import stat

        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        os.lseek(fd, max(st.st_size - limit, 0), os.SEEK_SET)
        return os.read(fd, limit).decode(errors="replace")
    finally:
        os.close(fd)
