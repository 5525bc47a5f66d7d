"""The run contract's version, apart from its models: ``kernelcup --version`` prints it without importing pydantic
(``runners.contract`` re-exports it; read it there everywhere else)."""

CONTRACT_VERSION = 3
"""Bump when a field changes meaning or is added (the models refuse unknown fields, so an older runner would fail on
a newer request with a less helpful error); runners refuse other versions. 3: baselines, dtype, profile metrics.
``world_size`` (docs/multigpu.md) is written only when above 1 (:func:`runners.contract._single_rank`): a one-GPU
request and result are byte for byte what they were, and a runner without it refuses a multi-GPU request naming the
field. ``baseline_group`` is never written at all (``exclude``): a hint to a long-lived runner in the worker's own
process, not part of what a remote runner is asked or of a request's digest."""
