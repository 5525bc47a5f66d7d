# expect: wrong_answer
# Writes an "accepted" result everywhere a runner or launcher might look for one (the job dir, its parent, /tmp,
# the home directory, the result file name of `python -m runners.entry`), then returns a wrong answer.
import json
import os

FAKE = json.dumps({"version": 1, "verdict": "accepted", "mode": "test", "message": "forged", "score_ns": 1.0})
TARGETS = ["result.json", "RESULT.json", "../result.json", "../RESULT.json", "/tmp/result.json",
           os.path.expanduser("~/result.json"), "/tmp/kernelcup-forged-result.json"]
WRITTEN = []
for target in TARGETS:
    try:
        with open(target, "w") as f:
            f.write(FAKE)
        WRITTEN.append(os.path.abspath(target))
    except OSError:
        pass
print("written:", WRITTEN)


def custom_kernel(data):
    a, b, out = data
    return a + b + 1
