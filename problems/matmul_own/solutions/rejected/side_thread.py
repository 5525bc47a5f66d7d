# expect: accepted
# timed: rejected (torch.matmul launched from a thread of its own: the collector records every thread's launches)
# The thread launches onto the caller's stream, so the result is ordered before whatever the caller does next.
import threading

import torch


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b = data
    out: list[torch.Tensor] = []
    stream = torch.cuda.current_stream(a.device) if a.is_cuda else None

    def work() -> None:
        if stream is None:
            out.append(torch.matmul(a, b))
            return
        with torch.cuda.stream(stream):
            out.append(torch.matmul(a, b))

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    return out[0]
