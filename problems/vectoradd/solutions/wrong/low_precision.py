# expect: wrong_answer
# Adds in bfloat16: 3 fewer mantissa bits than the fp16 contract.
import torch


def custom_kernel(data):
    a, b, out = data
    out.copy_(a.bfloat16() + b.bfloat16())
    return out
