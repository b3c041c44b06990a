"""Compile time of one optimizer update: DASH at its defaults, SOAP, JAX Distributed Shampoo and Adam.

For each model and optimizer, in ``--trials`` fresh processes with the persistent compilation cache off
(``ICMLX_CACHE=0``, so nothing is read from or written to disk): ``jax.jit(opt.update).lower(grads, state,
params)`` (trace and lowering to StableHLO) and ``.compile()`` (XLA), timed apart; the row reports the trial with
the smallest sum (compile times only grow with competing load) and the median sum over trials. Then the
steady-state time of one update (median of ``--repeats`` calls; the roots/eigenbases refreshed on the period of
each optimizer, so the median is mostly non-refresh steps). Also recorded: the number of operations in the traced
program (``jaxpr`` equations, nested ones counted) and, for DASH and SOAP, the distinct shapes of the
factor stacks ``(blocks, side, side)``.

Models (float32 parameters, gradients standard normal):

* ``mlp``: the MLP of ``benchmarks/optim_suite.py`` (64-64-10 with biases), block 32;
* ``char-lm``: the suite's character LM (embedding 128 x 16, 256 -> 128 -> 128 with biases), block 128;
* ``transformer``: the transformer of ``examples/dash_lm.py --quick`` (d 64, 2 layers, 4 heads, context 64,
  vocabulary 128: embedding, positions, qkv/out/MLP matrices with LayerNorm scales and biases, head), block 64.

Optimizers: those of the suite (`optim_suite.optimizers`), each at learning rate 1e-3.

Usage::

    python benchmarks/optim_compile.py                 # every model and optimizer -> results/optim_compile.json
    python benchmarks/optim_compile.py --models mlp --optimizers DASH Shampoo --repeats 20
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODELS = {"mlp": 32, "char-lm": 128, "transformer": 64}


def model_shapes(name: str) -> dict:
    if name == "mlp":
        return {"w1": (64, 64), "b1": (64,), "w2": (64, 10), "b2": (10,)}
    if name == "char-lm":
        return {"emb": (128, 16), "w1": (256, 128), "b1": (128,), "w2": (128, 128), "b2": (128,)}
    d, layers, vocab, ctx = 64, 2, 128, 64
    shapes = {"embed": (vocab, d), "pos": (ctx, d), "final_norm.scale": (d,), "final_norm.bias": (d,),
              "head": (d, vocab)}
    for i in range(layers):
        shapes |= {f"l{i}.qkv": (d, 3 * d), f"l{i}.out": (d, d), f"l{i}.mlp_in": (d, 4 * d), f"l{i}.mlp_in.b": (4 * d,),
                   f"l{i}.mlp_out": (4 * d, d), f"l{i}.mlp_out.b": (d,)}
        shapes |= {f"l{i}.norm{j}.{k}": (d,) for j in (1, 2) for k in ("scale", "bias")}
    return shapes


def _count_eqns(jaxpr) -> int:
    """Equations of a jaxpr, those of nested jaxprs (scan, cond, while, pjit bodies) included."""
    import jax

    n = 0
    for eqn in jaxpr.eqns:
        n += 1
        for sub in jax.core.jaxprs_in_params(eqn.params):
            n += _count_eqns(sub)
    return n


def measure_one(model: str, optimizer: str, repeats: int) -> dict:
    """Run in a fresh process: lower and compile one update, then time the steady state."""
    import jax
    import numpy as np

    import optim_suite

    assert not jax.config.jax_compilation_cache_dir, "run with ICMLX_CACHE=0 (the persistent cache must be off)"
    block = MODELS[model]
    make = optim_suite.optimizers(variants=False)[optimizer]
    rng = np.random.default_rng(0)
    shapes = model_shapes(model)
    params = {k: jax.device_put((0.1 * rng.normal(size=s)).astype(np.float32)) for k, s in shapes.items()}
    grads = {k: jax.device_put(rng.normal(size=s).astype(np.float32)) for k, s in shapes.items()}
    row = {"model": model, "block": block, "optimizer": optimizer,
           "parameters": int(sum(int(np.prod(s)) for s in shapes.values()))}
    with jax.numpy_dtype_promotion("standard"):
        opt = make(1e-3, block)
        state = jax.block_until_ready(opt.init(params))
        update = jax.jit(opt.update)
        t0 = time.perf_counter()
        lowered = update.lower(grads, state, params)
        row["lower_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        compiled = lowered.compile()
        row["compile_s"] = time.perf_counter() - t0
        row["lower_plus_compile_s"] = row["lower_s"] + row["compile_s"]
        row["jaxpr_eqns"] = _count_eqns(jax.make_jaxpr(opt.update)(grads, state, params).jaxpr)
        if "DASH" in optimizer or "SOAP" in optimizer:
            row["factor_stack_shapes"] = sorted({tuple(x.shape) for x in jax.tree.leaves(state) if x.ndim == 3})
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            u, state = compiled(grads, state, params)
            jax.block_until_ready(u)
            times.append(time.perf_counter() - t0)
        row["step_ms_median"] = 1e3 * statistics.median(times)
    return row


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    ap.add_argument("--optimizers", nargs="+", metavar="SUBSTRING",
                    help="only the optimizers whose name contains one of these substrings")
    ap.add_argument("--repeats", type=int, default=30, help="steady-state updates timed (median reported)")
    ap.add_argument("--trials", type=int, default=3, help="fresh processes per model and optimizer")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "optim_compile.json")
    ap.add_argument("--one", nargs=2, metavar=("MODEL", "OPTIMIZER"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE))
    if args.one:
        print(json.dumps(measure_one(*args.one, args.repeats)))
        return {}
    import optim_suite
    from _harness import environment

    names = list(optim_suite.optimizers(variants=False))
    if args.optimizers:
        names = [n for n in names if any(s in n for s in args.optimizers)]
    env = {**os.environ, "ICMLX_CACHE": "0"}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    rows = []
    for model in args.models:
        for name in names:
            trials = []
            for _ in range(args.trials):
                out = subprocess.run([sys.executable, __file__, "--one", model, name, "--repeats", str(args.repeats)],
                                     env=env, capture_output=True, text=True, check=False)
                if out.returncode != 0:
                    raise SystemExit(f"{model} / {name} failed:\n{out.stderr[-3000:]}")
                trials.append(json.loads(out.stdout.strip().splitlines()[-1]))
            r = min(trials, key=lambda t: t["lower_plus_compile_s"])
            r["trials"] = len(trials)
            r["lower_plus_compile_s_median"] = statistics.median(t["lower_plus_compile_s"] for t in trials)
            rows.append(r)
            print(f"{model:12s} {name:26s} lower {r['lower_s']:6.2f} s  compile {r['compile_s']:6.2f} s  "
                  f"eqns {r['jaxpr_eqns']:6d}  step {r['step_ms_median']:7.2f} ms", flush=True)
    ratios = []
    for model in args.models:
        by = {r["optimizer"]: r for r in rows if r["model"] == model}
        base = by.get("JAX Distributed Shampoo")
        if base:
            ratios.append({"model": model, **{f"{k} / Shampoo": r["lower_plus_compile_s"] / base["lower_plus_compile_s"]
                                              for k, r in by.items() if k != "JAX Distributed Shampoo"}})
    command = "python benchmarks/optim_compile.py " + " ".join(argv if argv is not None else sys.argv[1:])
    record = {"benchmark": "optim_compile", "command": command.strip(), "environment": environment("float32"),
              "rows": rows, "lower_plus_compile_over_shampoo": ratios}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2))
    for r in ratios:
        print(r)
    print(f"wrote {args.out}")
    return record


if __name__ == "__main__":
    main()
