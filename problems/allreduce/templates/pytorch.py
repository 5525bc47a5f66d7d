# Starter for allreduce: one process per GPU, each calling custom_kernel on its own x. Make it faster, keep it
# correct (NCCL's all_reduce is the bar to beat: a custom kernel over CUDA IPC or symmetric memory may).
import torch
import torch.distributed as dist


def _init() -> None:
    """At import, before any timed call: the process group (NCCL on a GPU, gloo on the CPU) and one warm-up
    collective, so that NCCL's communicator and its connections exist before the first call."""
    if dist.is_initialized():
        return
    if torch.cuda.is_available():
        dist.init_process_group("nccl", device_id=torch.device("cuda", 0))
        warm = torch.ones(1024, device="cuda", dtype=torch.bfloat16)
    else:
        dist.init_process_group("gloo")
        warm = torch.ones(1024, dtype=torch.bfloat16)
    dist.all_reduce(warm)
    if torch.cuda.is_available():
        torch.cuda.synchronize()


_init()


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (x,) = data
    dist.all_reduce(x)  # in place: x is this call's own copy of the input
    return x
