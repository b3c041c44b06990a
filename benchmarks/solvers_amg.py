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

Convection–diffusion (``convdiff``: −ε Δu + b·∇u, recirculating wind, upwinded, Péclet
≈ 100 and 1,000) compares ``air_setup`` (AIR + GMRES) with PyAMG's ``air_solver`` + GMRES in the same run, and
writes its rows to the part ``<part>_convection`` with ``iters_ratio``/``time_ratio`` against PyAMG AIR.
The complex damped Helmholtz system $-\Delta u - (k^2 + i\,k^2/2) u$ (5-point stencil on the first grid size,
``k = 20``; complex symmetric, indefinite real part) runs as ``solve(A, b)`` on the complex matrix beside
``pyamg.smoothed_aggregation_solver(A).solve(b, accel="gmres")``, in the part ``<part>_helmholtz_complex`` with
``iters_ratio``/``time_ratio`` against PyAMG.

Usage: ``python benchmarks/solvers_amg.py --quick`` (about 16k-65k unknowns) or without ``--quick`` for 65k, 262k
(``--sizes`` to choose, e.g. ``--sizes 1024`` for the 1M grids).

``--large`` (part ``<part>_large``, default ``large``): 2-D Poisson at 4M unknowns (2048², 5-point) and 3-D Poisson
at 1M (100³, 7-point) through ``icmlx.solvers.solve`` beside ``pyamg.smoothed_aggregation_solver`` + its CG solve at
the same rtol. Each solver runs in a fresh child process (one at a time) that builds the matrix, sets up and solves;
the rows give the child's whole-process wall time (interpreter start and imports included), its set-up + solve
time, and its peak resident memory (``VmHWM``), with ``time_ratio`` and ``mem_ratio`` against PyAMG. ``--large-cases
2d 3d`` picks the cases, ``--large-repeats`` the processes per solver (medians; peak memory: the largest).
"""

import argparse
import json
import os
import subprocess
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
from icmlx.solvers import air_setup, amg_setup, cg, solve  # noqa: E402

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


# -- convection–diffusion: AIR against PyAMG AIR ---------------------------------------------------------------------
def convection_diffusion(m: int, eps: float):
    """−ε Δu + b·∇u on the unit square (m × m interior points, Dirichlet), central diffusion and first-order upwind
    convection, recirculating wind b = (2y(1 − x²), −2x(1 − y²))."""
    h = 1.0 / (m + 1)
    x = np.arange(1, m + 1) * h
    X, Y = np.meshgrid(x, x, indexing="ij")
    bx, by = (2 * Y * (1 - X**2)).ravel(), (-2 * X * (1 - Y**2)).ravel()
    n = m * m
    idx = np.arange(n).reshape(m, m)
    I, J = np.meshgrid(np.arange(m), np.arange(m), indexing="ij")
    rows, cols, vals = [np.arange(n)], [np.arange(n)], [4 * eps / h**2 + (np.abs(bx) + np.abs(by)) / h]
    for di, dj, w, side in ((-1, 0, bx, 1), (1, 0, bx, -1), (0, -1, by, 1), (0, 1, by, -1)):
        inside = ((I + di >= 0) & (I + di < m) & (J + dj >= 0) & (J + dj < m)).ravel()
        r = idx.ravel()[inside]
        rows.append(r)
        cols.append(idx[np.clip(I + di, 0, m - 1), np.clip(J + dj, 0, m - 1)].ravel()[inside])
        vals.append(-eps / h**2 - np.maximum(side * w[r], 0.0) / h)  # the upwind neighbour carries the wind
    A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))
    A.sum_duplicates()
    return A


def run_convection(m: int, eps: float, repeats: int):
    """icmlx AIR + GMRES(30) and PyAMG AIR + GMRES, set-ups and solves alternating (medians of ``repeats``); icmlx
    AIR + BiCGStab (a step applies the cycle twice); the same AIR cycle inside PyAMG's GMRES (the same
    preconditioner under the peer's Krylov method); the default ``solve(A, b)`` (set-up and solve in one call,
    which takes AIR + GMRES for this class of matrix); and icmlx smoothed aggregation + GMRES, which ``solve`` took
    for a nonsymmetric matrix before, for reference (single timings)."""
    A = convection_diffusion(m, eps)
    n = A.shape[0]
    b = np.random.default_rng(0).standard_normal(n)
    _, t_setup_first, _ = timed(lambda: air_setup(A))
    ts_i, ts_p = [], []
    for _ in range(repeats):
        s, t, _ = timed(lambda: air_setup(A))
        ts_i.append(t)
        ml, t, _ = timed(lambda: pyamg.air_solver(A))
        ts_p.append(t)
    sol, t_first, _ = timed(lambda: s.solve(b, rtol=RTOL, throw=False))
    res = []

    def peer():
        res.clear()
        return ml.solve(b, tol=RTOL, accel="gmres", residuals=res, maxiter=1000)

    tv_i, tv_p = [], []
    for _ in range(repeats):
        sol, t, _ = timed(lambda: s.solve(b, rtol=RTOL, throw=False))
        tv_i.append(t)
        x_p, t, _ = timed(peer)
        tv_p.append(t)
    t_setup, t_solve = float(np.median(ts_i)), float(np.median(tv_i))
    p_setup, p_solve = float(np.median(ts_p)), float(np.median(tv_p))
    p_iters = len(res) - 1
    cycle = jax.jit(lambda v, H=s.hierarchy: H.as_preconditioner(n)(v))
    M = spla.LinearOperator(A.shape, matvec=lambda v: np.array(cycle(np.ravel(v)), np.float64))
    M.matvec(b)  # (compiles the cycle)
    res_c = []
    x_c, t_c, _ = timed(lambda: pyamg.krylov.gmres(A, b, tol=RTOL, M=M, residuals=res_c, maxiter=1000)[0])
    s_b = air_setup(A, method="bicgstab")
    timed(lambda: s_b.solve(b, rtol=RTOL, throw=False))
    sol_b, t_b, _ = timed(lambda: s_b.solve(b, rtol=RTOL, throw=False))
    timed(lambda: solve(A, b, rtol=RTOL, throw=False))
    tv_d = []
    for _ in range(repeats):
        sol_d, t, _ = timed(lambda: solve(A, b, rtol=RTOL, throw=False))
        tv_d.append(t)
    t_d = float(np.median(tv_d))
    sa_s, t_sa_setup, _ = timed(lambda: amg_setup(A))
    timed(lambda: sa_s.solve(b, rtol=RTOL, max_steps=3000, throw=False))  # (max_steps is static: the same program)
    sa_sol, t_sa, _ = timed(lambda: sa_s.solve(b, rtol=RTOL, max_steps=3000, throw=False))
    name = f"convdiff_pe{int(round(1 / eps))}"
    rows = [
        dict(solver="icmlx air_setup (AIR+GMRES)", iters=int(sol.num_steps), setup=t_setup, solve=t_solve,
             total=t_setup + t_solve, compile=max(t_setup_first - t_setup, 0.0) + max(t_first - t_solve, 0.0),
             relres=relres(A, b, sol.value), status=icmlx.result_name(sol.result), levels=list(s.hierarchy.sizes)),
        dict(solver="icmlx air_setup (AIR+BiCGStab)", iters=int(sol_b.num_steps), setup=t_setup, solve=t_b,
             total=t_setup + t_b, compile=0.0, relres=relres(A, b, sol_b.value),
             status=icmlx.result_name(sol_b.result)),
        dict(solver="icmlx AIR cycle in PyAMG GMRES", iters=len(res_c) - 1, setup=t_setup, solve=t_c,
             total=t_setup + t_c, compile=0.0, relres=relres(A, b, x_c), status="-"),
        dict(solver="PyAMG AIR+GMRES", iters=p_iters, setup=p_setup, solve=p_solve, total=p_setup + p_solve,
             compile=0.0, relres=relres(A, b, x_p), status="-"),
        dict(solver="icmlx solve(A, b) (default)", iters=int(sol_d.num_steps), setup=0.0, solve=t_d, total=t_d,
             compile=0.0, relres=relres(A, b, sol_d.value), status=icmlx.result_name(sol_d.result),
             method=sol_d.method, air="AIR" in sol_d.method_reason),
        dict(solver="icmlx amg_setup (SA+GMRES)", iters=int(sa_sol.num_steps), setup=t_sa_setup, solve=t_sa,
             total=t_sa_setup + t_sa, compile=0.0, relres=relres(A, b, sa_sol.value),
             status=icmlx.result_name(sa_sol.result)),
    ]
    for r in rows:
        r.update(problem=name, n=n, iters_ratio=r["iters"] / p_iters if p_iters else float("nan"),
                 time_ratio=r["total"] / (p_setup + p_solve))
    print(f"{'problem':16s} {'n':>8s} {'solver':32s} {'its':>5s} {'its/PyAMG':>9s} {'setup s':>8s} {'solve s':>8s} "
          f"{'total s':>8s} {'t/PyAMG':>8s} {'compile s':>9s} {'relres':>9s}")
    for r in rows:
        print(f"{r['problem']:16s} {n:8d} {r['solver']:32s} {r['iters']:5d} {r['iters_ratio']:9.2f} "
              f"{r['setup']:8.3f} {r['solve']:8.3f} {r['total']:8.3f} {r['time_ratio']:8.2f} {r['compile']:9.2f} "
              f"{r['relres']:9.1e}", flush=True)
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


LARGE = {"2d": ("poisson2d", 2048), "3d": ("poisson3d", 100)}


def _peak_rss_gb() -> float:
    with open("/proc/self/status") as f:  # VmHWM: the process's peak resident set size, in kB
        kb = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    return kb / 2**20


def _large_child(solver: str, case: str) -> None:
    """One whole-process run (the body of a ``--large`` child): matrix, set-up, solve; prints one JSON line."""
    name, m = LARGE[case]
    A = poisson((m, m) if case == "2d" else (m, m, m), format="csr")
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    t = time.perf_counter()
    if solver == "icmlx":
        sol = icmlx.solvers.solve(A, b, rtol=RTOL, throw=False)
        x = np.asarray(sol.value)
        iters, status = int(sol.num_steps), icmlx.result_name(sol.result)
    else:
        res = []
        ml = pyamg.smoothed_aggregation_solver(A)
        x = ml.solve(b, tol=RTOL, accel="cg", residuals=res, maxiter=1000)
        iters, status = len(res) - 1, "-"
    t = time.perf_counter() - t
    print(json.dumps(dict(problem=name, n=A.shape[0], solver=solver, iters=iters, status=status, in_process=t,
                          relres=relres(A, b, x), peak_gb=_peak_rss_gb())), flush=True)


def run_large(cases, repeats: int):
    """Each solver on each case in its own child process, one process at a time; rows with the ratios."""
    rows = []
    for case in cases:
        got = {}
        for _ in range(repeats):
            for solver in ("icmlx", "pyamg"):
                t = time.perf_counter()
                out = subprocess.run([sys.executable, os.path.abspath(__file__), "--large-child", solver, case],
                                     capture_output=True, text=True, check=True)
                wall = time.perf_counter() - t
                r = json.loads(out.stdout.strip().splitlines()[-1])
                r["wall"] = wall
                got.setdefault(solver, []).append(r)
        for solver in ("icmlx", "pyamg"):
            rs = got[solver]
            r = dict(rs[-1], wall=float(np.median([q["wall"] for q in rs])),
                     in_process=float(np.median([q["in_process"] for q in rs])),
                     peak_gb=max(q["peak_gb"] for q in rs), processes=len(rs))
            r["solver"] = "icmlx solve" if solver == "icmlx" else "PyAMG SA+CG"
            rows.append(r)
        ic, py = rows[-2], rows[-1]
        ic["time_ratio"] = ic["wall"] / py["wall"]
        ic["mem_ratio"] = ic["peak_gb"] / py["peak_gb"]
        for r in (ic, py):
            print(f"{r['problem']:10s} {r['n']:8d} {r['solver']:12s} its {r['iters']:4d} wall {r['wall']:7.2f} s "
                  f"set-up+solve {r['in_process']:7.2f} s peak {r['peak_gb']:5.2f} GB relres {r['relres']:8.1e}"
                  + (f"  time×PyAMG {r['time_ratio']:.2f} mem×PyAMG {r['mem_ratio']:.2f}" if r is ic else ""),
                  flush=True)
    return rows


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--large-child":
        return _large_child(sys.argv[2], sys.argv[3])
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
    ap.add_argument("--large", action="store_true",
                    help="only the 4M 2-D / 1M 3-D Poisson rows, each solver in its own process (wall time, peak RSS)")
    ap.add_argument("--large-cases", nargs="*", default=["2d", "3d"], choices=sorted(LARGE))
    ap.add_argument("--large-repeats", type=int, default=1)
    args = ap.parse_args()
    if args.large:
        rows = run_large(args.large_cases, args.large_repeats)
        extra = dict(pyamg=pyamg.__version__, scipy=scipy.__version__, rtol=RTOL)
        print(f"wrote {write_results(rows=rows, part=args.part or 'large', extra=extra)}")
        return
    sizes = args.sizes or ([128, 256] if args.quick else [256, 512])
    rows, conv = [], []
    for m in sizes:
        for name, A, B in problems(m):
            if args.problems and name not in args.problems:
                continue
            rows.extend(run_problem(name, A, B, args.repeats, not args.no_peers, tuple(args.strength)))
            print_rows([r for r in rows if r["problem"] == name and r["n"] == A.shape[0]])
        if not args.problems or "convdiff" in args.problems:
            for eps in (1e-2, 1e-3):
                conv.extend(run_convection(m, eps, args.repeats))
    part = args.part or ("quick" if args.quick else "full")
    extra = dict(pyamg=pyamg.__version__, scipy=scipy.__version__, rtol=RTOL)
    if rows:
        print(f"wrote {write_results(rows=rows, part=part, extra=extra)}")
    if conv:
        print(f"wrote {write_results(rows=conv, part=f'{part}_convection', extra=extra)}")
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
