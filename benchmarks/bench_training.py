"""Time the training notebook's model: to the accuracy goal, and one step, numpy vs PyTorch.

(a) Wall-clock time (and steps) until the held-out accuracy first reaches
    ``mhsa_helpers.training.loop.GOAL`` with the reference's forward and backward,
    measuring the accuracy every ``--eval-every`` steps; the goal is at most 60 s.
(b) One training step of the numpy model (forward, hand-written backward
    built on ``multi_head_self_attention_backward``, Adam), median of many.
(c) The same model's step in PyTorch on the CPU (autograd, ``torch.optim.Adam``),
    when torch can be imported here, or with ``--torch-python`` in another
    environment (the course never depends on torch: install it elsewhere,
    e.g. ``python -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install torch``).

Run: python benchmarks/bench_training.py [--torch-python /tmp/torchvenv/bin/python]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time

SHAPES = dict(batch=64, seq_len=8, vocab=16, d_model=16, n_heads=2)


def median_time(fn, repeats: int) -> float:
    for _ in range(5):  # warm-up
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def numpy_step_seconds(repeats: int) -> float:
    """(b): one step of the numpy model on a fixed batch."""
    from mhsa_helpers.training.adam import Adam
    from mhsa_helpers.training.loop import train_step
    from mhsa_helpers.training.model import init_params
    from mhsa_helpers.training.task import training_batches

    params = init_params()
    optimizer = Adam(params)
    x, y = next(training_batches())
    return median_time(lambda: train_step(params, optimizer, x, y), repeats)


def time_to_goal(eval_every: int, runs: int) -> list[tuple]:
    """(a): ``(steps to the goal, seconds to the goal)`` of ``runs`` runs with the fixed seed."""
    from mhsa_helpers.training.loop import STEPS, train

    out = []
    for _ in range(runs):
        r = train(STEPS, eval_every=eval_every)
        out.append((r.steps_to_goal, r.seconds_to_goal, r.seconds, r.accuracy))
    return out


def torch_step_seconds(repeats: int) -> dict:
    """(c): the same model's step in PyTorch, float64 and float32, on the CPU."""
    import torch

    B, T, V, d, h = (SHAPES[k] for k in ("batch", "seq_len", "vocab", "d_model", "n_heads"))
    d_k = d // h
    out = {"torch": torch.__version__, "times": {}}
    default_threads = torch.get_num_threads()
    for threads, dtype in (
        (default_threads, torch.float64),
        (default_threads, torch.float32),
        (1, torch.float64),
        (1, torch.float32),
    ):
        torch.set_num_threads(threads)
        g = torch.Generator().manual_seed(0)

        def param(*shape, g=g, dtype=dtype):
            return (torch.randn(*shape, generator=g, dtype=dtype) * 0.3).requires_grad_()

        p = dict(E=param(V, d), P=param(T, d), W_u=param(d, V), b_u=param(V))
        p.update({n: param(d, d) for n in ("W_q", "W_k", "W_v", "W_o")})
        opt = torch.optim.Adam(p.values(), lr=1e-2)
        x = torch.randint(0, V, (B, T), generator=g)
        y = x.flip(-1)

        def step(p=p, opt=opt, x=x, y=y):
            X = p["E"][x] + p["P"]  # (B, T, d)

            def heads(M):  # (B, T, d) -> (B, h, T, d_k)
                return M.view(B, T, h, d_k).transpose(1, 2)

            Q, K, Vv = (heads(X @ p[n]) for n in ("W_q", "W_k", "W_v"))
            A = torch.softmax(Q @ K.transpose(-1, -2) / d_k**0.5, dim=-1)  # (B, h, T, T)
            merged = (A @ Vv).transpose(1, 2).reshape(B, T, d)  # (B, T, d)
            H = X + merged @ p["W_o"]
            logits = H @ p["W_u"] + p["b_u"]  # (B, T, V)
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()

        label = f"{str(dtype).removeprefix('torch.')}, {threads} thread{'s' * (threads > 1)}"
        out["times"][label] = median_time(step, repeats)
    torch.set_num_threads(default_threads)
    return out


def torch_elsewhere(python: str, repeats: int) -> dict | None:
    """Run (c) with another interpreter, which needs torch but not this course's package."""
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import bench_training as b; "
        "print(json.dumps(b.torch_step_seconds(int(sys.argv[2]))))"
    )
    here = str(__import__("pathlib").Path(__file__).resolve().parent)
    done = subprocess.run(
        [python, "-c", code, here, str(repeats)], capture_output=True, text=True, check=False
    )
    if done.returncode:
        print(f"(c) not measured: {python} failed: {done.stderr.strip().splitlines()[-1:]}")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=300)
    p.add_argument("--runs", type=int, default=3, help="training runs for (a)")
    p.add_argument("--eval-every", type=int, default=5)
    p.add_argument("--torch-python", help="an interpreter that has torch, for (c)")
    a = p.parse_args()
    from mhsa_helpers.training.loop import GOAL, STEPS

    print(
        f"model: batch {SHAPES['batch']}, T = {SHAPES['seq_len']}, V = {SHAPES['vocab']}, "
        f"d_model = {SHAPES['d_model']}, {SHAPES['n_heads']} heads, float64"
    )
    runs = time_to_goal(a.eval_every, a.runs)
    steps, secs = runs[0][0], statistics.median(r[1] for r in runs)
    total = statistics.median(r[2] for r in runs)
    print(
        f"(a) reference functions: held-out accuracy >= {GOAL:.0%} after {steps} steps, "
        f"{secs:.2f} s (median of {a.runs} runs, accuracy measured every {a.eval_every} "
        f"steps); {STEPS} steps in {total:.2f} s, final accuracy {runs[0][3]:.4f} "
        f"(goal: at most 60 s)"
    )
    t_np = numpy_step_seconds(a.repeats)
    try:
        import torch  # noqa: F401

        t_torch = torch_step_seconds(a.repeats)
    except ImportError:
        t_torch = torch_elsewhere(a.torch_python, a.repeats) if a.torch_python else None
        if t_torch is None and not a.torch_python:
            print("(c) not measured: torch is not importable here (see --torch-python)")
    print(f"\n{'one training step':<44} {'ms':>8} {'vs numpy':>9}")
    print(f"{'(b) numpy float64, reference backward':<44} {t_np * 1e3:>8.3f} {1.0:>9.2f}")
    if t_torch:
        for label, t in t_torch["times"].items():
            name = f"(c) torch {t_torch['torch']}, {label}"
            print(f"{name:<44} {t * 1e3:>8.3f} {t / t_np:>9.2f}")


if __name__ == "__main__":
    main()
