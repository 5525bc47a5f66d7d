# expect: wrong_answer
# Gathers every rank's rows but stacks them in reverse rank order.
import torch
import torch.distributed as dist

if not dist.is_initialized():
    if torch.cuda.is_available():
        dist.init_process_group("nccl", device_id=torch.device("cuda", 0))
    else:
        dist.init_process_group("gloo")
_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor


def custom_kernel(data):
    a, b = data
    world = dist.get_world_size()
    a_all = torch.empty((world * a.shape[0], a.shape[1]), device=a.device, dtype=a.dtype)
    _gather(a_all, a)
    return a_all.view(world, *a.shape).flip(0).reshape(-1, a.shape[1]) @ b
