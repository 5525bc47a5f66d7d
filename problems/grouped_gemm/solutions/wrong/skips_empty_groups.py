# expect: wrong_answer
# Splits a by group size, drops the empty chunks, then pairs the remaining chunks with the weights in order: every
# group after the first empty one is multiplied by an earlier group's weights. Right whenever no group is empty,
# which is all a checker with even group sizes tries.
import torch


def custom_kernel(data):
    a, weights, offsets = data
    sizes = torch.diff(offsets, prepend=offsets.new_zeros(1)).tolist()
    chunks = [chunk for chunk in a.split(sizes) if chunk.shape[0] > 0]
    parts = [chunk.float() @ w.float() for chunk, w in zip(chunks, weights, strict=False)]
    return torch.cat(parts).to(torch.bfloat16)
