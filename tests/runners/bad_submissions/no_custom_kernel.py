def my_kernel(data):
    a, b, out = data
    return a + b
