"""Which Triton vector add beats ``torch.add`` on this GPU (issue 35: the shipped Triton solution was slower).

Times each variant of the fp16 add at the vectoradd problem's benchmark sizes with CUDA events, the L2 flushed
before every call (a 2x-L2 buffer written), median of ``--calls`` calls, against ``torch.add(a, b, out=out)`` on the
same tensors, and checks every variant's output against torch's. It is a quick sweep, not the harness: the winner
then goes through ``benchmarks/problems_table.py vectoradd``, which times it as a submission.

    python3 benchmarks/vectoradd_variants.py [--sizes 2048 8192 16384] [--calls 60]
"""

from __future__ import annotations

import argparse
import statistics

import torch
import triton
import triton.language as tl


@triton.jit
def _add(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr, EVICT: tl.constexpr, STREAM: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if EVICT:
        a = tl.load(a_ptr + offs, mask=mask, eviction_policy="evict_first")
        b = tl.load(b_ptr + offs, mask=mask, eviction_policy="evict_first")
    else:
        a = tl.load(a_ptr + offs, mask=mask)
        b = tl.load(b_ptr + offs, mask=mask)
    if STREAM:
        tl.store(out_ptr + offs, a + b, mask=mask, cache_modifier=".cs")
    else:
        tl.store(out_ptr + offs, a + b, mask=mask)


@triton.jit
def _add_persistent(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr, PROGRAMS: tl.constexpr):
    start = tl.program_id(0)
    tiles = tl.cdiv(n, BLOCK)
    for tile in range(start, tiles, PROGRAMS):
        offs = tile.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def variants(sms: int) -> dict[str, object]:
    def flat(block: int, warps: int, evict: bool = False, stream: bool = False):
        def run(a, b, out):
            n = out.numel()
            _add[(triton.cdiv(n, block),)](a, b, out, n, BLOCK=block, EVICT=evict, STREAM=stream, num_warps=warps)
        return run

    def persistent(block: int, warps: int, per_sm: int):
        def run(a, b, out):
            n = out.numel()
            programs = min(sms * per_sm, triton.cdiv(n, block))
            _add_persistent[(programs,)](a, b, out, n, BLOCK=block, PROGRAMS=programs, num_warps=warps)
        return run

    return {
        "torch.add": lambda a, b, out: torch.add(a, b, out=out),
        "shipped: 4096/8 warps, evict_first": flat(4096, 8, evict=True),
        "4096/8": flat(4096, 8),
        "2048/4": flat(2048, 4),
        "8192/8": flat(8192, 8),
        "8192/16": flat(8192, 16),
        "16384/16": flat(16384, 16),
        "4096/8, streaming store": flat(4096, 8, stream=True),
        "8192/8, streaming store": flat(8192, 8, stream=True),
        "persistent 4096/8, 4 per SM": persistent(4096, 8, 4),
        "persistent 8192/8, 2 per SM": persistent(8192, 8, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2048, 8192, 16384])
    parser.add_argument("--calls", type=int, default=60)
    args = parser.parse_args()
    props = torch.cuda.get_device_properties(0)
    flush = torch.empty(2 * props.L2_cache_size // 4 + (1 << 20), dtype=torch.int32, device="cuda")
    print(f"{props.name}, {props.multi_processor_count} SMs, L2 {props.L2_cache_size >> 20} MiB; torch "
          f"{torch.__version__}, triton {triton.__version__}; medians of {args.calls} calls, L2 flushed before each")
    table = variants(props.multi_processor_count)
    for size in args.sizes:
        g = torch.Generator(device="cuda").manual_seed(size)
        a = torch.randn(size, size, device="cuda", dtype=torch.float16, generator=g)
        b = torch.randn(size, size, device="cuda", dtype=torch.float16, generator=g)
        want = a + b
        print(f"\nsize {size}x{size} ({3 * a.numel() * 2 / 1e9:.3f} GB moved)")
        base = None
        for name, fn in table.items():
            out = torch.full_like(a, float("nan"))
            fn(a, b, out)
            torch.cuda.synchronize()
            ok = torch.equal(out, want)
            times = []
            for _ in range(args.calls):
                flush.fill_(1)
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                fn(a, b, out)
                e.record()
                e.synchronize()
                times.append(s.elapsed_time(e) * 1e3)
            med = statistics.median(times)
            base = base or med
            gbs = 3 * a.numel() * 2 / (med * 1e-6) / 1e12
            print(f"  {name:34s} {med:9.1f} µs  {gbs:5.2f} TB/s  {base / med:5.3f}x torch  {'ok' if ok else 'WRONG'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
