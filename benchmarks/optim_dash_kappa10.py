"""What limits DASH on the suite's well-conditioned regressions: its defaults with one setting changed.

On the two kappa = 10 matrix regressions of ``benchmarks/optim_suite.py`` (``W`` 64 x 48 at block 32 and 96 x 64 at
block 64, 200 steps, linear decay from the peak learning rate, the suite's grid ``LRS``, seeds 0..N-1), DASH at its
defaults and with one setting changed, each at its best peak learning rate (mean final excess loss over the seeds),
beside ``optax.adam``:

* the inverse roots: exact ``Eigh()`` roots instead of Newton-DB; Newton-DB's relative ridge ``1e-9`` and ``1e-4``
  (default ``1e-6``); ``root_epsilon=0`` (default ``1e-10``); roots every step (``precondition_frequency=1``);
* the precision: the whole run in float64 (parameters, data, statistics and roots; a separate process with
  ``JAX_ENABLE_X64=1``);
* the grafting: ``grafting="rmsprop"`` (the gradient itself, not over its Frobenius norm, in the accumulator and
  the numerator; with the default ``b1=0`` the same direction as ``"adam"``).

Usage::

    python benchmarks/optim_dash_kappa10.py            # 3 seeds -> results/optim_dash_kappa10.json
    python benchmarks/optim_dash_kappa10.py --seeds 2 --only defaults "grafting=rmsprop"
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = (((64, 48), 32), ((96, 64), 64))
STEPS = 200
VARIANTS = ("defaults", "Eigh roots", "NewtonDB relative_epsilon=1e-9", "NewtonDB relative_epsilon=1e-4",
            "root_epsilon=0", "precondition_frequency=1", "float64", "grafting=rmsprop", "optax.adam")


def _make(name):
    import optax

    from icmlx.optim import Eigh, NewtonDB, dash

    kw = {"defaults": {}, "float64": {}, "Eigh roots": dict(inverse_root=Eigh()),
          "NewtonDB relative_epsilon=1e-9": dict(inverse_root=NewtonDB(relative_epsilon=1e-9)),
          "NewtonDB relative_epsilon=1e-4": dict(inverse_root=NewtonDB(relative_epsilon=1e-4)),
          "root_epsilon=0": dict(root_epsilon=0.0), "precondition_frequency=1": dict(precondition_frequency=1),
          "grafting=rmsprop": dict(grafting="rmsprop")}
    if name == "optax.adam":
        return lambda lr, b: optax.adam(lr)
    return lambda lr, b: dash(lr, block_size=b, **kw[name])


def measure(name: str, seeds: int) -> list[dict]:
    """Rows of one variant: per case, the best learning rate's mean, min and max final excess loss."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import optim_suite

    dtype = jnp.float64 if name == "float64" else jnp.float32
    if name == "float64":
        assert jax.config.jax_enable_x64, "the float64 variant runs with JAX_ENABLE_X64=1"
    rows = []
    for shape, block in CASES:
        data = [optim_suite.regression(shape, 10.0, s) for s in range(seeds)]
        data = [(tuple(x.astype(dtype) for x in abc), opt) for abc, opt in data]
        run = optim_suite.regression_runner(_make(name), block, shape, STEPS, dtype)
        per_lr = {}
        with jax.numpy_dtype_promotion("standard"):
            for lr in optim_suite.LRS:
                finals = [float(np.asarray(run(jnp.asarray(lr, dtype), *abc), np.float64)[-1]) - opt
                          for abc, opt in data]
                per_lr[lr] = finals if np.all(np.isfinite(finals)) else None
        best = min((lr for lr in per_lr if per_lr[lr] is not None), key=lambda lr: np.mean(per_lr[lr]))
        f = per_lr[best]
        rows.append({"variant": name, "problem": f"regression {shape[0]}x{shape[1]} kappa=10", "block": block,
                     "best_lr": best, "final_mean": float(np.mean(f)), "final_min": float(min(f)),
                     "final_max": float(max(f)), "seeds": seeds})
    return rows


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--only", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    ap.add_argument("--out", type=Path, default=HERE / "results" / "optim_dash_kappa10.json")
    ap.add_argument("--one", choices=VARIANTS, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.seeds < 1:
        ap.error(f"--seeds must be at least 1, got {args.seeds}")
    sys.path.insert(0, str(HERE))
    if args.one:
        print(json.dumps(measure(args.one, args.seeds)))
        return {}
    from _harness import environment

    rows = []
    for name in args.only:
        if name == "float64":  # x64 is process-wide: its own process
            env = {**os.environ, "JAX_ENABLE_X64": "1"}
            out = subprocess.run([sys.executable, __file__, "--one", name, "--seeds", str(args.seeds)], env=env,
                                 capture_output=True, text=True, check=False)
            if out.returncode != 0:
                raise SystemExit(f"float64 run failed:\n{out.stderr[-3000:]}")
            new = json.loads(out.stdout.strip().splitlines()[-1])
        else:
            new = measure(name, args.seeds)
        rows += new
        for r in new:
            print(f"{name:32s} {r['problem']:28s} lr {r['best_lr']:<6g} final {r['final_mean']:.2e} "
                  f"[{r['final_min']:.2e}, {r['final_max']:.2e}]", flush=True)
    command = "python benchmarks/optim_dash_kappa10.py " + " ".join(argv if argv is not None else sys.argv[1:])
    record = {"benchmark": "optim_dash_kappa10", "command": command.strip(), "environment": environment(),
              "steps": STEPS, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2))
    print(f"wrote {args.out}")
    return record


if __name__ == "__main__":
    main()
