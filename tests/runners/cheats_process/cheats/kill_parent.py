# expect: wrong_answer
# sandboxed-only: without the sandbox the parent it stops is the runner's init process (the run then times out)
# Tries to stop its parent and signal its process group so that the run is recorded some other way; then returns
# a wrong answer. Inside the sandbox the runner's processes are not visible at all.
import os
import signal

try:
    os.kill(os.getppid(), signal.SIGSTOP)
except OSError:
    pass
try:
    os.killpg(os.getpgrp(), signal.SIGCONT)
except OSError:
    pass


def custom_kernel(data):
    a, b, out = data
    return b
