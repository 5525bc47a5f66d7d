"""The evaluation harness: what runs a submission, checks it and times it.

Two sides, in two processes:

- the **trusted parent** (``runners.entry``) materialises the job, starts the evaluation process in
  the sandbox, answers its requests for per-call seeds (the ranked secret never leaves the parent),
  verifies every frame on the result channel, computes the statistics and the score from raw samples
  and decides the verdict;
- the **evaluation process** (``python -m runners.harness``, module ``evaluate``) imports the
  reference and the submission, generates inputs, calls ``custom_kernel``, checks each output
  against a reference computed on freshly regenerated inputs, times calls, and reports raw facts.

Modules: ``channel`` (authenticated frames between the two), ``stats`` (statistics and score, parent
side), ``integrity`` (tamper, thread and output-type checks), ``timing`` (GPU/CPU timing loops),
``languages`` (how a submission becomes a callable), ``checking`` (the check's return convention and a
comparison helper for references), ``sysinfo`` and ``profile``.
"""
