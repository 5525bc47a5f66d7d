"""Cheat: zero the inputs so that a reference computed on them afterwards agrees with a zero output.
expect: wrong_answer
mode: test
words: elements differ
"""
def custom_kernel(data):
    a, b, out = data
    a.zero_()
    b.zero_()
    return out.zero_()
