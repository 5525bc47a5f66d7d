"""Header directives in a submission file (both spellings), and how the service applies them: flags win,
'all' devices, each mistake its own error code."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import future, make_problem

from leaderboards.directives import Directives, parse_directives
from leaderboards.errors import InvalidSubmission, LeaderboardNotFound
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from runners.contract import Mode

ANN = UserRef("ann")
BODY = "def custom_kernel(data):\n    return data\n"


def test_both_spellings_and_cuda_comments() -> None:
    text = "#!kernelcup leaderboard add\n#!kernelcup devices H100, A100\n#!KERNELCUP mode test\n" + BODY
    assert parse_directives(text) == Directives("add", ("H100", "A100"), "test")
    popcorn = "#!POPCORN leaderboard vectoradd\n#!POPCORN gpu H100\n#!POPCORN gpus A100 H100\n#!POPCORN x y\n"
    assert parse_directives(popcorn) == Directives("vectoradd", ("H100", "A100"), None)
    assert parse_directives("//!POPCORN leaderboard conv\n__global__ void k() {}\n").leaderboard == "conv"
    assert parse_directives(BODY + "# !kernelcup leaderboard no\n#kernelcup x\n") == Directives()


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("#!kernelcup leaderbord add\n", ["Line 1", "unknown key 'leaderbord'", "leaderboard, devices, mode"]),
        ("x = 1\n#!kernelcup mode\n", ["Line 2", "mode needs a value"]),
        ("#!kernelcup leaderboard a\n#!POPCORN leaderboard b\n", ["Line 2", "already given as 'a'"]),
        ("#!kernelcup mode ranked test\n", ["takes one value"]),
    ],
)
def test_bad_directives_name_the_line(text: str, words: list[str]) -> None:
    with pytest.raises(InvalidSubmission) as exc:
        parse_directives(text)
    assert exc.value.code == "bad_directive"
    assert all(w in exc.value.message for w in words), exc.value.message


@pytest.fixture
def board(service: LeaderboardService, tmp_path: Path) -> str:
    service.create_leaderboard(make_problem(tmp_path), deadline=future(), devices=["cpu", "H100"])
    return "add"


def test_service_reads_the_header_and_flags_win(service: LeaderboardService, board: str) -> None:
    code = f"#!kernelcup leaderboard {board}\n#!POPCORN gpu H100\n#!kernelcup mode test\n{BODY}".encode()
    r = service.submit(ANN, "k.py", code)
    assert (r.leaderboard, [j.device for j in r.jobs], r.mode) == ("add", ["H100"], Mode.TEST)
    r = service.submit(ANN, "k.py", code, None, ["cpu"], "benchmark")
    assert ([j.device for j in r.jobs], r.mode) == (["cpu"], Mode.BENCHMARK)
    with pytest.raises(LeaderboardNotFound):
        service.submit(ANN, "k.py", code, "elsewhere")  # the flag wins even when it is wrong


def test_all_devices_and_missing_leaderboard(service: LeaderboardService, board: str) -> None:
    r = service.submit(ANN, "k.py", BODY.encode(), board, ["ALL"])
    assert [j.device for j in r.jobs] == ["cpu", "H100"] and r.mode == Mode.RANKED
    r = service.submit(ANN, "k.py", f"#!kernelcup devices all\n{BODY}".encode(), board)
    assert [j.device for j in r.jobs] == ["cpu", "H100"]
    with pytest.raises(InvalidSubmission, match="Name the leaderboard") as exc:
        service.submit(ANN, "k.py", BODY.encode())
    assert (exc.value.code, exc.value.field) == ("no_leaderboard", "leaderboard")


@pytest.mark.parametrize(
    ("name", "content", "code"),
    [
        ("k.py", b"", "empty_file"),
        ("k.py", b"\x7fELF\x02\x01\x01\x00\x00\xff", "binary_file"),
        ("k.py", b"x = 1\x00\n", "binary_file"),
        ("k.cu", BODY.encode(), "wrong_file_type"),
        ("k\n.py", BODY.encode(), "bad_file_name"),
        ("k.py", b"#" * (1024 * 1024 + 1), "file_too_large"),
    ],
)
def test_each_file_mistake_has_its_code(
    service: LeaderboardService, board: str, name: str, content: bytes, code: str
) -> None:
    with pytest.raises(InvalidSubmission) as exc:
        service.submit(ANN, name, content, board, ["cpu"])
    assert exc.value.code == code


def test_path_separators_are_dropped_from_file_names(service: LeaderboardService, board: str) -> None:
    r = service.submit(ANN, "../../etc/ünïcode.py", BODY.encode(), board, ["cpu"])
    assert r.file_name == "ünïcode.py"
    r = service.submit(ANN, "C:\\Users\\x\\k.py", BODY.encode(), board, ["cpu"])
    assert r.file_name == "k.py"
