"""G-RANS ablation on held-out matrices: trained network vs zero head vs no projection, default configuration.

Does the learned part earn its place? In the default configuration (``GRANS()``: smoothed-aggregation V-cycle
smoother, basis from the initial residual, ``outer="auto"``), on the classes where multigrid struggles and on
Poisson, this compares

- ``trained``: the shipped network (``GRANS.pretrained(network=True)``), basis once;
- ``trained, basis every it.``: the same network re-reading every residual (``refresh=1``, its best chance);
- ``zero head``: ``w = [1, r̂]`` per level, no learned part, no network run (``net=None``);
- ``zero head, basis every it.``: the same re-reading every residual (``refresh=1``): the control for the
  trained network's ``refresh=1`` row (how much of its gain is the refresh, not the learning);
- ``no projection (default)``: ``projection=False``, smoother and outer step only (no basis at all; what
  ``GRANS()`` and ``GRANS.pretrained()`` run).

Classes (held-out seeds ≥ 30 000, never used for training):

- ``poisson``: ``make_problem(..., "poisson")`` (κ = exp(2 g), about two decades);
- ``high_contrast``: binary inclusions, κ = 1e4 where the random field ``g > 0.5``, else 1;
- ``anisotropic``: rotated anisotropic diffusion, ε = 1e-3, θ = π/8 + 0.1·i (PyAMG gallery, Q1 stencil on a
  square grid with as many unknowns as the FEM mesh), random right-hand side;
- ``helmholtz``: ``make_problem(..., "helmholtz")``, k = 12;
- (``--classes``) ``reaction`` and ``advection`` from ``make_problem``, to check the default on all four equations.

Every solve runs to true relative residual 1e-5, checked with SciPy in float64 from the returned ``x``.
Time = set-up + solve (compiled; the compile is done on a different matrix of the same bucket and reported
apart). The decision rule (issue #19): the network stays on the default path only if it needs ≥ 25% fewer
iterations than the zero head on at least one hard class (median over seeds), the zero head run with the same
basis refresh as the trained row (the column against the zero head with the basis once, as in the earlier
runs, is reported too).

    python benchmarks/solvers_grans_ablation.py --quick            # n = 3,969, 2 seeds per cell
    python benchmarks/solvers_grans_ablation.py                    # n = 16,129, 3 seeds per cell
    python benchmarks/solvers_grans_ablation.py --weights W.eqx    # another network (e.g. a retrained one)
"""

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
os.environ.setdefault("JAX_ENABLE_X64", "1")

import argparse  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import print_table, write_results  # noqa: E402
from icmlx.solvers import GRANS, load_weights  # noqa: E402
from icmlx.solvers.fem import EQUATIONS, assemble_p1, make_problem, quadrature_points, random_field, unit_square_mesh  # noqa: E402

RTOL = 1e-5
HELD_OUT = 30_000
CLASSES = ("poisson", "high_contrast", "anisotropic", "helmholtz", "reaction", "advection")
DEFAULT_CLASSES = CLASSES[:4]  # the cells; reaction and advection complete the four model equations
HARD = ("high_contrast", "anisotropic", "helmholtz")


def class_problem(cls, refine, seed, theta=None):
    """``(A scipy csr float64, b float64)`` of class ``cls`` on the grid of ``unit_square_mesh(refine)``, drawn
    from ``seed`` (shared with ``scripts/train_grans.py``, which trains on seeds < HELD_OUT).

    ``anisotropic``: rotation ``theta`` (default: uniform in [0, π) from the seed), ε = 1e-3."""
    key = jax.random.key(seed)
    mesh = unit_square_mesh(refine)
    if cls in EQUATIONS:
        pb = make_problem(key, mesh, cls)
        return pb.A.to_scipy().tocsr(), np.asarray(pb.b, np.float64)
    if cls == "high_contrast":
        k1, k2 = jax.random.split(key)
        xq = quadrature_points(mesh).astype(jnp.float64)
        g = random_field(k1, xq)
        A, b = assemble_p1(mesh, kappa=jnp.where(g > 0.5, 1e4, 1.0), source=1.0 + random_field(k2, xq))
        return A.to_scipy().tocsr(), np.asarray(b, np.float64)
    if cls != "anisotropic":
        raise ValueError(f"unknown class {cls!r}; one of {CLASSES}")
    from pyamg.gallery import diffusion_stencil_2d, stencil_grid

    rng = np.random.default_rng(seed)
    theta = float(rng.uniform(0.0, math.pi)) if theta is None else theta
    side = math.isqrt(mesh.n)
    st = diffusion_stencil_2d(epsilon=1e-3, theta=theta, type="FE")
    A = stencil_grid(st, (side, side), format="csr").astype(np.float64)
    return A, rng.standard_normal(A.shape[0])


def problem(cls, refine, i):
    """The held-out matrix ``i`` of class ``cls`` (seeds >= HELD_OUT, never used for training)."""
    if cls == "anisotropic":  # the rotations and right-hand sides of the earlier runs
        A, _ = class_problem(cls, refine, HELD_OUT + i, theta=math.pi / 8 + 0.1 * i)
        return A, np.random.default_rng(HELD_OUT + i).standard_normal(A.shape[0])
    return class_problem(cls, refine, HELD_OUT + 100 * refine + 10 * CLASSES.index(cls) + i)


def relres(A, b, x):
    return float(np.linalg.norm(b - A @ np.asarray(x, np.float64)) / np.linalg.norm(b))


def variants(weights):
    net = load_weights(weights)[0] if weights else None
    kw = dict(rtol=RTOL, max_steps=300)
    trained = GRANS.pretrained(network=True, **kw) if net is None else GRANS(net, **kw)
    return {
        "trained": trained,
        "trained, basis every it.": GRANS(trained.net, refresh=1, **kw),
        "zero head": GRANS(None, projection=True, **kw),
        "zero head, basis every it.": GRANS(None, projection=True, refresh=1, **kw),
        "no projection (default)": GRANS(None, projection=False, **kw),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--refines", type=int, nargs="*", default=None)
    ap.add_argument("--seeds", type=int, default=None, help="held-out matrices per cell (>= 2)")
    ap.add_argument("--classes", nargs="*", default=list(DEFAULT_CLASSES), choices=CLASSES)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--weights", type=Path, default=None, help="network weights instead of the shipped ones")
    args = ap.parse_args(argv)
    if not jax.config.jax_enable_x64:
        raise SystemExit("needs JAX_ENABLE_X64=1")
    refines = args.refines or ([5] if args.quick else [6])
    seeds = args.seeds or (2 if args.quick else 3)
    solvers = variants(args.weights)
    jitted = {nm: jax.jit(lambda op, b, g=g: g.solve(op, b, throw=False)) for nm, g in solvers.items()}
    rows = []
    for refine in refines:
        for cls in args.classes:
            warm = problem(cls, refine, 99)
            compile_s = {}
            for nm, g in solvers.items():
                t0 = time.perf_counter()
                jax.block_until_ready(jitted[nm](g.setup(warm[0]), warm[1]))
                compile_s[nm] = time.perf_counter() - t0
            for i in range(seeds):
                A, b = problem(cls, refine, i)
                ts = {nm: [] for nm in solvers}
                out = {}
                for _ in range(args.repeats):  # interleaved repeats: load drift hits every variant alike
                    for nm, g in solvers.items():
                        t0 = time.perf_counter()
                        op = g.setup(A)
                        sol = jax.block_until_ready(jitted[nm](op, b))
                        ts[nm].append(time.perf_counter() - t0)
                        out[nm] = (sol, op)
                for nm, (sol, op) in out.items():
                    rr = relres(A, b, sol.value)
                    cfg = solvers[nm].configuration(op)
                    rows.append({"n": A.shape[0], "class": cls, "seed": i, "variant": nm,
                                 "iters": int(sol.num_steps), "converged": rr <= RTOL * 1.0001,
                                 "relres": rr, "time_s": statistics.median(ts[nm]),
                                 "compile_s": compile_s[nm], "outer": repr(cfg["outer"]),
                                 "matrix_class": cfg["matrix_class"]})
            print_table([r for r in rows if r["class"] == cls and r["n"] == A.shape[0]],
                        columns=["n", "class", "seed", "variant", "iters", "converged", "relres", "time_s",
                                 "compile_s", "outer"], title=f"{cls}, n = {A.shape[0]}")
            print(flush=True)
    summary, earns = [], False
    for refine_n in sorted({r["n"] for r in rows}):
        for cls in args.classes:
            cell = [r for r in rows if r["n"] == refine_n and r["class"] == cls]
            it = {nm: statistics.median(r["iters"] for r in cell if r["variant"] == nm) for nm in solvers}
            ok = {nm: all(r["converged"] for r in cell if r["variant"] == nm) for nm in solvers}
            tm = {nm: statistics.median(r["time_s"] for r in cell if r["variant"] == nm) for nm in solvers}
            best_trained = min(("trained", "trained, basis every it."), key=lambda nm: (not ok[nm], it[nm]))
            saving = 1.0 - it[best_trained] / it["zero head"] if ok["zero head"] else float("nan")
            # matched: each trained row against the zero head with the same basis refresh
            pairs = (("trained", "zero head"), ("trained, basis every it.", "zero head, basis every it."))
            matched = max(((1.0 - it[t] / it[z]) if ok[z] else float("nan") for t, z in pairs if ok[t]),
                          default=float("nan"))
            if cls in HARD and any(ok[t] and (not ok[z] or 1.0 - it[t] / it[z] >= 0.25) for t, z in pairs):
                earns = True
            summary.append({"n": refine_n, "class": cls,
                            **{f"iters {nm}": it[nm] for nm in solvers},
                            **{f"ok {nm}": ok[nm] for nm in solvers},
                            **{f"time {nm}": tm[nm] for nm in solvers},
                            "best trained vs zero head: fewer iterations": saving,
                            "trained vs zero head, same refresh: fewer iterations": matched})
    print_table(summary, columns=["n", "class", *[f"iters {nm}" for nm in solvers],
                                  "best trained vs zero head: fewer iterations",
                                  "trained vs zero head, same refresh: fewer iterations"], title="median iterations")
    print_table(summary, columns=["n", "class", *[f"time {nm}" for nm in solvers]], title="median time (s)")
    verdict = ("the trained network saves >= 25% of the zero head's iterations (same basis refresh) on a hard "
               "class" if earns else
               "the trained network does not save >= 25% of the zero head's iterations (same basis refresh) on any "
               "hard class: it does not earn a place on the default path")
    print("\nDecision:", verdict)
    name = "solvers_grans_ablation" + ("_quick" if args.quick else "")
    path = write_results(name, rows, dtype="float64 x/r, float32 network",
                         extra={"rtol": RTOL, "held_out_seed_base": HELD_OUT, "summary": summary,
                                "decision": verdict, "weights": str(args.weights or "shipped"),
                                "threads": "OPENBLAS/OMP/MKL=1, XLA single-threaded",
                                "note": "time_s = setup + solve (median of interleaved repeats), compile apart; "
                                        "relres: SciPy float64 from the returned x"})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
