# expect: wrong_answer
# Applies scale_a but forgets scale_b. A checker whose inputs all have scale 1 (or one shared scale folded into
# the expected value) cannot tell; here every row of b has its own scale.
import torch


def custom_kernel(data):
    a, b, scale_a, _ = data
    return ((a.float() @ b.float().T) * scale_a).to(torch.bfloat16)
