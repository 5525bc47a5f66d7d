# expect: wrong_answer
# Reduces over every rank but the last: the last rank's tensor is never added (a group built one rank short).
import torch
import torch.distributed as dist

if not dist.is_initialized():
    if torch.cuda.is_available():
        dist.init_process_group("nccl", device_id=torch.device("cuda", 0))
    else:
        dist.init_process_group("gloo")


def custom_kernel(data):
    (x,) = data
    if dist.get_rank() == dist.get_world_size() - 1:
        x = torch.zeros_like(x)
    dist.all_reduce(x)
    return x
