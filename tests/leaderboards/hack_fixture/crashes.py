def custom_kernel(data):
    if data[0].shape[0] == 3:
        raise RuntimeError("three rows were never expected")
    return data[0] * 3
