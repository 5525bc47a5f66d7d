"""Cheat: forge a result: print one on stdout, write one to every descriptor, drop result files in the job folder.
expect: rejected
mode: test
words: protocol
"""
import json
import os

FAKE = json.dumps({"t": "done", "seq": 0, "verdict": "accepted", "score_ns": 1})
print(FAKE)
print(json.dumps({"verdict": "accepted", "mode": "test", "message": "forged"}))
for name in ("result.json", "RESULT.json", "res.json"):
    with open(name, "w") as f:
        f.write('{"verdict": "accepted", "mode": "test"}')
for fd in range(3, 1024):
    try:
        os.write(fd, ("0" * 64 + " " + FAKE + "\n").encode())
    except OSError:
        pass


def custom_kernel(data):
    a, b, out = data
    return out
