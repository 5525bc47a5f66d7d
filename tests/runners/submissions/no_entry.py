def kernel(data):
    return data
