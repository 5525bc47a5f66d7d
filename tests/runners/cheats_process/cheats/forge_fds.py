# expect: rejected|wrong_answer
# Writes forged result frames (one per test, "accepted", then "done") to every open file descriptor it can find,
# including the result pipe the harness moved to a random high number, then returns a wrong answer.
import json
import os


def _frames():
    lines = []
    for seq, payload in enumerate(
        [{"t": "test", "index": i, "verdict": "accepted", "message": ""} for i in range(3)] + [{"t": "done"}]
    ):
        body = json.dumps({**payload, "seq": seq}, separators=(",", ":"))
        lines.append(("f" * 64 + " " + body + "\n").encode())
    return b"".join(lines)


def _forge():
    fds = set(range(3, 64))
    advertised = os.environ.get("KERNELCUP_RESULT_FD")
    if advertised:
        fds.add(int(advertised))
    try:
        fds.update(int(x) for x in os.listdir("/proc/self/fd"))
    except OSError:
        pass
    for fd in sorted(fds - {0}):
        try:
            os.write(fd, _frames())
        except OSError:
            pass


_forge()


def custom_kernel(data):
    _forge()
    a, b, out = data
    return a * b
