"""Benchmark: icmlx DASH beside JAX Distributed Shampoo (``precondition-opt``), the JAX Shampoo users run today.

Three parts, side by side in one run, the same settings on both sides (block size, refresh frequency, start of
preconditioning, learning-rate grid):

1. **Optimizer step** on a transformer-shaped tree (``benchmarks/dash_step.py``'s): DASH with its default
   Newton–DB roots, Distributed Shampoo (its coupled-Newton roots, normalized-RMSProp grafting), ``optax.adam``.
   Steady-state ms per step with the roots refreshed every step and every 10 steps, compile time apart, the
   optimizer state's bytes, and paired ratios (the two steps timed alternately; median of per-pair ratios).
2. **Quality** on ill-conditioned matrix regression, ``min_W ||A W B - C||^2 / N`` with condition numbers
   ``kappa(A) = kappa(B) = 1e2`` (Hessian condition ``1e8``) and ``1e3``, roots every 10 steps and every step:
   final loss after a fixed number of steps, each optimizer at its best learning rate of one grid (the whole
   grid runs as one vmapped, compiled program per optimizer).
3. **State bytes** for an embedding-heavy model (a 50,000 x 64 embedding, a 3x3x64x64 conv kernel, dense
   layers), from ``jax.eval_shape`` of each ``init`` (nothing is allocated), as a multiple of the parameters'.

Distributed Shampoo 0.3.0 calls ``jax.tree_map`` and four other aliases that jax 0.10 removed; this script
restores them from ``jax.tree_util`` before importing it (benchmark only: icmlx itself never patches jax).

Usage::

    python benchmarks/dash_vs_shampoo.py --quick
    python benchmarks/dash_vs_shampoo.py --part quality
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import print_table, time_fn, write_results  # noqa: E402
from dash_step import transformer_params  # noqa: E402
from icmlx.optim import scale_by_dash  # noqa: E402

_REMOVED_ALIASES = ("tree_map", "tree_leaves", "tree_flatten", "tree_unflatten", "tree_structure")


def load_distributed_shampoo(required: bool = True):
    """The ``precondition.distributed_shampoo`` module, with the jax aliases it needs restored.

    Used by this benchmark and by ``examples/dash_lm.py``. When it is not installed: ``SystemExit`` with the
    install line, or ``None`` with ``required=False``.
    """
    for name in _REMOVED_ALIASES:
        if not hasattr(jax, name):
            setattr(jax, name, getattr(jax.tree_util, name))
    try:
        from precondition import distributed_shampoo
    except ImportError as e:  # pragma: no cover - depends on the environment
        if not required:
            return None
        raise SystemExit(f"JAX Distributed Shampoo is not installed ({e}).\n"
                         "Install the benchmark extras: pip install -e '.[bench]'") from e
    return distributed_shampoo


DS = load_distributed_shampoo(required=__name__ == "__main__")


def shampoo(lr, block, freq, graft="rmsprop_normalized", start=1):
    graft_type = {"rmsprop_normalized": DS.GraftingType.RMSPROP_NORMALIZED, "rmsprop": DS.GraftingType.RMSPROP,
                  "sgd": DS.GraftingType.SGD, "adagrad": DS.GraftingType.ADAGRAD}[graft]
    return DS.distributed_shampoo(lr, block, start_preconditioning_step=start, preconditioning_compute_steps=freq,
                                  graft_type=graft_type, generate_training_metrics=False)


def dash_opt(lr, block, freq, grafting="adam", start=1, **kw):
    return optax.chain(scale_by_dash(block, precondition_frequency=freq, start_preconditioning_step=start,
                                     grafting=grafting, **kw), optax.scale(-lr))


def tree_bytes(tree) -> int:
    return int(sum(np.prod(x.shape) * np.dtype(x.dtype).itemsize for x in jax.tree_util.tree_leaves(tree)))


# ---------------------------------------------------------------------------------------------- part 1: step


def bench_step(d: int, layers: int, vocab: int, block: int, repeats: int, pairs: int):
    params = transformer_params(d, layers, vocab, jax.random.key(0))
    grads = jax.tree.map(lambda p: jax.random.normal(jax.random.key(1), p.shape, p.dtype), params)
    rows, runners = [], {}
    pbytes = tree_bytes(params)
    for freq in (1, 10):
        for name, tx in (("icmlx DASH", dash_opt(1e-3, block, freq)),
                         ("JAX Distributed Shampoo", shampoo(1e-3, block, freq)),
                         ("optax.adam", optax.adam(1e-3))):
            if name == "optax.adam" and freq == 10:
                continue
            update = jax.jit(tx.update)
            with jax.numpy_dtype_promotion("standard"):
                t0 = time.perf_counter()
                state = jax.block_until_ready(jax.jit(tx.init)(params))
                init_s = time.perf_counter() - t0
                t0 = time.perf_counter()
                state = jax.block_until_ready(update(grads, state, params)[1])  # step 1: trace + compile + run
                first_s = time.perf_counter() - t0

                def steps(update=update, state=state, k=freq):
                    s = state
                    for _ in range(k):
                        u, s = update(grads, s, params)
                    return u

                t = time_fn(steps, repeats=repeats)
            runners[(name, freq)] = (steps, freq)
            rows.append({"optimizer": name, "block": block, "freq": freq, "ms_per_step": 1e3 * t["median_s"] / freq,
                         "min_ms": 1e3 * t["min_s"] / freq, "compile_s": first_s + init_s,
                         "state_bytes/params": tree_bytes(state) / pbytes})
    paired = []
    for freq in (1, 10):
        (a, ka), (b, kb) = runners[("JAX Distributed Shampoo", freq)], runners[("icmlx DASH", freq)]
        ratios = []
        for i in range(pairs):
            order = [(a, ka), (b, kb)] if i % 2 else [(b, kb), (a, ka)]
            ts = {}
            for fn, k in order:
                t0 = time.perf_counter()
                with jax.numpy_dtype_promotion("standard"):
                    jax.block_until_ready(fn())
                ts[id(fn)] = (time.perf_counter() - t0) / k
            ratios.append(ts[id(a)] / ts[id(b)])
        q1, med, q3 = np.percentile(ratios, [25, 50, 75])
        paired.append({"freq": freq, "ratio": "Distributed Shampoo / DASH step time", "median": float(med),
                       "q1": float(q1), "q3": float(q3), "pairs": pairs})
    return rows, paired


# ------------------------------------------------------------------------------------------- part 2: quality


def regression_problem(m: int = 128, n: int = 64, kappa: float = 1e2, seed: int = 7):
    rng = np.random.default_rng(seed)

    def illcond(rows, cols):
        u = np.linalg.qr(rng.standard_normal((rows, cols)))[0]
        v = np.linalg.qr(rng.standard_normal((cols, cols)))[0]
        return (u * np.logspace(0, -np.log10(kappa), cols)) @ v.T

    a = illcond(m, n).astype(np.float32)
    b = illcond(n, n).astype(np.float32).T
    w_true = rng.standard_normal((n, n)).astype(np.float32)
    return jnp.asarray(a), jnp.asarray(b), jnp.asarray(a @ w_true @ b)


def bench_quality(num_steps: int, grid, freq: int, kappa: float = 1e2, block: int = 64):
    a, b, c = regression_problem(kappa=kappa)

    def loss(p):
        return jnp.sum((a @ p["w"] @ b - c) ** 2) / c.size

    makers = {
        "icmlx DASH (adam graft)": lambda lr: dash_opt(lr, block, freq, "adam"),
        "icmlx DASH (rmsprop graft)": lambda lr: dash_opt(lr, block, freq, "rmsprop"),
        "icmlx DASH (rmsprop_normalized graft)": lambda lr: dash_opt(lr, block, freq, "rmsprop_normalized"),
        "JAX Distributed Shampoo (rmsprop_normalized graft)": lambda lr: shampoo(lr, block, freq),
        "JAX Distributed Shampoo (rmsprop graft)": lambda lr: shampoo(lr, block, freq, "rmsprop"),
        "optax.adam": lambda lr: optax.adam(lr),
    }
    rows = []
    for name, make in makers.items():
        def final(lr, make=make):
            tx = make(lr)
            p = {"w": jnp.zeros((a.shape[1], b.shape[0]), jnp.float32)}

            def body(carry, _):
                p, s = carry
                val, g = jax.value_and_grad(loss)(p)
                u, s = tx.update(g, s, p)
                return (optax.apply_updates(p, u), s), val

            (p, _), curve = jax.lax.scan(body, (p, tx.init(p)), None, length=num_steps)
            return loss(p), curve

        t0 = time.perf_counter()
        with jax.numpy_dtype_promotion("standard"):
            finals, curves = jax.jit(jax.vmap(final))(jnp.asarray(grid, jnp.float32))
        finals = np.asarray(finals, np.float64)
        seconds = time.perf_counter() - t0
        ok = np.isfinite(finals)
        best = int(np.argmin(np.where(ok, finals, np.inf)))
        rows.append({"optimizer": name, "kappa": kappa, "freq": freq, "steps": num_steps, "best_lr": float(grid[best]),
                     "final_loss": float(finals[best]),
                     "best_lr_at_grid_edge": best in (0, len(grid) - 1),
                     "finals": [float(f) for f in finals], "seconds": seconds})
    return rows


# ---------------------------------------------------------------------------------------- part 3: state bytes


def bench_state_bytes(block: int = 128):
    shapes = {"embed": (50_000, 64), "conv": (3, 3, 64, 64), "dense1": (64 * 16, 256), "dense2": (256, 10),
              "bias1": (256,), "bias2": (10,)}
    params = {k: jax.ShapeDtypeStruct(s, jnp.float32) for k, s in shapes.items()}
    pbytes = tree_bytes(params)
    rows = []
    for name, tx in (("icmlx DASH", dash_opt(1e-3, block, 10)),
                     ("icmlx DASH (bfloat16 statistics)", dash_opt(1e-3, block, 10, statistics_dtype="bfloat16")),
                     ("icmlx DASH (merge_small_dims=False)", dash_opt(1e-3, block, 10, merge_small_dims=False)),
                     ("JAX Distributed Shampoo", shampoo(1e-3, block, 10)),
                     ("optax.adam", optax.adam(1e-3))):
        with jax.numpy_dtype_promotion("standard"):
            state = jax.eval_shape(tx.init, params)
        rows.append({"optimizer": name, "block": block, "param_MB": pbytes / 2**20,
                     "state_MB": tree_bytes(state) / 2**20, "state/params": tree_bytes(state) / pbytes})
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--part", choices=("all", "step", "quality", "state"), default="all")
    args = parser.parse_args(argv)
    extra = {"quick": args.quick}
    written = []
    if args.part in ("all", "state"):
        state_rows = bench_state_bytes()
        print_table(state_rows, title="optimizer state, embedding-heavy model (50,000 x 64 embedding + conv + dense)")
        written.append(write_results(rows=state_rows, part="state", extra=extra))
    if args.part in ("all", "quality"):
        grid = [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0]
        settings = [(1e2, 10)] if args.quick else [(1e2, 10), (1e3, 10), (1e2, 1)]
        q_rows = [r for kappa, freq in settings
                  for r in bench_quality(200 if args.quick else 400, grid, freq=freq, kappa=kappa)]
        print_table(q_rows, ["optimizer", "kappa", "freq", "steps", "best_lr", "final_loss", "best_lr_at_grid_edge",
                             "seconds"],
                    title="ill-conditioned matrix regression, kappa(A)=kappa(B)=kappa: final loss at the best lr")
        written.append(write_results(rows=q_rows, part="quality", extra=extra))
    if args.part in ("all", "step"):
        d, layers, vocab = (128, 1, 256) if args.quick else (256, 2, 512)
        step_rows, paired = bench_step(d, layers, vocab, 128, repeats=5 if args.quick else 9,
                                       pairs=8 if args.quick else 16)
        print_table(step_rows, title=f"optimizer step, transformer-shaped tree d={d}, block 128, "
                                     f"{jax.default_backend()}")
        print_table(paired, title="paired: both steps timed alternately, median of per-pair ratios (>1: DASH faster)")
        written.append(write_results(rows=step_rows, part="step", dtype="float32",
                                     extra={**extra, "paired_ratios": paired}))
    print("wrote", *sorted({str(p) for p in written}))


if __name__ == "__main__":
    main()
