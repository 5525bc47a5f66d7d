"""``python -m runners.oracle``: the trusted evaluator (started by ``runners.entry`` only)."""

from runners.oracle.evaluate import main

if __name__ == "__main__":
    raise SystemExit(main())
