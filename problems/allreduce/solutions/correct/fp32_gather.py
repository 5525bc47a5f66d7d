# expect: accepted
# Gathers every rank's tensor and sums in fp32 in rank order (more traffic than a reduce, the same answer).
import torch
import torch.distributed as dist

if not dist.is_initialized():
    if torch.cuda.is_available():
        dist.init_process_group("nccl", device_id=torch.device("cuda", 0))
    else:
        dist.init_process_group("gloo")
_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor


def custom_kernel(data):
    (x,) = data
    world = dist.get_world_size()
    parts = torch.empty(world * x.numel(), dtype=x.dtype, device=x.device)
    _gather(parts, x)
    return parts.view(world, -1).float().sum(dim=0).to(torch.bfloat16)
