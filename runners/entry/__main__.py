"""``python -m runners.entry REQUEST.json RESULT.json``: what Modal and the GitHub workflow run."""

from runners.entry import main

if __name__ == "__main__":
    raise SystemExit(main())
