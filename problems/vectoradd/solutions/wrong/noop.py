# expect: wrong_answer
# Returns out without writing it: every element is still the NaN the input came with.
def custom_kernel(data):
    return data[2]
