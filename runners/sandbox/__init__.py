"""Run one untrusted process: scrubbed environment, no network, only its job directory writable, bounded in
time, memory, tasks, disk and output. The runner's entry point (runners/entry/) starts the evaluator and the
submission's process through :func:`run_sandboxed`; docs/sandbox.md explains every layer and docs/anti-cheat.md
the threats it answers.

Layers, outermost first:

1. ``init.py`` (a tiny stdlib-only process we start instead of ``preexec_fn``): joins the run's cgroups, sets
   rlimits (core 0, file size, and ``RLIMIT_NPROC`` where no pids cgroup exists), becomes a child subreaper so
   that double-forked grandchildren come back to it, and kills whatever is left when the command ends.
2. bubblewrap (``bwrap``) on Linux where it can run: new network, pid, ipc and uts namespaces, dropped
   capabilities, read-only system paths, the job directory the only writable place, GPU device nodes.
3. This process: reads stdout/stderr continuously (keeps the first bytes, counts the rest), and a watchdog that
   enforces the wall-time limit, the memory limit where no cgroup does, the task, output and disk limits, and
   kills the whole tree when one is exceeded.

Modules: ``spec`` (what to run, what came of it), ``run`` (:func:`run_sandboxed` in its steps), ``watchdog`` (the
limits polled while it runs, the tree kill), ``view`` (the bubblewrap command line, the environment allowlist, the
read-only paths), ``cgroups``, ``output`` (the output pumps), ``remove`` (deleting a job folder, however deep) and
``init.py``. Import from this package.
"""

from __future__ import annotations

from runners.sandbox.remove import remove_tree
from runners.sandbox.run import run_sandboxed
from runners.sandbox.spec import Handover, ProcessOutcome, SandboxSpec, SandboxUnavailable
from runners.sandbox.view import ALLOW_UNSANDBOXED_SETTING, probe_sandbox, python_ro_paths, scrubbed_env
from runners.sandbox.watchdog import MAX_FILES

__all__ = [
    "ALLOW_UNSANDBOXED_SETTING",
    "MAX_FILES",
    "Handover",
    "ProcessOutcome",
    "SandboxSpec",
    "SandboxUnavailable",
    "probe_sandbox",
    "python_ro_paths",
    "remove_tree",
    "run_sandboxed",
    "scrubbed_env",
]
