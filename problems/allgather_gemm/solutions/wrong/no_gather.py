# expect: wrong_answer
# Never gathers: uses its own rows of a in place of every rank's (the right shape, the wrong rows).
import torch


def custom_kernel(data):
    a, b = data
    world = int(__import__("os").environ["WORLD_SIZE"])
    return torch.cat([a] * world) @ b
