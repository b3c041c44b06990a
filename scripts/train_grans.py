"""Train G-RANS weights: the shipped ``grans_pretrained.eqx`` (paper configuration) or the multilevel network.

Reproduce the shipped weights with (x64 on, single-threaded XLA as recorded in the file header)::

    XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \
    JAX_ENABLE_X64=1 python scripts/train_grans.py --seed 0

They were trained with the Chebyshev smoother (the paper's configuration,
``GRANS.pretrained(smoother="chebyshev")``) and the residual-norm 3-term step, on all four equations of
``icmlx.solvers.fem.make_problem`` on ``unit_square_mesh(refine)`` with training seeds ``seed * 1000 + 10 j + i``.

``--multilevel`` trains for the solver as it runs now (issue #19): the V-cycle smoother
(``MultilevelSmoother()``), the outer step ``ThreeTermStep(norm="auto")`` (energy norm on the SPD-like matrices,
residual norm on Helmholtz) and the energy-norm loss on SPD-like matrices (``grans_loss(loss="auto")``), on the
classes where multigrid struggles (``--classes``: high contrast, rotated anisotropy, Helmholtz; the generators of
``benchmarks/solvers_grans_ablation.py``), and writes ``benchmarks/results/grans_multilevel.eqx`` (not kept in
the repository: binary)::

    XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \
    JAX_ENABLE_X64=1 nice -n 10 python scripts/train_grans.py --multilevel --seed 1

``--helmholtz`` trains for indefinite Helmholtz (`train_grans_helmholtz`): ``--num-problems`` problems of
`helmholtz_family` (wavenumbers uniform in ``--k-range``, random medium and source, ``unit_square_mesh(--refine)``),
none within 1 of the held-out wavenumbers of ``benchmarks/solvers_grans_ablation.py --helmholtz``, the V-cycle
smoother and the residual-norm 3-term step, and writes the shipped ``grans_helmholtz.eqx``
(``GRANS.pretrained(weights="helmholtz")``)::

    XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \
    JAX_ENABLE_X64=1 python scripts/train_grans.py --helmholtz --seed 0

``--num-damped N --absorption LO HI`` adds ``N`` damped problems (absorption α uniform in ``[LO, HI]``: complex
symmetric matrices, trained through G-RANS's complex path) to the ``--num-problems`` real ones, drawn from their own
key (``fold_in(key, 2)``; the real ones are those of the same seed without damped problems)::

    JAX_ENABLE_X64=1 python scripts/train_grans.py --helmholtz --seed 0 --num-damped 4 --absorption 0 0.1 \
        --out /tmp/grans_helmholtz_damped.eqx

Training seeds are ``seed * 1000 + 10 j + i`` (< 30,000); the held-out matrices of the ablation benchmark use seeds
>= 30,000, and the held-out loss printed here uses seeds 40,000 + ..., so neither is ever trained on. The loss
curve and the held-out loss of the initial net (a zero head: ``head_scale=0``) and the trained one go to
``--log`` (JSON).
"""

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from icmlx.solvers import (
    GRANS,
    ChebyshevSmoother,
    GRANSNet,
    MultilevelSmoother,
    ThreeTermStep,
    grans_loss,
    save_weights,
    train_grans,
)
from icmlx.solvers.fem import EQUATIONS, make_problem, unit_square_mesh

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "icmlx" / "solvers" / "_grans" / "grans_pretrained.eqx"
OUT_HELMHOLTZ = ROOT / "src" / "icmlx" / "solvers" / "_grans" / "grans_helmholtz.eqx"
HELMHOLTZ_HELD_OUT_K = (12.0, 18.5, 25.0)  # the wavenumbers of benchmarks/solvers_grans_ablation.py --helmholtz
OUT_MULTILEVEL = ROOT / "benchmarks" / "results" / "grans_multilevel.eqx"
HARD = ("high_contrast", "anisotropic", "helmholtz")
HELD_OUT_EVAL = 40_000


def _class_problem():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from solvers_grans_ablation import class_problem  # the one place the matrix classes are generated

    return class_problem


def held_out_loss(nets, solver, class_problem, classes, refine, seeds, outer, unroll=1, count=8):
    """Mean ``grans_loss`` (``unroll`` iterations) of each net on fresh states of held-out matrices, per class.

    States: the problem's b, white noise and smooth residuals (``_initial_states``), and the states after 4
    iterations of the *zero-head* solver from them (the same states for every net)."""
    from icmlx.solvers._grans._network import _ZeroHead
    from icmlx.solvers._grans._train import _initial_states, _rollout, _step_mode

    out = {name: {} for name in nets}
    for j, cls in enumerate(classes):
        vals = {name: [] for name in nets}
        for i in range(seeds):
            A, b = class_problem(cls, refine, HELD_OUT_EVAL + 10 * j + i)
            op = solver.setup(A)
            r0 = _initial_states(jax.random.key(HELD_OUT_EVAL + i), op, jnp.asarray(b), count)
            step, _ = _step_mode(op, outer, "auto", "held_out_loss")
            later = _rollout(_ZeroHead(channels=2), op, r0, jnp.asarray(4, jnp.int32), 3, step)
            z = jnp.zeros_like(r0)
            for name, net in nets.items():
                vals[name].append(float(grans_loss(net, op, r0, z, z, outer=outer, unroll=unroll)))
                vals[name].append(float(grans_loss(net, op, *later, outer=outer, unroll=unroll)))
        for name in nets:
            out[name][cls] = float(np.mean(vals[name]))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--multilevel", action="store_true",
                    help="train for the V-cycle smoother and the solver's outer step on the hard classes")
    ap.add_argument("--helmholtz", action="store_true",
                    help="train for indefinite Helmholtz (train_grans_helmholtz) and write grans_helmholtz.eqx")
    ap.add_argument("--k-range", type=float, nargs=2, default=[5.0, 30.0], help="--helmholtz: wavenumber range")
    ap.add_argument("--num-problems", type=int, default=6, help="--helmholtz: training problems")
    ap.add_argument("--num-damped", type=int, default=0,
                    help="--helmholtz: damped (complex) training problems added to the --num-problems real ones")
    ap.add_argument("--absorption", type=float, nargs=2, default=[0.0, 0.1],
                    help="--helmholtz: absorption range of the --num-damped problems")
    ap.add_argument("--refine", type=int, default=None,
                    help="mesh refinement (default 4; 5 with --multilevel or --helmholtz)")
    ap.add_argument("--per-equation", type=int, default=None, help="training matrices per equation / class")
    ap.add_argument("--equations", nargs="*", default=None,
                    help="make_problem equations (default: all four) or, with --multilevel, classes")
    ap.add_argument("--steps-per-stage", type=int, default=40)
    ap.add_argument("--stages", type=int, nargs="*", default=[0, 1, 2, 4, 8])
    ap.add_argument("--hidden", type=int, default=16)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--learning-rate", type=float, default=1e-3)
    ap.add_argument("--unroll", type=int, default=1,
                    help="iterations per training state sharing one basis (grans_loss(unroll=...))")
    ap.add_argument("--smoother", choices=["chebyshev", "multilevel"], default=None)
    ap.add_argument("--eval-seeds", type=int, default=2, help="held-out matrices per class for the loss check")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--log", type=Path, default=None, help="JSON with the loss curve and held-out losses")
    args = ap.parse_args(argv)
    if not jax.config.jax_enable_x64:
        raise SystemExit("run with JAX_ENABLE_X64=1 (float64 x, r and projection)")
    if args.helmholtz:
        return train_helmholtz(args, argv)
    ml = args.multilevel
    refine = args.refine or (5 if ml else 4)
    per = args.per_equation or (3 if ml else 2)
    names = args.equations or (list(HARD) if ml else list(EQUATIONS))
    smoother_name = args.smoother or ("multilevel" if ml else "chebyshev")
    out = args.out or (OUT_MULTILEVEL if ml else OUT)
    outer = ThreeTermStep(norm="auto" if ml else "residual")
    class_problem = _class_problem() if ml else None
    key = jax.random.key(args.seed)
    mesh = unit_square_mesh(refine)
    smoother = {"chebyshev": ChebyshevSmoother(), "multilevel": MultilevelSmoother()}[smoother_name]
    solver = GRANS(GRANSNet.init(key, hidden=args.hidden), smoother=smoother)
    ops, rhs, seeds = [], [], []
    for j, eq in enumerate(names):
        for i in range(per):
            s = args.seed * 1000 + 10 * j + i
            if ml:
                A, b = class_problem(eq, refine, s)
            else:
                pb = make_problem(jax.random.key(s), mesh, eq)
                A, b = pb.A, pb.b
            ops.append(solver.setup(A))
            rhs.append(jnp.asarray(b))
            seeds.append(s)
    assert max(seeds) < 30_000  # disjoint from the held-out seeds (>= 30,000)
    t0 = time.perf_counter()
    res = train_grans(jax.random.fold_in(key, 1), ops, rhs, net=solver.net, stages=tuple(args.stages),
                      steps_per_stage=args.steps_per_stage, batch=args.batch,
                      learning_rate=args.learning_rate, smoother=smoother, outer=outer, unroll=args.unroll)
    dt = time.perf_counter() - t0
    meta = {
        "seed": args.seed, "command": _command(argv),
        "refine": refine, "n_train": int(ops[0].n), ("classes" if ml else "equations"): names,
        "train_seeds": seeds,
        "train_seed_hash": hashlib.sha256(str(seeds).encode()).hexdigest()[:16],
        "stages": list(args.stages), "steps_per_stage": args.steps_per_stage, "smoother": smoother_name,
        "outer": repr(outer), "loss": "auto (energy on SPD-like, residual otherwise)" if ml else "residual",
        "batch": args.batch, "learning_rate": args.learning_rate, "unroll": args.unroll,
        "eval_before": res.eval_before, "eval_after": res.eval_after, "train_seconds": round(dt, 1),
        "jax": jax.__version__,
    }
    save_weights(out, res.net, meta)
    print(f"wrote {out} ({out.stat().st_size} bytes); training-state loss "
          f"{res.eval_before:+.3f} -> {res.eval_after:+.3f} in {dt:.0f} s", flush=True)
    if args.log is not None:
        log = _training_log(meta, res)
        if ml and args.eval_seeds:
            t1 = time.perf_counter()
            nets = {"initial (zero head)": res.initial_net, "trained": res.net}
            log["held_out_seeds"] = f"{HELD_OUT_EVAL} + 10 j + i, i < {args.eval_seeds}"
            for k in sorted({1, args.unroll}):
                held = held_out_loss(nets, solver, class_problem, names, refine, args.eval_seeds, outer, unroll=k)
                log["held_out_loss" + ("" if k == 1 else f"_unroll{k}")] = held
                print(f"held-out loss, unroll={k} (lower is better; {time.perf_counter() - t1:.0f} s):")
                for name, per_cls in held.items():
                    print(f"  {name:22s}", "  ".join(f"{c} {v:+.4f}" for c, v in per_cls.items()))
        _write_log(args.log, log)


def _command(argv) -> str:
    """The command line recorded in a weight file's header."""
    return "python scripts/train_grans.py " + " ".join(sys.argv[1:] if argv is None else argv)


def _training_log(meta: dict, res) -> dict:
    """The header plus the per-step losses and stages of a training run."""
    return {**meta, "losses": [float(v) for v in np.asarray(res.losses)],
            "stage_of_step": [int(v) for v in res.stage_of_step]}


def _write_log(path, log: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(log, indent=1) + "\n")
    print(f"wrote {path}")


def train_helmholtz(args, argv):
    """``--helmholtz``: `train_grans_helmholtz` and the shipped ``grans_helmholtz.eqx`` with its command in the
    header; the loss of the zero head (the initial net) and the trained net on held-out problems go to ``--log``."""
    from icmlx.solvers import helmholtz_family, train_grans_helmholtz

    refine = args.refine or 5
    key = jax.random.key(args.seed)
    problems = helmholtz_family(jax.random.fold_in(key, 0), args.num_problems, wavenumber_range=tuple(args.k_range),
                                refine=refine, exclude=HELMHOLTZ_HELD_OUT_K)
    if args.num_damped:
        problems += helmholtz_family(jax.random.fold_in(key, 2), args.num_damped, wavenumber_range=tuple(args.k_range),
                                     refine=refine, exclude=HELMHOLTZ_HELD_OUT_K,
                                     absorption_range=tuple(args.absorption))
    t0 = time.perf_counter()
    res = train_grans_helmholtz(key, problems, hidden=args.hidden, stages=tuple(args.stages),
                                steps_per_stage=args.steps_per_stage, batch=args.batch,
                                learning_rate=args.learning_rate, unroll=args.unroll)
    dt = time.perf_counter() - t0
    out = args.out or OUT_HELMHOLTZ
    meta = {"seed": args.seed, "command": _command(argv),
            "family": "helmholtz", "refine": refine, "n_train": int(problems[0].A.shape[0]),
            "wavenumbers": [round(float(p.param), 4) for p in problems], "wavenumber_range": list(args.k_range),
            "absorptions": [round(float(p.absorption), 4) for p in problems],
            "held_out_k": list(HELMHOLTZ_HELD_OUT_K), "stages": list(args.stages),
            "steps_per_stage": args.steps_per_stage, "smoother": "multilevel", "outer": "ThreeTermStep(norm='auto')",
            "batch": args.batch, "learning_rate": args.learning_rate, "unroll": args.unroll,
            "eval_before": res.eval_before, "eval_after": res.eval_after, "train_seconds": round(dt, 1),
            "jax": jax.__version__}
    save_weights(out, res.net, meta)
    print(f"wrote {out} ({out.stat().st_size} bytes); wavenumbers {meta['wavenumbers']}; training-state loss "
          f"{res.eval_before:+.3f} -> {res.eval_after:+.3f} in {dt:.0f} s", flush=True)
    if args.log is not None:
        _write_log(args.log, _training_log(meta, res))


if __name__ == "__main__":
    main()
