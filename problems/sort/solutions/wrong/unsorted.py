# expect: wrong_answer
# Returns the input as it came.
def custom_kernel(data):
    return data[0].clone()
