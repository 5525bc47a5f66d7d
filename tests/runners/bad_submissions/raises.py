def custom_kernel(data):
    raise ValueError("kernel-specific failure: tile size 0")
