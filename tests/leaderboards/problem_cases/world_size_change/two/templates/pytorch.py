def custom_kernel(data):
    return [x + 1 for x in data[0]]
