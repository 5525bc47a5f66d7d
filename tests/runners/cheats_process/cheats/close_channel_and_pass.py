# expect: rejected|runtime_error
# Closes every descriptor but stdio at import, so the harness cannot report; then returns the right answer.
# A missing report must never read as a pass (nor as the platform's fault).
import os

for fd in range(3, 1024):
    try:
        os.close(fd)
    except OSError:
        pass


def custom_kernel(data):
    a, b, out = data
    out.copy_(a + b)
    return out
