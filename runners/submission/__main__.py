"""``python -m runners.submission``: the submission process (started by ``runners.entry`` only)."""

from runners.submission.serve import main

if __name__ == "__main__":
    raise SystemExit(main())
