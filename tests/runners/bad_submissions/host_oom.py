import time


def custom_kernel(data):
    hog = []
    for _ in range(1000):
        hog.append(bytearray(b"x" * (32 << 20)))  # touched, not lazily zero-mapped
        time.sleep(0.002)
    return hog
