"""Cheat: return an output with millions of parts (to make the trusted side spend memory and time on it). The
message that describes it is over the size limit: the run fails, nothing on the trusted side grows.
expect: no_gain
mode: test
"""


def custom_kernel(data):
    return [0.0] * 2_000_000
