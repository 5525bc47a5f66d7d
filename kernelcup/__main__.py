"""``python -m kernelcup``: the same CLI as the ``kernelcup`` console script."""

from kernelcup.cli import main

if __name__ == "__main__":
    main()
