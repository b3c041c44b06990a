"""G-RANS vs classical solvers on the same held-out FEM systems, in one run.

Time to a *true* relative residual of 1e-5 (recomputed here with SciPy in float64, never taken from a
solver), setup included; JIT compile measured apart (first call on a different matrix in the same padding
bucket). Thread counts pinned to 1 for every library (OpenBLAS/MKL/OMP and XLA) before anything is imported.
Solvers are interleaved (each repeat runs every solver once) and ``paired_over_best_jax_krylov`` is the median of
per-repeat time ratios to the fastest JAX Krylov solver, which cancels load drifting over a run.

Solvers:
- G-RANS variants (``--variants``):
  - "default" = ``GRANS.pretrained()``: smoothed-aggregation V-cycle smoother, no network, no projection,
    ``outer="auto"`` (energy-norm 3-term step on SPD-like matrices, flexible GCR(100) on symmetric indefinite,
    GCR(40) on nonsymmetric ones);
  - "paper" = ``GRANS.pretrained(smoother="chebyshev")``: the paper's configuration (Chebyshev smoother,
    shipped network basis every iteration, 3-term outer step);
  - "frozen" = the paper's with ``outer=FlexibleGCR(memory=40), refresh=10**6`` (network basis once);
  - "multilevel" = ``GRANS.pretrained(network=True)``: the default with the shipped network and its projection;
  - with ``--full-memory`` also the paper's with ``outer=FlexibleGCR(memory=400)``.
- JAX CG / CG+Jacobi / BiCGStab / GMRES(30) from icmlx (same runtime), each on the COO ``SparseMatrix`` and
  on the faster ``EllMatrix`` (the conversion is timed as set-up).
- The non-learned floor "JAX SA-AMG+CG": the ``smoothed_aggregation`` V-cycle as CG preconditioner (SPD only).
- SciPy CG / CG+Jacobi / BiCGStab / GMRES(30), PyAMG RS and SA (accelerated by CG for SPD, GMRES otherwise;
  retried with tol/10 up to 3 times when their own stopping rule stops short), SuperLU (``splu``).

    python benchmarks/solvers_fem.py --quick       # n = 3,969 and 16,129, one matrix per cell
    python benchmarks/solvers_fem.py               # n up to 65,025, three matrices per cell
    python benchmarks/solvers_fem.py --refines 7 --per-cell 1 --variants default   # n = 65,025 only
"""

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
os.environ.setdefault("JAX_ENABLE_X64", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402
import scipy.sparse.linalg as sla  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import print_table, write_results  # noqa: E402
from icmlx.solvers import (  # noqa: E402
    GRANS,
    EllMatrix,
    FlexibleGCR,
    bicgstab,
    cg,
    gmres,
    smoothed_aggregation,
)
from icmlx.solvers.fem import make_problem, unit_square_mesh  # noqa: E402

RTOL = 1e-5
HELD_OUT = 20_000  # seeds >= 20 000 are never used for training


def relres(A, b, x):
    return float(np.linalg.norm(b - A @ np.asarray(x, np.float64)) / np.linalg.norm(b))


def scipy_solvers(spd):
    def krylov(method, pre=None, **kw):
        def run(A, b):
            M = None
            if pre == "jacobi":
                d = 1.0 / A.diagonal()
                M = sla.LinearOperator(A.shape, matvec=lambda v: d * v)
            it = [0]
            x, _ = method(A, b, rtol=RTOL, M=M, callback=lambda *_: it.__setitem__(0, it[0] + 1),
                          **kw)
            return x, it[0]
        return run

    def lu(A, b):
        return sla.splu(A.tocsc()).solve(b), 1

    def amg(kind):
        def run(A, b):
            import pyamg

            ml = (pyamg.ruge_stuben_solver if kind == "RS" else pyamg.smoothed_aggregation_solver)(A)
            tol = RTOL
            for _ in range(4):  # retry with tol/10 when pyamg's own criterion stops short
                res = []
                x = ml.solve(b, tol=tol, accel="cg" if spd else "gmres", maxiter=400,
                             residuals=res)
                if relres(A, b, x) <= RTOL:
                    break
                tol /= 10
            return x, len(res) - 1
        return run

    out = {"scipy CG": krylov(sla.cg, maxiter=6000), "scipy CG+Jacobi": krylov(sla.cg, "jacobi",
                                                                              maxiter=6000)}
    if not spd:
        out = {}
    out["scipy BiCGStab"] = krylov(sla.bicgstab, maxiter=6000)
    out["scipy GMRES(30)"] = krylov(sla.gmres, restart=30, maxiter=200, callback_type="pr_norm")
    out["PyAMG RS"] = amg("RS")
    out["PyAMG SA"] = amg("SA")
    out["SuperLU"] = lu
    return out


def jax_solvers(spd, only=None):
    """JAX Krylov baselines: name -> (prepare(pb) -> (A, b), jitted solve(A, b) -> LinearSolution).

    ``prepare`` is timed with the solve (the ELL conversion is the baseline's set-up). The ELL matrix is
    padded to a multiple of 128 rows with identity rows (XLA:CPU gathers are 2-3x slower on odd lengths);
    the padded entries of ``b`` are 0, so they stay 0 in ``x``."""
    coo = lambda pb: (pb.A, pb.b)  # noqa: E731

    def ell(pb):
        n = pb.A.shape[0]
        m = -(-n // 128) * 128
        bp = jax.numpy.zeros(m, pb.b.dtype).at[:n].set(pb.b)
        return EllMatrix.from_sparse(pb.A, num_rows=m, num_cols=m, pad_identity=True), bp

    kr = {}
    if spd:
        kr["CG"] = lambda A, b: cg(A, b, rtol=RTOL, max_steps=6000, throw=False)
        kr["CG+Jacobi"] = lambda A, b: cg(A, b, rtol=RTOL, max_steps=6000, preconditioner="jacobi",
                                          throw=False)
    kr["BiCGStab"] = lambda A, b: bicgstab(A, b, rtol=RTOL, max_steps=6000, throw=False)
    kr["GMRES(30)"] = lambda A, b: gmres(A, b, rtol=RTOL, restart=30, max_steps=6000, throw=False)
    out = {}
    for name, f in kr.items():
        if only and name not in only:
            continue
        out[f"JAX {name}"] = (coo, jax.jit(f))
        out[f"JAX {name} (ELL)"] = (ell, jax.jit(f))
    return out


def sa_floor():
    """The non-learned multilevel floor: SA V-cycle (same hierarchy as G-RANS multilevel) + JAX CG."""
    @jax.jit
    def solve(H, E, bp):
        return cg(E, bp, preconditioner=H, rtol=RTOL, max_steps=400, throw=False)

    def run(pb):
        H = smoothed_aggregation(pb.A)
        n, npad = pb.A.shape[0], H.sizes[0]
        E = EllMatrix.from_sparse(pb.A, num_rows=npad, num_cols=npad, pad_identity=True)
        bp = jax.numpy.zeros(npad, E.val.dtype).at[:n].set(pb.b)
        sol = jax.block_until_ready(solve(H, E, bp))
        return sol.value[:n], int(sol.num_steps)
    return run


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--refines", type=int, nargs="*", default=None)
    ap.add_argument("--per-cell", type=int, default=None)
    ap.add_argument("--equations", nargs="*", default=["poisson", "reaction", "advection", "helmholtz"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--full-memory", action="store_true",
                    help="also run G-RANS with outer GCR(400) (full memory up to 200 iterations; Helmholtz)")
    ap.add_argument("--variants", nargs="*", default=["default", "paper", "frozen", "multilevel"],
                    help="G-RANS variants: default (GRANS.pretrained()), paper (Chebyshev, network every "
                         "iteration), frozen (paper's with GCR(40), basis once), multilevel (default + network "
                         "and projection)")
    ap.add_argument("--jax-krylov", nargs="*", default=None,
                    help="subset of CG, CG+Jacobi, BiCGStab, GMRES(30) (default: all)")
    ap.add_argument("--no-scipy", action="store_true", help="skip the SciPy/PyAMG/SuperLU baselines")
    args = ap.parse_args(argv)
    refines = args.refines or ([5, 6] if args.quick else [5, 6, 7])
    per_cell = args.per_cell or (1 if args.quick else 3)
    if not jax.config.jax_enable_x64:
        raise SystemExit("needs JAX_ENABLE_X64=1")
    # the default (per-class outer step, no network, no projection) and the configurations it replaced
    def variants_for(eq):
        v = {}
        if "default" in args.variants:
            v["G-RANS"] = {}
        if "paper" in args.variants:
            v["G-RANS paper (Chebyshev, net every it.)"] = dict(smoother="chebyshev")
        if "frozen" in args.variants:
            v["G-RANS paper GCR(40) frozen"] = dict(smoother="chebyshev", outer=FlexibleGCR(memory=40),
                                                    refresh=10**6)
        if "multilevel" in args.variants:
            v["G-RANS multilevel + network"] = dict(network=True)
        if args.full_memory:
            v["G-RANS paper GCR(400)"] = dict(smoother="chebyshev", outer=FlexibleGCR(memory=400))
        return v

    rows = []
    for refine in refines:
        mesh = unit_square_mesh(refine)
        for eq in args.equations:
            gsolvers = {}
            for vname, kw in variants_for(eq).items():
                g = GRANS.pretrained(rtol=RTOL, max_steps=400, **kw)
                # throw=False: a solver that misses the tolerance is reported (converged: False), not raised
                gsolvers[vname] = (g, jax.jit(lambda op, b, g=g: g.solve(op, b, throw=False)))
            warm = make_problem(jax.random.key(HELD_OUT + 999), mesh, eq)
            # compile every solver on a different matrix of the same bucket
            g_compile = {}
            for vname, (g, gsolve) in gsolvers.items():
                t0 = time.perf_counter()
                wop = g.setup(warm.A)
                jax.block_until_ready(gsolve(wop, warm.b))
                g_compile[vname] = time.perf_counter() - t0
            spd = GRANS.pretrained().setup(warm.A).spd_like
            jx = jax_solvers(spd, args.jax_krylov)
            jx_compile = {}
            for name, (prep, f) in jx.items():
                t0 = time.perf_counter()
                jax.block_until_ready(f(*prep(warm)))
                jx_compile[name] = time.perf_counter() - t0
            floor = sa_floor() if spd else None
            if floor is not None:
                t0 = time.perf_counter()
                floor(warm)
                floor_compile = time.perf_counter() - t0
            per, samples = {}, {}
            for i in range(per_cell):
                pb = make_problem(jax.random.key(HELD_OUT + 100 * refine + i), mesh, eq)
                A = pb.A.to_scipy()
                b = np.asarray(pb.b, np.float64)
                # name -> (run() -> (x, iterations), compile time); every run includes its own set-up
                runs = {}
                for vname, (g, gsolve) in gsolvers.items():
                    def run_grans(pb=pb, g=g, gsolve=gsolve):
                        sol = jax.block_until_ready(gsolve(g.setup(pb.A), pb.b))
                        return sol.value, int(sol.num_steps)
                    runs[vname] = (run_grans, g_compile[vname])
                for name, (prep, f) in jx.items():
                    def run_jax(f=f, prep=prep, pb=pb, n=A.shape[0]):
                        ks = jax.block_until_ready(f(*prep(pb)))
                        return ks.value[:n], int(ks.num_steps)
                    runs[name] = (run_jax, jx_compile[name])
                if floor is not None:
                    runs["JAX SA-AMG+CG (non-learned floor)"] = (lambda pb=pb, fl=floor: fl(pb), floor_compile)
                for name, f in ({} if args.no_scipy else scipy_solvers(spd)).items():
                    runs[name] = (lambda f=f, A=A, b=b: f(A, b), 0.0)
                # interleaved: every repeat runs each solver once, so load drifting over the run hits all of them
                # alike and the per-repeat ratios below are paired
                ts, outs = {nm: [] for nm in runs}, {}
                for _ in range(args.repeats):
                    for nm, (fn, _) in runs.items():
                        t0 = time.perf_counter()
                        outs[nm] = fn()
                        ts[nm].append(time.perf_counter() - t0)
                for nm, (_, comp) in runs.items():
                    x, it = outs[nm]
                    per.setdefault(nm, []).append((statistics.median(ts[nm]), it, relres(A, b, x), comp))
                    samples.setdefault(nm, []).extend(ts[nm])
            med = {nm: statistics.median(x[0] for x in vals) for nm, vals in per.items()}
            converged = {nm for nm, vals in per.items() if all(x[2] <= RTOL * 1.0001 for x in vals)}
            tg = {v: med[v] for v in gsolvers if v in converged}  # converged G-RANS variants only
            best_name = min((nm for nm in jx if nm in converged), key=med.get, default=None)
            best_jax = med[best_name] if best_name else float("nan")  # NaN: no JAX Krylov solver converged
            fl = per.get("JAX SA-AMG+CG (non-learned floor)")
            t_floor = statistics.median(x[0] for x in fl) if fl else float("nan")
            for name, vals in per.items():
                ok = [v[2] <= RTOL * 1.0001 for v in vals]
                t = med[name]
                rows.append({
                    "n": mesh.n, "equation": eq, "solver": name,
                    "success": f"{sum(ok)}/{len(ok)}",
                    "time_s": t, "iters": int(statistics.median(v[1] for v in vals)),
                    "max_relres": max(v[2] for v in vals), "compile_s": vals[0][3],
                    "grans_over_this": (tg["G-RANS"] / t if all(ok) and "G-RANS" in tg
                                        else float("nan")),
                    "fastest_grans_over_this": (min(tg.values()) / t if all(ok) and tg
                                                else float("nan")),
                    "this_over_best_jax_krylov": t / best_jax,
                    # median over matrices x repeats of the per-repeat ratio to the best JAX Krylov solver
                    # (interleaved runs: robust to load drift on a shared machine)
                    "paired_over_best_jax_krylov": (statistics.median(
                        u / v for u, v in zip(samples[name], samples[best_name], strict=True))
                        if best_name else float("nan")),
                    "this_over_sa_floor": t / t_floor,
                })
            print_table([r for r in rows if r["n"] == mesh.n and r["equation"] == eq],
                        title=f"n={mesh.n} {eq}")
            print(flush=True)
    name = "solvers_fem_quick" if args.quick else "solvers_fem"
    path = write_results(name, rows, dtype="float64 x/r, float32 network",
                         extra={"rtol": RTOL, "held_out_seed_base": HELD_OUT,
                                "threads": "OPENBLAS/OMP/MKL=1, XLA single-threaded",
                                "note": "time_s = setup + solve (median of repeats; solvers interleaved), "
                                        "compile apart; paired_over_best_jax_krylov: median of per-repeat ratios; "
                                        "grans_over_this < 1 means default G-RANS is faster; "
                                        "this_over_best_jax_krylov: time / fastest converged JAX Krylov "
                                        "(COO or ELL product; the SA floor is not counted as Krylov)"})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
