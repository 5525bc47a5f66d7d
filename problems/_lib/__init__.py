"""Checking code the problems share: ``from _lib import Inputs, compare``.

kernelcup ships this folder (``problems/_lib`` beside its packages). The problem loader bundles it into the files
of every problem whose reference imports ``_lib``, so it travels with each run request, is importable beside
``reference.py`` in the evaluator (never in the submission's folder), and counts in the leaderboard's fingerprint:
a change here is a change of the check, and ``kernelcup problems sync`` asks for ``--force``.
"""

from .compare import compare
from .inputs import Inputs, device

__all__ = ["Inputs", "compare", "device"]
