"""Time and memory of two extensions against what they replace.

1. tiled_attention at T=4096, d=64, blocks of 128, against attention_head on
   the same Q, K, V (which builds the 4096 x 4096 matrix): peak of traced
   memory (tracemalloc) and median time, non-causal and causal.
2. Decoding 512 tokens with decode_step (a KV cache) against recomputing the
   causal multi_head_self_attention of the whole prefix for each new token:
   total time and speed-up.

Run: python benchmarks/bench_extensions.py [--repeats N] [--tokens T]
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc

import numpy as np

from mhsa_helpers import (
    attention_head,
    causal_mask,
    decode_step,
    multi_head_self_attention,
    tiled_attention,
)


def median_time(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def peak_mib(fn) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def tiled_table(T: int, d: int, block: int, repeats: int) -> None:
    rng = np.random.default_rng(0)
    Q, K, V = (rng.normal(size=(T, d)) for _ in range(3))
    print(f"\ntiled_attention vs attention_head: T={T}, d={d}, block={block}, float64")
    print(f"{'function':<16} {'causal':<7} {'peak (MiB)':>11} {'median (ms)':>12}")
    for causal in (False, True):
        mask = causal_mask(T) if causal else None
        cases = {
            "attention_head": lambda m=mask: attention_head(Q, K, V, m)[0],
            "tiled_attention": lambda c=causal: tiled_attention(Q, K, V, block, c),
        }
        outs = {}
        for name, fn in cases.items():
            outs[name] = fn()
            peak = peak_mib(fn)
            ms = 1e3 * median_time(fn, repeats)
            print(f"{name:<16} {causal!s:<7} {peak:>11.1f} {ms:>12.1f}")
        diff = np.abs(outs["tiled_attention"] - outs["attention_head"]).max()
        print(f"{'':<16} max |tiled - full| = {diff:.1e}")


def decode_table(tokens: int, d: int, h: int, repeats: int) -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(tokens, d))
    Ws = [rng.normal(size=(d, d)) / np.sqrt(d) for _ in range(4)]

    def cached():
        cache, ys = None, []
        for t in range(tokens):
            y, cache = decode_step(X[t], cache, *Ws, h)
            ys.append(y)
        return np.stack(ys)

    def recomputed():
        ys = []
        for t in range(tokens):
            out, _ = multi_head_self_attention(X[: t + 1], *Ws, h, causal_mask(t + 1))
            ys.append(out[-1])
        return np.stack(ys)

    diff = np.abs(cached() - recomputed()).max()
    t_cache = median_time(cached, repeats)
    t_full = median_time(recomputed, repeats)
    print(f"\ndecoding {tokens} tokens one by one: d_model={d}, h={h}, float64")
    print(f"{'method':<34} {'total (ms)':>11} {'per token (ms)':>15}")
    print(f"{'decode_step (KV cache)':<34} {1e3 * t_cache:>11.1f} {1e3 * t_cache / tokens:>15.3f}")
    print(
        f"{'full causal MHSA for each token':<34} {1e3 * t_full:>11.1f} "
        f"{1e3 * t_full / tokens:>15.3f}"
    )
    print(f"speed-up: {t_full / t_cache:.1f}x, max |cached - recomputed| = {diff:.1e}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seq-len", type=int, default=4096)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--block", type=int, default=128)
    p.add_argument("--tokens", type=int, default=512)
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    tiled_table(a.seq_len, a.dim, a.block, a.repeats)
    decode_table(a.tokens, a.d_model, a.heads, a.repeats)


if __name__ == "__main__":
    main()
