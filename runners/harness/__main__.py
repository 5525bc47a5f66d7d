"""``python -m runners.harness``: the evaluation process (started by ``runners.entry`` only)."""

from runners.harness.evaluate import main

if __name__ == "__main__":
    raise SystemExit(main())
