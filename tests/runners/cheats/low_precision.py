"""Cheat: compute in fp16 (faster on a GPU) although the problem's contract is fp32.
expect: wrong_answer
mode: test
words: elements differ
"""
def custom_kernel(data):
    a, b, out = data
    return out.copy_((a.half() + b.half()).float())
