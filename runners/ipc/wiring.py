"""The GPU box's process wiring, in one place: the environment variables through which ``runners.entry`` (the
parent) hands each process its descriptors and settings, and the names and offsets the trusted evaluator
(``runners.oracle``) and the submission process (``runners.submission``) agree on.

Both sides read these from here, never from each other (docs/architecture.md, "Inside the GPU box"; checked by
tests/test_architecture.py): the evaluator imports nothing of the untrusted side but the languages.
"""

SOCKET_FD_ENV = "KERNELCUP_SUBMISSION_FD"
"""The descriptor of the socket between an evaluator and its submission process (each side has its own end)."""
WARM_ENV = "KERNELCUP_WARM_TOOLCHAIN"
"""Set for a GPU run's submission process: it prepares what Triton does once per process before its job. The value:
the GPU's compute capability as digits ("90"), to compile the platform's own kernel for it too, or
``WARM_TOOLCHAIN_ONLY`` where the parent could not read it (Triton's set-up then, no kernel)."""
WARM_TOOLCHAIN_ONLY = "toolchain"
"""``WARM_ENV``'s value when the architecture is unknown. Not digits: "1" was once used here and read as sm_1, for
which LLVM refused the platform's kernel with a Triton crash report in the submission's stderr (seen on the lent
H200, 2026-11-29)."""
HEADERS_ENV = "KERNELCUP_LANGUAGE_HEADERS"
"""The submission process's list (os.pathsep) of the include folders its language's library was found in."""
RANK_FDS_ENV = "KERNELCUP_RANK_FDS"
"""The ranks' sockets to their evaluators, in rank order (comma-separated descriptors)."""
RANK_DEVICES_ENV = "KERNELCUP_RANK_DEVICES"
"""Each rank's ``CUDA_VISIBLE_DEVICES`` (GPU UUIDs, comma-separated, in rank order); unset on the CPU."""
GROUP_FDS_ENV = "KERNELCUP_GROUP_FDS"
"""An evaluator's sockets to the other ranks' evaluators (comma-separated descriptors): never the submission's."""
GATE_FD_ENV = "KERNELCUP_GATE_FD"
"""A page of host memory (a memfd the entry made) that every evaluator of a run on GPUs maps: the start word."""

CALL_ARENA = "call_in"
"""CPU: the name of the arena that holds one call's inputs, a memfd made for that call and handed over with "go"."""
GO_OFFSET, DONE_OFFSET = 0, 128
"""Where the two control words live in the control arena (separate cache lines)."""
NVTX_RANGE = "kernelcup_profile"
"""The NVTX range the submission process opens around a profiled call (the profiler keeps only what is inside)."""
CALIBRATION = "calibration"
"""The language key of the evaluator's echo process (a known kernel through the same protocol), never a user's."""
BASELINE = "baseline"
"""The language key of the evaluator's baseline process: ``display_name`` names a function of the problem's
reference.py at ``path`` (never a user's file: a request's language is one of the contract's)."""
ZYGOTE_ENV = "KERNELCUP_ZYGOTE"
"""Set for the evaluator's helper zygote on the CPU (``runners.submission.zygote``): the helpers to fork after its one
``import torch``, each as ``name:fd`` (its folder under the zygote's working directory, its socket's descriptor),
comma-separated."""
ZYGOTE_PIDS_ENV = "KERNELCUP_ZYGOTE_PIDS_FD"
"""The zygote's pipe back to the evaluator: one ``name pid`` line per helper it forked, then end of file."""
ZYGOTE_HOLD_ENV = "KERNELCUP_ZYGOTE_HOLD_FD"
"""A pipe the evaluator holds open while it needs the helpers: at its end of file the zygote kills them and exits."""
