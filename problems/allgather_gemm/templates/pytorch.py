# Starter for allgather_gemm: one process per GPU. All-gather the rows of a, then one GEMM with this rank's b.
# Make it faster (overlap the gather with the GEMM), keep it correct.
import torch
import torch.distributed as dist

_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor


def _init() -> None:
    """At import, before any timed call: the process group (NCCL on a GPU, gloo on the CPU) and one warm-up
    collective, so that NCCL's communicator and its connections exist before the first call."""
    if dist.is_initialized():
        return
    device = torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")
    if device.type == "cuda":
        dist.init_process_group("nccl", device_id=device)
    else:
        dist.init_process_group("gloo")
    warm = torch.ones(1024, device=device, dtype=torch.bfloat16)
    _gather(torch.empty(1024 * dist.get_world_size(), device=device, dtype=torch.bfloat16), warm)
    if device.type == "cuda":
        torch.cuda.synchronize()


_init()


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b = data
    a_all = torch.empty((dist.get_world_size() * a.shape[0], a.shape[1]), device=a.device, dtype=a.dtype)
    _gather(a_all, a)
    return a_all @ b
