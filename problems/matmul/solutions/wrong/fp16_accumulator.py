# expect: wrong_answer
# Accumulates in fp16: the running sum is rounded to fp16 after every product (as an fp16 FMA chain would).
import torch


def custom_kernel(data):
    a, b = data
    acc = torch.zeros(a.shape[0], b.shape[1], device=a.device, dtype=torch.float16)
    for i in range(a.shape[1]):
        acc = (acc.float() + a[:, i : i + 1].float() * b[i : i + 1, :].float()).half()
    return acc
