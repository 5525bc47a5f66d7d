"""``python -m runners.oracle``: the trusted evaluator (started by ``runners.entry`` only): one run's, or one rank's
of a run of several (docs/multigpu.md)."""

from pathlib import Path

from runners.oracle.evaluate import read_job, run_one

if __name__ == "__main__":
    job, report_fd, peer, spares = read_job()
    if job is None:  # a pre-started set let go unused
        raise SystemExit(0)
    if job.world_size > 1:
        from runners.oracle.ranks import run_rank

        raise SystemExit(run_rank(job, report_fd, peer, Path.cwd()))
    raise SystemExit(run_one(job, report_fd, peer, spares))
