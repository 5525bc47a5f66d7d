"""Property cases of vectoradd's check, run by tests/problems/test_problem_checks.py (docs/authoring.md, section 6)."""

CASE = {"size": 300, "seed": 11}

CORRECT = {
    "fp16 add": lambda d: d[0] + d[1],
}
