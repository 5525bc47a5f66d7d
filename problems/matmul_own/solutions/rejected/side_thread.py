# expect: accepted
# timed: rejected (torch.matmul in a thread of its own: the collector records every thread's launches)
import threading

import torch


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b = data
    out: list[torch.Tensor] = []

    def work() -> None:
        out.append(torch.matmul(a, b))
        if a.is_cuda:
            torch.cuda.synchronize(a.device)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    return out[0]
