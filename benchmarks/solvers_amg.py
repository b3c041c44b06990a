r"""icmlx ``solve`` (smoothed aggregation + CG in JAX) against PyAMG SA+CG and RS+CG, SciPy CG, JAX CG and SuperLU.

Problems (PyAMG gallery and ``icmlx.solvers.fem``): 2-D Poisson (5-point), rotated anisotropic diffusion
(ε = 1e-3, θ = π/8, FE stencil), linear elasticity with its rigid-body modes, and a high-contrast P1 FEM Poisson
system. All solvers run in one process, interleaved per problem, to the same relative tolerance (1e-8 with x64);
every answer's true relative residual is recomputed in float64 SciPy. icmlx's set-up is timed apart from its
first solve (which includes compilation): ``compile`` is the first set-up and first solve minus the steady ones.
The icmlx and PyAMG set-ups (and then their solves) alternate ``--repeats`` times and report medians, so load
from other processes falls on both sides of each ratio. ``--strength symmetric evolution`` runs icmlx and PyAMG
SA with each measure (``EvolutionStrength`` / PyAMG's ``strength="evolution"``); each ratio is against PyAMG SA
with the same measure.

The complex damped Helmholtz system $-\Delta u - (k^2 + i\,k^2/2) u$ (5-point stencil on the first grid size,
``k = 20``; complex symmetric, indefinite real part) runs as ``solve(A, b)`` on the complex matrix beside
``pyamg.smoothed_aggregation_solver(A).solve(b, accel="gmres")``, in the part ``<part>_helmholtz_complex`` with
``iters_ratio``/``time_ratio`` against PyAMG.

Usage: ``python benchmarks/solvers_amg.py --quick`` (about 16k-65k unknowns) or without ``--quick`` for 65k, 262k
(``--sizes`` to choose, e.g. ``--sizes 1024`` for the 1M grids).
"""

import argparse
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402
import pyamg  # noqa: E402
import scipy  # noqa: E402
import scipy.sparse as sp  # noqa: E402
import scipy.sparse.linalg as spla  # noqa: E402
from pyamg.gallery import diffusion_stencil_2d, linear_elasticity, poisson, stencil_grid  # noqa: E402

import icmlx  # noqa: E402
from icmlx.solvers import amg_setup, cg, solve  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import write_results  # noqa: E402

RTOL = 1e-8


def problems(m: int):
    """(name, A, B) for an m × m grid (elasticity: m × m nodes, 2 dofs each)."""
    out = [("poisson", poisson((m, m), format="csr"), None)]
    st = diffusion_stencil_2d(epsilon=1e-3, theta=np.pi / 8, type="FE")
    out.append(("aniso", stencil_grid(st, (m, m), format="csr"), None))
    me = int(m / np.sqrt(2))
    A, B = linear_elasticity((me, me), format="bsr")
    out.append(("elasticity", A, B))
    from icmlx.solvers.fem import make_problem, unit_square_mesh

    ref = max(3, int(round(np.log2(m))) - 1)  # unit_square_mesh(ref) has (2^(ref+1) - 1)^2 interior nodes
    # high contrast: the coefficient exp(4 g) of a smooth random field g spans several decades
    pb = make_problem(jax.random.key(3), unit_square_mesh(ref), "poisson", param=4.0)
    out.append(("fem_poisson", sp.csr_matrix(pb.A.to_scipy()), None))
    return out


def relres(A, b, x):
    x = np.asarray(x, np.complex128 if np.iscomplexobj(x) else np.float64)
    return float(np.linalg.norm(b - A @ x) / np.linalg.norm(b))


def timed(f, repeats=1):
    ts, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = f()
        jax.block_until_ready(getattr(out, "value", out))
        ts.append(time.perf_counter() - t)
    return out, float(np.median(ts)), ts


def _paired(A, B, b, repeats, strength, rs):
    """icmlx SA+CG and PyAMG SA+CG (and RS+CG) with one strength measure, alternating set-up by set-up and solve
    by solve so that load from elsewhere falls on both (medians of ``repeats``)."""
    tag = "" if strength == "symmetric" else f", {strength}"
    # a first set-up may compile (the node-by-node aggregation fallback for a graph past the wavefront's degree
    # cap, one program per padded level shape): it is timed apart, the later ones are the steady set-up
    _, t_setup_first, _ = timed(lambda: amg_setup(A, near_nullspace=B, strength=strength))
    kinds = ["SA"] + (["RS"] if rs and B is None else [])
    peers = {}

    def build(kind):
        if kind == "SA":
            return pyamg.smoothed_aggregation_solver(A, B=B, strength=strength)
        return pyamg.ruge_stuben_solver(sp.csr_matrix(A))

    ts_icmlx, ts_peer = [], {k: [] for k in kinds}
    for _ in range(repeats):
        s, t, _ = timed(lambda: amg_setup(A, near_nullspace=B, strength=strength))
        ts_icmlx.append(t)
        for k in kinds:
            peers[k], t, _ = timed(lambda k=k: build(k))
            ts_peer[k].append(t)
    sol, t_first, _ = timed(lambda: s.solve(b, rtol=RTOL, throw=False))
    res = {k: [] for k in kinds}

    def go(k):
        res[k].clear()
        return peers[k].solve(b, tol=RTOL, accel="cg", residuals=res[k], maxiter=1000)

    tv_icmlx, tv_peer, xs = [], {k: [] for k in kinds}, {}
    for _ in range(repeats):
        sol, t, _ = timed(lambda: s.solve(b, rtol=RTOL, throw=False))
        tv_icmlx.append(t)
        for k in kinds:
            xs[k], t, _ = timed(lambda k=k: go(k))
            tv_peer[k].append(t)
    t_setup, t_solve = float(np.median(ts_icmlx)), float(np.median(tv_icmlx))
    compile_s = max(t_setup_first - t_setup, 0.0) + max(t_first - t_solve, 0.0)
    rows = [dict(solver=f"icmlx solve (SA+CG{tag})", iters=int(sol.num_steps), setup=t_setup, solve=t_solve,
                 total=t_setup + t_solve, compile=compile_s, relres=relres(A, b, sol.value),
                 status=icmlx.result_name(sol.result), method=s.method, levels=list(s.hierarchy.sizes))]
    for k in kinds:
        ts, tsol = float(np.median(ts_peer[k])), float(np.median(tv_peer[k]))
        rows.append(dict(solver=f"PyAMG {k}+CG{tag if k == 'SA' else ''}", iters=len(res[k]) - 1, setup=ts,
                         solve=tsol, total=ts + tsol, compile=0.0, relres=relres(A, b, xs[k]), status="-"))
    return rows


def run_problem(name, A, B, repeats, peers, strengths=("symmetric",)):
    n = A.shape[0]
    b = np.random.default_rng(0).standard_normal(n)
    rows = []
    for strength in strengths:
        rows.extend(_paired(A, B, b, repeats, strength, rs=strength == "symmetric"))
    if peers:
        it = [0]

        def scg():
            it[0] = 0
            return spla.cg(A, b, rtol=RTOL, maxiter=20000, callback=lambda _: it.__setitem__(0, it[0] + 1))[0]

        x, t, _ = timed(scg)
        rows.append(dict(solver="SciPy CG", iters=it[0], setup=0.0, solve=t, total=t, compile=0.0,
                         relres=relres(A, b, x), status="-"))
        (_, t_first, _) = timed(lambda: cg(A, b, rtol=RTOL, max_steps=20000, throw=False))
        sol, t, _ = timed(lambda: cg(A, b, rtol=RTOL, max_steps=20000, throw=False))
        rows.append(dict(solver="JAX CG (icmlx.cg)", iters=int(sol.num_steps), setup=0.0, solve=t, total=t,
                         compile=max(t_first - t, 0.0), relres=relres(A, b, sol.value),
                         status=icmlx.result_name(sol.result)))
        if n <= 300_000:
            lu, ts, _ = timed(lambda: spla.splu(sp.csc_matrix(A)))
            x, t, _ = timed(lambda: lu.solve(b))
            rows.append(dict(solver="SuperLU", iters=0, setup=ts, solve=t, total=ts + t, compile=0.0,
                             relres=relres(A, b, x), status="-"))
    for r in rows:
        r.update(problem=name, n=n)
    return rows


def helmholtz_complex(m: int, k: float = 20.0, damping: float = 0.5):
    """The damped Helmholtz matrix −Δ − (k² + i·damping·k²) on an m × m grid of the unit square (Dirichlet)."""
    h = 1.0 / (m + 1)
    L = poisson((m, m), format="csr") / h**2
    return (L - (k**2 + 1j * damping * k**2) * sp.eye(m * m)).tocsr()


def run_helmholtz(m: int, repeats: int):
    """icmlx ``solve`` (complex SA + GMRES) and PyAMG SA + GMRES on the same complex matrix, alternating."""
    A = helmholtz_complex(m)
    n = A.shape[0]
    rng = np.random.default_rng(0)
    b = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    first, t_first, _ = timed(lambda: solve(A, b, rtol=RTOL, throw=False))
    ours, theirs, res = [], [], []
    for _ in range(repeats):
        sol, t, _ = timed(lambda: solve(A, b, rtol=RTOL, throw=False))
        ours.append(t)
        res.clear()
        x, t, _ = timed(lambda: pyamg.smoothed_aggregation_solver(A).solve(b, tol=RTOL, accel="gmres", residuals=res,
                                                                         maxiter=1000))
        theirs.append(t)
    t_ours, t_theirs = float(np.median(ours)), float(np.median(theirs))
    rows = [dict(solver="icmlx solve (complex SA+GMRES)", iters=int(sol.num_steps), total=t_ours,
                 compile=max(t_first - t_ours, 0.0), relres=relres(A, b, sol.value),
                 status=icmlx.result_name(sol.result)),
            dict(solver="PyAMG SA+GMRES", iters=len(res) - 1, total=t_theirs, compile=0.0, relres=relres(A, b, x),
                 status="-")]
    for r in rows:
        r.update(problem="helmholtz_complex", n=n, iters_ratio=r["iters"] / rows[1]["iters"],
                 time_ratio=r["total"] / t_theirs)
        print(f"{r['problem']:18s} {n:8d} {r['solver']:32s} {r['iters']:5d} {r['iters_ratio']:6.2f} "
              f"{r['total']:8.3f} {r['time_ratio']:6.2f} {r['compile']:8.2f} {r['relres']:9.1e} {r['status']}",
              flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", type=int, nargs="*", default=None, help="grid sides m (n = m²)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-peers", action="store_true", help="only icmlx and PyAMG")
    ap.add_argument("--problems", nargs="*", default=None)
    ap.add_argument("--strength", nargs="*", default=["symmetric"], choices=["symmetric", "evolution"],
                    help="strength measures to run (icmlx and PyAMG SA with each, paired)")
    ap.add_argument("--part", default=None,
                    help="the part of results/solvers_amg.json this run replaces (default: quick or full)")
    args = ap.parse_args()
    sizes = args.sizes or ([128, 256] if args.quick else [256, 512])
    rows = []
    for m in sizes:
        for name, A, B in problems(m):
            if args.problems and name not in args.problems:
                continue
            rows.extend(run_problem(name, A, B, args.repeats, not args.no_peers, tuple(args.strength)))
            print_rows([r for r in rows if r["problem"] == name and r["n"] == A.shape[0]])
    part = args.part or ("quick" if args.quick else "full")
    extra = dict(pyamg=pyamg.__version__, scipy=scipy.__version__, rtol=RTOL)
    if rows:
        print(f"wrote {write_results(rows=rows, part=part, extra=extra)}")
    if not args.problems or "helmholtz_complex" in args.problems:
        rows = run_helmholtz(sizes[0], args.repeats)
        print(f"wrote {write_results(rows=rows, part=f'{part}_helmholtz_complex', extra=extra)}")


def print_rows(rows):
    ref = {r["solver"].replace("PyAMG SA+CG", ""): r for r in rows if r["solver"].startswith("PyAMG SA+CG")}

    def peer(r):  # the PyAMG SA row with the same strength measure (the plain one for the other solvers)
        tail = r["solver"].split("SA+CG", 1)[1].rstrip(")") if "SA+CG" in r["solver"] else ""
        return ref.get(tail, ref.get(""))

    print(f"{'problem':12s} {'n':>8s} {'solver':32s} {'its':>5s} {'its/PyAMG':>9s} {'setup s':>8s} {'solve s':>8s} "
          f"{'total s':>8s} {'t/PyAMG':>8s} {'compile s':>9s} {'relres':>9s}")
    for r in rows:
        p = peer(r)
        ratio = r["iters"] / p["iters"] if p and p["iters"] else float("nan")
        tr = r["total"] / p["total"] if p and p["total"] else float("nan")
        print(f"{r['problem']:12s} {r['n']:8d} {r['solver']:32s} {r['iters']:5d} {ratio:9.2f} {r['setup']:8.3f} "
              f"{r['solve']:8.3f} {r['total']:8.3f} {tr:8.2f} {r['compile']:9.2f} {r['relres']:9.1e}", flush=True)


if __name__ == "__main__":
    main()
