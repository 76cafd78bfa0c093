"""Time multi_head_self_attention against the numpy products it cannot avoid.

The floor is the four projections (X @ W_q, X @ W_k, X @ W_v, concat @ W_o)
and the two batched products per head (Q @ K^T and A @ V), on contiguous
arrays of the same shapes. Goal: ratio (ours / floor) <= 1.25.
Also printed: one np.exp over the (B, h, T, T) attention scores, which the
softmax cannot avoid either, and the ratio to floor + exp.

Run: python benchmarks/bench_mhsa.py [--repeats N]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from mhsa_helpers import multi_head_self_attention


def median_time(fn, repeats: int) -> float:
    fn()  # warm-up: first-touch page faults and BLAS thread start
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=512)
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--repeats", type=int, default=15)
    a = p.parse_args()
    B, T, d, h = a.batch, a.seq_len, a.d_model, a.heads
    d_k = d // h
    print(
        f"multi_head_self_attention, batch={B}, T={T}, d_model={d}, h={h}, "
        f"median of {a.repeats} runs"
    )
    print(
        f"{'dtype':<8} {'ours (ms)':>10} {'floor (ms)':>11} {'ratio':>6} "
        f"{'exp of A (ms)':>13} {'floor+exp':>12} {'ratio2':>7}"
    )
    for dtype in (np.float64, np.float32):
        rng = np.random.default_rng(0)
        X = rng.normal(size=(B, T, d)).astype(dtype)
        Ws = [(rng.normal(size=(d, d)) / np.sqrt(d)).astype(dtype) for _ in range(4)]
        Qh = rng.normal(size=(B, h, T, d_k)).astype(dtype)
        Kt = rng.normal(size=(B, h, d_k, T)).astype(dtype)
        Vh = rng.normal(size=(B, h, T, d_k)).astype(dtype)
        A = rng.random(size=(B, h, T, T)).astype(dtype)
        C = rng.normal(size=(B, T, d)).astype(dtype)

        def floor(X=X, Ws=Ws, Qh=Qh, Kt=Kt, Vh=Vh, A=A, C=C):
            X @ Ws[0]
            X @ Ws[1]
            X @ Ws[2]
            Qh @ Kt
            A @ Vh
            C @ Ws[3]

        def exp_only(A=A):
            np.exp(A)

        def ours(X=X, Ws=Ws):
            multi_head_self_attention(X, *Ws, n_heads=h)

        t_ours = median_time(ours, a.repeats)
        t_floor = median_time(floor, a.repeats)
        t_exp = median_time(exp_only, a.repeats)
        name = np.dtype(dtype).name
        print(
            f"{name:<8} {t_ours * 1e3:>10.1f} {t_floor * 1e3:>11.1f} {t_ours / t_floor:>6.2f} "
            f"{t_exp * 1e3:>13.1f} {(t_floor + t_exp) * 1e3:>12.1f} "
            f"{t_ours / (t_floor + t_exp):>7.2f}"
        )


if __name__ == "__main__":
    main()
