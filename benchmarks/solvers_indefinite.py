"""Indefinite Helmholtz ``-Δu - k²(1 + iα)u = f`` (scikit-fem P1, unit square, Dirichlet) through every icmlx entry
point and PyAMG, to rtol 1e-8 in float64; each answer's true relative residual recomputed in SciPy.

Rows: ``solve(A, b)`` with the default method choice, ``solve(..., method="gmres")`` and ``"bicgstab"``, the
default ``GRANS()`` (V-cycle smoother, outer step chosen from the matrix, no network), the G-RANS ablation —
``GRANS.pretrained(network=True)`` (the weights shipped for the four model equations), ``GRANS.pretrained(
weights="helmholtz")`` (the network trained on the Helmholtz family, ``scripts/train_grans.py --helmholtz``) and
``GRANS(None, projection=True)`` (the same projection with a zero head, no learned part), all with the V-cycle —
PyAMG's ``solve`` (its own method choice) and PyAMG smoothed aggregation as the preconditioner of PyAMG's GMRES.
Times are whole calls (set-up, compilation and solve), the second of two calls so that compilation is left out.

The cases are held out from the Helmholtz network's training: constant wavenumbers k = 12, 18.5 and 25 (training
draws a random medium and keeps 1 away from these k) and damped cases at k = 12 and 18.5 (absorption α = 0.05 makes
the matrix complex symmetric: ``solve`` runs complex smoothed aggregation + GMRES on it, G-RANS its complex path —
the real V-cycle of the envelope on the real and imaginary parts, a complex basis, Hermitian least squares and
flexible GCR). The summary gives each G-RANS variant's time over the default ``solve``'s: the Helmholtz network would
go on the default path only below 1, and below the zero head's (the same projection without the learned part).
``--helmholtz-weights PATH`` runs another weight file in the Helmholtz-network rows (to judge a retrained network
before it is shipped).

Usage: ``python benchmarks/solvers_indefinite.py --quick`` (the cases on 127², n = 16,129) or ``--nref 8`` for
255²; ``--k 12 18.5`` (real cases) and ``--damped-k 12`` (cases at absorption 0.05) instead of the default cases.
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

from icmlx.solvers import GRANS, load_weights, solve  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import write_results  # noqa: E402

RTOL = 1e-8


CASES = ((12.0, 0.0), (18.5, 0.0), (25.0, 0.0), (12.0, 0.05), (18.5, 0.05))  # (k, absorption α)
DAMPING = 0.05
HELMHOLTZ_WEIGHTS = None  # --helmholtz-weights: a weight file for the Helmholtz-network rows (None: the shipped one)


def helmholtz(k, nref, absorption=0.0):
    """``(A, b)``: the condensed P1 matrix ``K - k²(1 + iα) M`` (complex symmetric for ``α > 0``) and load."""
    basis = skfem.Basis(skfem.MeshTri().refined(nref), skfem.ElementTriP1())

    @skfem.BilinearForm
    def stiffness(u, v, w):
        return dot(grad(u), grad(v))

    @skfem.BilinearForm
    def mass(u, v, w):
        return u * v

    @skfem.LinearForm
    def f(v, w):
        return np.exp(-50 * ((w.x[0] - 0.5) ** 2 + (w.x[1] - 0.5) ** 2)) * v

    M = mass.assemble(basis)
    A = stiffness.assemble(basis) - k**2 * (M + 1j * absorption * M if absorption else M)
    load = f.assemble(basis).astype(complex if absorption else float)
    A, b, *_ = skfem.condense(A, load, D=basis.get_dofs())
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
    # (complex x kept complex: the damped case's residual needs its imaginary part)
    res = None if x is None else float(np.linalg.norm(b - A @ np.asarray(x)) / np.linalg.norm(b))
    return {"solver": name, "steps": steps, "relres": res, "status": status, "seconds": round(seconds, 2)}


def icmlx_solve(A, b, **kw):
    sol = solve(A, b, rtol=RTOL, max_steps=2000, throw=False, **kw)
    from icmlx import result_name

    return sol.value, int(sol.num_steps), f"{result_name(sol.result)} ({sol.method})"


def grans(A, b, variant="default"):
    from icmlx import result_name

    kw = dict(rtol=RTOL, max_steps=2000)
    solver = {"default": lambda: GRANS(**kw),
              "pretrained": lambda: GRANS.pretrained(network=True, **kw),
              "helmholtz": lambda: (GRANS.pretrained(weights="helmholtz", **kw) if HELMHOLTZ_WEIGHTS is None else
                                    GRANS(load_weights(HELMHOLTZ_WEIGHTS)[0], **kw)),
              "zero head": lambda: GRANS(None, projection=True, **kw)}[variant]()
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
    parser.add_argument("--k", type=float, nargs="+", default=None,
                        help="wavenumbers (real cases) instead of the default cases")
    parser.add_argument("--damped-k", type=float, nargs="+", default=None,
                        help=f"wavenumbers of damped cases (absorption {DAMPING}) instead of the default cases")
    parser.add_argument("--helmholtz-weights", default=None,
                        help="weight file for the Helmholtz-network rows (default: the shipped one)")
    args = parser.parse_args()
    global HELMHOLTZ_WEIGHTS
    HELMHOLTZ_WEIGHTS = args.helmholtz_weights
    cases = ([(k, 0.0) for k in args.k or ()] + [(k, DAMPING) for k in args.damped_k or ()]
             if args.k or args.damped_k else CASES)
    rows = []
    for k, alpha in cases:
        A, b = helmholtz(k, args.nref, alpha)
        for name, fn, kw in [("solve (auto)", icmlx_solve, {}), ("solve gmres", icmlx_solve, {"method": "gmres"}),
                             ("solve bicgstab", icmlx_solve, {"method": "bicgstab"}), ("GRANS()", grans, {}),
                             ("GRANS pretrained net", grans, {"variant": "pretrained"}),
                             ("GRANS Helmholtz net", grans, {"variant": "helmholtz"}),
                             ("GRANS zero head", grans, {"variant": "zero head"}),
                             ("pyamg.solve", pyamg_solve, {}), ("PyAMG SA + GMRES", pyamg_gmres, {})]:
            row = {"k": k, "absorption": alpha, "n": A.shape[0],
                   **run(name, functools.partial(fn, A, b, **kw), A, b)}
            rows.append(row)
            print(row, flush=True)
    summary = []
    for k, alpha in cases:
        cell = {r["solver"]: r for r in rows if r["k"] == k and r["absorption"] == alpha}
        base = cell["solve (auto)"]["seconds"]
        summary.append({"k": k, "absorption": alpha, **{
            f"{nm} / solve (auto), time": (round(cell[nm]["seconds"] / base, 2)
                                           if cell[nm]["relres"] is not None and cell[nm]["relres"] <= 1.01 * RTOL
                                           else None)
            for nm in ("GRANS()", "GRANS pretrained net", "GRANS Helmholtz net", "GRANS zero head",
                       "PyAMG SA + GMRES")}})
        print(summary[-1], flush=True)
    saves = [s["GRANS Helmholtz net / solve (auto), time"] for s in summary]
    zero = [s["GRANS zero head / solve (auto), time"] for s in summary]
    decision = ("the Helmholtz network saves time against the default solve on every held-out case"
                if all(v is not None and v < 1 for v in saves) else
                "the Helmholtz network does not save time against the default solve on every held-out case "
                "(a ratio >= 1 or no converged answer): the default path stays as it is")
    beats_zero = sum(v is not None and (z is None or v < z) for v, z in zip(saves, zero))
    decision += (f"; it is faster than the zero head (or converges where the zero head does not) on {beats_zero} of "
                 f"{len(summary)} cases")
    print("Decision:", decision)
    if HELMHOLTZ_WEIGHTS is not None or args.k or args.damped_k:  # a trial run: the results file keeps the default
        print("(not written: --helmholtz-weights, --k or --damped-k given)")
        return
    write_results("solvers_indefinite_quick" if args.quick else None, rows,
                  extra={"summary": summary, "decision": decision,
                         "note": "ratios: time over solve (auto)'s on the same case; None where that row did not "
                                 "reach rtol (true relres from SciPy) or refused the matrix"})

if __name__ == "__main__":
    main()
