def custom_kernel(data):
    a, b, out = data
    return (a + b)[:-1]
