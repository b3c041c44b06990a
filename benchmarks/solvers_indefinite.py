"""Indefinite Helmholtz ``-Δu - k²u = f`` (scikit-fem P1, unit square, Dirichlet) through every icmlx entry point
and PyAMG, to rtol 1e-8 in float64; each answer's true relative residual recomputed in SciPy.

Rows: ``solve(A, b)`` with the default method choice, ``solve(..., method="gmres")`` and ``"bicgstab"``, the
default ``GRANS()`` (V-cycle smoother, outer step chosen from the matrix), PyAMG's ``solve`` (its own method choice)
and PyAMG smoothed aggregation as the preconditioner of PyAMG's GMRES. Times are whole calls (set-up, compilation
and solve), the second of two calls so that compilation is left out.

Usage: ``python benchmarks/solvers_indefinite.py --quick`` (k = 12 and 25 on 127², n = 16,129) or
``--nref 8`` for 255².
"""

import argparse
import functools
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402
import pyamg  # noqa: E402
import skfem  # noqa: E402
from skfem.helpers import dot, grad  # noqa: E402

from icmlx.solvers import GRANS, solve  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import write_results  # noqa: E402

RTOL = 1e-8


def helmholtz(k, nref):
    basis = skfem.Basis(skfem.MeshTri().refined(nref), skfem.ElementTriP1())

    @skfem.BilinearForm
    def a(u, v, w):
        return dot(grad(u), grad(v)) - k**2 * u * v

    @skfem.LinearForm
    def f(v, w):
        return np.exp(-50 * ((w.x[0] - 0.5) ** 2 + (w.x[1] - 0.5) ** 2)) * v

    A, b, *_ = skfem.condense(a.assemble(basis), f.assemble(basis), D=basis.get_dofs())
    return A.tocsr(), b


def run(name, fn, A, b):
    times = []
    for _ in range(2):  # the second call: set-up and solve with the programs compiled
        t = time.perf_counter()
        try:
            x, steps, status = fn()
        except Exception as err:  # noqa: BLE001 - a failure is a row of the table
            x, steps, status = None, None, f"error: {str(err).splitlines()[0][:120]}"
        times.append(time.perf_counter() - t)
    seconds = times[1]
    res = None if x is None else float(np.linalg.norm(b - A @ np.asarray(x, float)) / np.linalg.norm(b))
    return {"solver": name, "steps": steps, "relres": res, "status": status, "seconds": round(seconds, 2)}


def icmlx_solve(A, b, **kw):
    sol = solve(A, b, rtol=RTOL, max_steps=2000, throw=False, **kw)
    from icmlx import result_name

    return sol.value, int(sol.num_steps), f"{result_name(sol.result)} ({sol.method})"


def grans(A, b):
    from icmlx import result_name

    solver = GRANS(rtol=RTOL, max_steps=2000)
    sol = solver.solve(solver.setup(A), b, throw=False)
    return sol.value, int(sol.num_steps), result_name(sol.result)


def pyamg_solve(A, b):
    res = []
    x = pyamg.solve(A, b, tol=RTOL, residuals=res, maxiter=2000, verb=False)
    return x, len(res) - 1, "returned"


def pyamg_gmres(A, b):
    res = []
    ml = pyamg.smoothed_aggregation_solver(A, symmetry="symmetric")
    x = ml.solve(b, tol=RTOL, accel="gmres", residuals=res, maxiter=2000)
    return x, len(res) - 1, "returned"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--nref", type=int, default=7)
    parser.add_argument("--k", type=float, nargs="+", default=[12.0, 25.0])
    args = parser.parse_args()
    rows = []
    for k in args.k:
        A, b = helmholtz(k, args.nref)
        for name, fn, kw in [("solve (auto)", icmlx_solve, {}), ("solve gmres", icmlx_solve, {"method": "gmres"}),
                             ("solve bicgstab", icmlx_solve, {"method": "bicgstab"}), ("GRANS()", grans, {}),
                             ("pyamg.solve", pyamg_solve, {}), ("PyAMG SA + GMRES", pyamg_gmres, {})]:
            row = {"k": k, "n": A.shape[0], **run(name, functools.partial(fn, A, b, **kw), A, b)}
            rows.append(row)
            print(row, flush=True)
    write_results("solvers_indefinite_quick" if args.quick else None, rows)


if __name__ == "__main__":
    main()
