# expect: wrong_answer
# Rounds the inputs to bfloat16 first (3 fewer mantissa bits than fp16), then multiplies.
import torch


def custom_kernel(data):
    a, b = data
    return (a.bfloat16().float() @ b.bfloat16().float()).half()
