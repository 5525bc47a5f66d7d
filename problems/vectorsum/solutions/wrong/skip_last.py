# expect: wrong_answer
# Leaves out the last element (an off-by-one bound).
def custom_kernel(data):
    (x,) = data
    return x[:-1].sum()
