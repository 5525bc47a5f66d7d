

def custom_kernel(data):
    a, b, _ = data
    return (a.cuda() + b.cuda()).cpu()
