"""Output capture, descriptors handed to the process, and what happens when the runner itself dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from runners.sandbox import run_sandboxed
from runners.sandbox.output import Stream


def test_stream_keeps_the_first_bytes_and_counts_the_rest() -> None:
    lines: list[str] = []
    stream = Stream(cap=5, on_line=lines.append)
    for chunk in (b"ab", b"c\nde", b"f\r\n", b"tail"):
        stream.feed(chunk)
    stream.close()
    assert stream.text == "abc\nd" and stream.truncated and stream.total == 13
    assert lines == ["abc", "def", "tail"]


def test_stream_survives_a_broken_callback() -> None:
    def boom(line: str) -> None:
        raise RuntimeError(line)

    stream = Stream(cap=100, on_line=boom)
    stream.feed(b"one\ntwo\n")
    assert stream.text == "one\ntwo\n"


def test_stderr_lines_reach_the_callback_as_they_come(spec_for) -> None:
    seen: list[tuple[float, str]] = []
    start = time.monotonic()
    out = run_sandboxed(
        spec_for(
            "import sys, time\nfor i in range(3):\n    print(i, file=sys.stderr, flush=True)\n    time.sleep(0.3)"
        ),
        on_stderr_line=lambda line: seen.append((time.monotonic() - start, line)),
    )
    assert [line for _, line in seen] == ["0", "1", "2"]
    assert seen[0][0] < out.wall_time_s - 0.4, "lines must be delivered while the process runs, not at the end"


def test_passed_descriptors_arrive_and_nothing_else_does(spec_for, tmp_path: Path) -> None:
    r, w = os.pipe()
    os.set_inheritable(w, True)
    private = os.open(tmp_path / "runner-private.txt", os.O_CREAT | os.O_RDWR)
    os.set_inheritable(private, True)  # even an inheritable descriptor stays home unless it is in pass_fds
    try:
        code = textwrap.dedent(
            f"""
            import os
            os.write({w}, b'through the pipe')
            try:
                os.fstat({private})
                print('LEAKED')
            except OSError:
                print('private fd not inherited')
            print(sorted(int(x) for x in os.listdir('/proc/self/fd')))
            """
        )
        out = run_sandboxed(spec_for(code, pass_fds=(w,)))
    finally:
        os.close(w)
        os.close(private)
    assert os.read(r, 100) == b"through the pipe"
    os.close(r)
    assert "private fd not inherited" in out.stdout, out.stdout + out.stderr


def test_sandbox_dies_with_the_runner(jobdir: Path) -> None:
    """If the runner is killed (OOM killer, deploy), the evaluation process must not live on."""
    beat = jobdir / "beat"
    runner = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from runners.sandbox import SandboxSpec, run_sandboxed
        child = "import time\\nwhile True:\\n    open({str(beat)!r}, 'a').write('.')\\n    time.sleep(0.02)"
        run_sandboxed(SandboxSpec(argv=[sys.executable, '-c', child], workdir=Path({str(jobdir)!r}), env={{}},
                                  timeout_s=60, output_cap_bytes=100, memory_mb=256, allow_gpu=False))
        """
    )
    repo = Path(__file__).resolve().parents[3]
    proc = subprocess.Popen(
        [sys.executable, "-c", runner],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(repo), os.environ.get("PYTHONPATH")]))},
    )
    try:
        deadline = time.monotonic() + 20
        while not beat.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert beat.exists(), "the sandboxed process never started"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    time.sleep(0.3)
    size = beat.stat().st_size
    time.sleep(0.4)
    assert beat.stat().st_size == size, "the sandboxed process outlived its runner"


def test_missing_read_only_path_is_noted_not_fatal(run_py, tmp_path: Path) -> None:
    out = run_py("print('ran')", ro_paths=(tmp_path / "does-not-exist",))
    assert out.stdout == "ran\n"
    if out.sandboxed:
        assert "does-not-exist" in out.sandbox_note
