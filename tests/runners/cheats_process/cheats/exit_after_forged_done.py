# expect: rejected|runtime_error
# At import, sends a forged "done" frame down every descriptor and exits with status 0 before any test runs:
# a runner that trusted exit status 0, or an unauthenticated "done", would record a pass.
import json
import os

body = json.dumps({"t": "done", "seq": 0}, separators=(",", ":"))
for fd in range(3, 1024):
    try:
        os.write(fd, ("0" * 64 + " " + body + "\n").encode())
    except OSError:
        pass
os._exit(0)


def custom_kernel(data):
    a, b, out = data
    return a + b
