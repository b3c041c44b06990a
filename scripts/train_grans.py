"""Train the G-RANS weights shipped in ``src/icmlx/solvers/grans_pretrained.eqx``.

Reproduce with (x64 on, single-threaded XLA as recorded in the file header)::

    XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \
    JAX_ENABLE_X64=1 python scripts/train_grans.py --seed 0

The shipped weights were trained with the Chebyshev smoother (the paper's configuration,
``GRANS.pretrained(smoother="chebyshev")``); ``--smoother multilevel`` trains for the V-cycle smoother instead
(the loss and roll-outs use the residual-norm 3-term step either way).

Training problems: all four equations of ``icmlx.solvers.fem.make_problem`` on ``unit_square_mesh(refine)``
with training seeds ``seed * 1000 + i`` (held-out evaluation seeds in examples/benchmarks start at 10_000).
"""

import argparse
import hashlib
import sys
import time
from pathlib import Path

import jax

from icmlx.solvers import GRANS, ChebyshevSmoother, GRANSNet, MultilevelSmoother, save_weights, train_grans
from icmlx.solvers.fem import EQUATIONS, make_problem, unit_square_mesh

OUT = Path(__file__).resolve().parents[1] / "src" / "icmlx" / "solvers" / "grans_pretrained.eqx"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--refine", type=int, default=4)
    ap.add_argument("--per-equation", type=int, default=2)
    ap.add_argument("--equations", nargs="*", default=list(EQUATIONS))
    ap.add_argument("--steps-per-stage", type=int, default=40)
    ap.add_argument("--stages", type=int, nargs="*", default=[0, 1, 2, 4, 8])
    ap.add_argument("--hidden", type=int, default=16)
    ap.add_argument("--smoother", choices=["chebyshev", "multilevel"], default="chebyshev")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    if not jax.config.jax_enable_x64:
        raise SystemExit("run with JAX_ENABLE_X64=1 (float64 x, r and projection)")
    key = jax.random.key(args.seed)
    mesh = unit_square_mesh(args.refine)
    smoother = {"chebyshev": ChebyshevSmoother(), "multilevel": MultilevelSmoother()}[args.smoother]
    solver = GRANS(GRANSNet.init(key, hidden=args.hidden), smoother=smoother)
    ops, rhs, seeds = [], [], []
    for j, eq in enumerate(args.equations):
        for i in range(args.per_equation):
            s = args.seed * 1000 + 10 * j + i
            pb = make_problem(jax.random.key(s), mesh, eq)
            ops.append(solver.setup(pb.A))
            rhs.append(pb.b)
            seeds.append(s)
    t0 = time.perf_counter()
    res = train_grans(jax.random.fold_in(key, 1), ops, rhs, net=solver.net,
                      stages=tuple(args.stages), steps_per_stage=args.steps_per_stage, smoother=smoother)
    dt = time.perf_counter() - t0
    meta = {
        "seed": args.seed, "command": "python scripts/train_grans.py " + " ".join(sys.argv[1:]),
        "refine": args.refine, "n_train": int(ops[0].n), "equations": args.equations,
        "train_seeds": seeds,
        "train_seed_hash": hashlib.sha256(str(seeds).encode()).hexdigest()[:16],
        "stages": list(args.stages), "steps_per_stage": args.steps_per_stage, "smoother": args.smoother,
        "eval_before": res.eval_before, "eval_after": res.eval_after, "train_seconds": round(dt, 1),
        "jax": jax.__version__,
    }
    save_weights(args.out, res.net, meta)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes); held-out-state loss "
          f"{res.eval_before:+.3f} -> {res.eval_after:+.3f} in {dt:.0f} s")


if __name__ == "__main__":
    main()
