"""The multigrid's default stopping rule, its one matrix classifier, and the jitted numeric re-set-up.

References: float64 SciPy residuals and SciPy ``P.T @ A @ P`` of the host set-up (independent of the JAX numeric
path), NumPy's exact transposes for the symmetry classifier.
"""

import jax
import numpy as np
import pytest

import icmlx
from icmlx.solvers import amg_setup

sp = pytest.importorskip("scipy.sparse")
pyamg = pytest.importorskip("pyamg")
from pyamg.gallery import poisson  # noqa: E402

X64 = bool(jax.config.jax_enable_x64)


def relres(A, b, x):
    x = np.asarray(x, np.float64)
    return np.linalg.norm(b - A @ x) / np.linalg.norm(b)


def test_default_tolerance_succeeds_at_the_float32_floor():
    # 64² Poisson with b = 1: the attainable float32 relative residual is about 2.4e-5 (~ ε κ), above the 1e-5
    # default; the default rule accepts a residual at the rounding floor ε‖|A||x| + |b|‖ (checked in float64)
    A = poisson((64, 64), format="csr")
    b = np.ones(A.shape[0])
    solver = amg_setup(A)
    sol = solver.solve(b)
    x = np.asarray(sol.value, np.float64)
    eps = np.finfo(np.asarray(sol.value).dtype).eps
    floor = eps * np.linalg.norm(abs(A) @ abs(x) + b) / np.linalg.norm(b)
    target = 1e-8 if X64 else 1e-5
    assert sol.result == icmlx.RESULTS.successful
    assert relres(A, b, x) <= max(target, floor)
    if not X64:  # the defect this rule fixes: the plain relative tolerance is out of float32's reach here
        assert floor > target
        strict = solver.solve(b, rtol=1e-5, throw=False)
        assert icmlx.result_name(strict.result) == "accuracy_limit"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_classifier_for_amg_and_grans_near_the_symmetry_boundary(dtype):
    # one asymmetric pair at 0.3 τ and at 3 τ of the largest entry (τ = 1e3 ε of the input dtype): both solvers
    # must call the first symmetric and the second not; the reference is the exact NumPy transpose difference
    from icmlx.solvers import GRANS, SparseMatrix
    from icmlx.solvers._classify import symmetry_tolerance

    base = poisson((8, 8), format="csr").astype(np.float64)
    tau = symmetry_tolerance(float(np.finfo(dtype).eps))
    seen = []
    for factor in (0.3, 3.0):
        A = base.tolil()
        A[3, 4] += factor * tau * 4.0  # max |a_ij| = 4 (the diagonal)
        A = A.tocsr().astype(dtype)
        dense = A.toarray().astype(np.float64)
        expect = np.abs(dense - dense.T).max() <= tau * np.abs(dense).max()
        assert expect == (factor < 1)
        method = amg_setup(A, max_coarse=10, relaxation="jacobi").method
        S = SparseMatrix.from_scipy(A, dtype=dtype)
        if S.vals.dtype != dtype:  # float64 without x64: G-RANS holds (and classifies) float32 values
            seen.append((method, expect, expect))
            continue
        op = GRANS(dtype="float32").setup(S)
        seen.append((method, op.symmetric, op.spd_like))
    assert seen == [("cg", True, True), ("gmres", False, False)]
