"""Benchmark for one GPU: DASH and SOAP step time vs JAX Distributed Shampoo, PC Fisher-z, and a 2-D Poisson solve.

Three parts, each correctness-checked before it is timed, written together to ``benchmarks/results/gpu.json``:

1. **Optimizer step.** A transformer-shaped parameter tree (``benchmarks/dash_step.py``'s), block 1024, inverse
   roots refreshed every step and every 10 steps: icmlx DASH with float32 root matmuls and with bfloat16 ones
   (``NewtonDB(matmul_dtype=jnp.bfloat16)``), icmlx SOAP (its bases every step / every 10 steps), and JAX
   Distributed Shampoo (``precondition-opt``) with ``precision=HIGHEST`` and ``DEFAULT`` matmuls, beside
   ``optax.adam``. Milliseconds per step are the median over repeats of ``freq`` consecutive steps divided by
   ``freq``; compile time (first step) is reported apart. Check: every update is finite.
2. **PC, Fisher-z, d = 1000.** ``icmlx.structure.pc`` on ``n = 5000`` samples of a linear-Gaussian random DAG
   (expected degree 2). Check: skeleton recall and precision against the true DAG.
3. **solve, 2-D Poisson, 4M unknowns** (a 2048 x 2048 five-point grid, ``icmlx.solvers.solve`` with
   ``rtol=1e-6``). Check: the true relative residual.

``--smoke`` runs every part at tiny sizes on whatever backend is present (seconds on CPU): the default test
suite runs it (``tests/optim/test_optim_gpu_benchmark.py``). The full sizes are meant for a GPU and take
under 8 minutes there.

Usage::

    python benchmarks/gpu.py                 # full sizes -> benchmarks/results/gpu.json
    python benchmarks/gpu.py --smoke --out /tmp/gpu_smoke.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import RESULTS_DIR, environment, time_fn  # noqa: E402
from dash_step import transformer_params  # noqa: E402
from icmlx.optim import NewtonDB, scale_by_dash, scale_by_soap  # noqa: E402

FULL = dict(d=1024, layers=2, vocab=8192, block=1024, repeats=5, freqs=(1, 10), ds_precisions=("HIGHEST", "DEFAULT"),
            pc_d=1000, pc_n=5000, grid=2048)
#: --smoke: one small matrix and a vector instead of the transformer (Distributed Shampoo compiles per leaf)
SMOKE = dict(d=0, layers=0, vocab=0, block=8, repeats=1, freqs=(1,), ds_precisions=("HIGHEST",), pc_d=12, pc_n=300,
             grid=32)


def _ds_module():
    from dash_vs_shampoo import load_distributed_shampoo

    return load_distributed_shampoo(required=False)


def optimizers(block: int, freq: int, ds_precisions=("HIGHEST", "DEFAULT")) -> dict:
    out = {
        "icmlx DASH (f32 root matmuls)": scale_by_dash(block, precondition_frequency=freq),
        "icmlx DASH (bf16 root matmuls)": scale_by_dash(block, precondition_frequency=freq,
                                                        inverse_root=NewtonDB(matmul_dtype=jnp.bfloat16)),
        "icmlx SOAP": scale_by_soap(block, precondition_frequency=freq),
    }
    ds = _ds_module()
    if ds is not None:
        for name in ds_precisions:
            prec = getattr(jax.lax.Precision, name)
            out[f"JAX Distributed Shampoo (precision={name})"] = ds.distributed_shampoo(
                1.0, block, beta1=0.9, beta2=0.999, preconditioning_compute_steps=freq, start_preconditioning_step=1,
                graft_type=ds.GraftingType.RMSPROP_NORMALIZED, precision=prec, generate_training_metrics=False)
    if freq == 1:
        out["optax.adam"] = optax.scale_by_adam()
    return out


def bench_steps(cfg: dict) -> list[dict]:
    if cfg["d"]:
        params = transformer_params(cfg["d"], cfg["layers"], cfg["vocab"], jax.random.key(0))
    else:
        params = {"w": 0.02 * jax.random.normal(jax.random.key(0), (16, 24)), "b": jnp.zeros(24)}
    grads = jax.tree.map(lambda p: jax.random.normal(jax.random.key(1), p.shape, p.dtype), params)
    rows = []
    for freq in cfg["freqs"]:
        for name, tx in optimizers(cfg["block"], freq, cfg["ds_precisions"]).items():
            update = jax.jit(tx.update)
            with jax.numpy_dtype_promotion("standard"):  # Distributed Shampoo and optax mix int32 and float
                state = jax.block_until_ready(tx.init(params))
                t0 = time.perf_counter()
                u, state = jax.block_until_ready(update(grads, state, params))
                first_s = time.perf_counter() - t0
                finite = all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree.leaves(u))
                if not finite:
                    raise SystemExit(f"{name}: non-finite update at freq={freq}; refusing to time it")

                def steps(state=state, update=update, k=freq):
                    s, u = state, None
                    for _ in range(k):
                        u, s = update(grads, s, params)
                    return u

                t = time_fn(steps, repeats=cfg["repeats"])
            rows.append({"part": "optimizer step", "optimizer": name, "block": cfg["block"], "freq": freq,
                         "ms_per_step": 1e3 * t["median_s"] / freq, "min_ms_per_step": 1e3 * t["min_s"] / freq,
                         "compile_s": first_s})
    return rows


def bench_pc(cfg: dict) -> list[dict]:
    from icmlx.structure import pc, random_er_dag, sample_linear_gaussian

    d, n = cfg["pc_d"], cfg["pc_n"]
    dag = random_er_dag(jax.random.key(0), d, 2.0)
    data = sample_linear_gaussian(jax.random.key(1), dag, n)
    true = np.asarray(dag) | np.asarray(dag).T
    t0 = time.perf_counter()
    res = pc(data, ci_test="fisherz", alpha=0.01)
    first_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = pc(data, ci_test="fisherz", alpha=0.01)
    s = time.perf_counter() - t0
    skel = np.asarray(res.skeleton).astype(bool)
    tp = int(np.sum(skel & true)) // 2
    recall = tp / max(int(true.sum()) // 2, 1)
    precision = tp / max(int(skel.sum()) // 2, 1)
    return [{"part": "pc fisherz", "d": d, "n": n, "seconds": s, "first_call_s": first_s,
             "skeleton_recall": recall, "skeleton_precision": precision, "num_tests": int(res.num_tests)}]


def bench_solve(cfg: dict) -> list[dict]:
    import scipy.sparse as sp

    from icmlx.solvers import solve

    m = cfg["grid"]
    lap1 = sp.diags([-np.ones(m - 1), 2 * np.ones(m), -np.ones(m - 1)], [-1, 0, 1])
    A = (sp.kron(lap1, sp.eye(m)) + sp.kron(sp.eye(m), lap1)).tocsr()
    b = np.random.default_rng(0).standard_normal(m * m)
    t0 = time.perf_counter()
    sol = solve(A, b, rtol=1e-6, throw=False)
    jax.block_until_ready(sol.value)
    first_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    sol = solve(A, b, rtol=1e-6, throw=False)
    jax.block_until_ready(sol.value)
    s = time.perf_counter() - t0
    x = np.asarray(sol.value, np.float64)
    if not np.all(np.isfinite(x)):
        raise SystemExit("solve: non-finite solution")
    relres = float(np.linalg.norm(b - A @ x) / np.linalg.norm(b))
    return [{"part": "solve poisson2d", "unknowns": m * m, "seconds": s, "first_call_s": first_s,
             "iterations": int(sol.num_steps), "relres": relres}]


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, any backend, seconds")
    ap.add_argument("--out", type=Path, default=None, help="result file (default benchmarks/results/gpu.json)")
    args = ap.parse_args(argv)
    cfg = SMOKE if args.smoke else FULL
    out = args.out or RESULTS_DIR / "gpu.json"
    if not args.smoke and jax.default_backend() != "gpu":
        print(f"note: backend is {jax.default_backend()!r}, not a GPU; the full sizes are meant for a GPU")
    t_all = time.perf_counter()
    rows = bench_steps(cfg) + bench_pc(cfg) + bench_solve(cfg)
    record = {"benchmark": "gpu", "smoke": args.smoke, "config": cfg, "environment": environment("float32"),
              "total_s": time.perf_counter() - t_all, "command": "python benchmarks/gpu.py"
              + (" --smoke" if args.smoke else ""), "rows": rows}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2))
    for r in rows:
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()})
    print(f"wrote {out} ({record['total_s']:.1f} s)")
    return record


if __name__ == "__main__":
    main()
