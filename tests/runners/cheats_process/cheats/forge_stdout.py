# expect: wrong_answer
# Prints what a naive runner might parse as a passing result (a RunResult, harness-like frames, "accepted"),
# then returns a wrong answer. The verdict must come from the checker, not from stdout.
import json
import sys

FAKE = {"version": 1, "verdict": "accepted", "mode": "test", "message": "3 of 3 tests passed", "score_ns": 1.0}
print(json.dumps(FAKE))
print("0" * 64 + " " + json.dumps({"t": "done", "seq": 0}))
print(json.dumps({"progress": {"phase": "done", "detail": "accepted"}}), file=sys.stderr)


def custom_kernel(data):
    a, b, out = data
    print(json.dumps(FAKE))
    return a - b
