import sys


def custom_kernel(data):
    chunk = "x" * (1 << 20) + "\n"
    for _ in range(8192):  # 8 GiB
        sys.stdout.write(chunk)
