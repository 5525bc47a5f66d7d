# expect: wrong_answer
# Dequantises each side to bf16 (a * scale_a rounded to bf16) and runs a bf16 GEMM with fp32 accumulation: every
# input picks up a bf16 rounding error, about 4x what the check allows on top of the output's own rounding. A
# checker that allows "bf16 precision" on the output alone would let it through.
import torch


def custom_kernel(data):
    a, b, scale_a, scale_b = data
    a16 = (a.float() * scale_a).to(torch.bfloat16)
    b16 = (b.float() * scale_b.T).to(torch.bfloat16)
    return (a16.float() @ b16.float().T).to(torch.bfloat16)
