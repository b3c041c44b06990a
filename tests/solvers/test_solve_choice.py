"""``solve``'s choice of method: indefinite Helmholtz (scikit-fem P1), where CG breaks down and ``solve`` moves to
BiCGStab, SPD systems that keep CG, and the near-nullspace advice for 3-D elasticity (scikit-fem P1 vectors).

References: SciPy float64 residuals ``‖b − A x‖ / ‖b‖``, NumPy's ``eigvalsh`` (the Helmholtz matrices are
indefinite), and PyAMG's smoothed aggregation with the rigid-body modes (the peer's iteration count).
"""

import warnings

import jax
import numpy as np
import pytest

from icmlx.solvers import amg_setup, rigid_body_modes, solve

sp = pytest.importorskip("scipy.sparse")
skfem = pytest.importorskip("skfem")
pyamg = pytest.importorskip("pyamg")
from skfem.helpers import ddot, dot, grad, sym_grad, trace  # noqa: E402

X64 = bool(jax.config.jax_enable_x64)
RTOL = 1e-8 if X64 else 1e-4
# the stopping rule holds for the residual in the working dtype; in float32 the float64 residual of the same
# iterate may differ from it by rounding of the order of ε‖|A||x|‖
SLACK = 1.0 if X64 else 2.0


def relres(A, b, x):
    x = np.asarray(x, np.float64)
    return np.linalg.norm(b - A @ x) / np.linalg.norm(b)


def helmholtz(k, nref):
    """$-\\Delta u - k^2 u = f$ on the unit square, P1 on a uniform triangulation, homogeneous Dirichlet."""
    basis = skfem.Basis(skfem.MeshTri().refined(nref), skfem.ElementTriP1())

    @skfem.BilinearForm
    def a(u, v, w):
        return dot(grad(u), grad(v)) - k**2 * u * v

    @skfem.LinearForm
    def f(v, w):
        return np.exp(-50 * ((w.x[0] - 0.5) ** 2 + (w.x[1] - 0.5) ** 2)) * v

    A, b, *_ = skfem.condense(a.assemble(basis), f.assemble(basis), D=basis.get_dofs())
    return A.tocsr(), b


@pytest.mark.parametrize("k", [12.0, 25.0])
def test_indefinite_helmholtz_default_solve(k):
    A, b = helmholtz(k, 5)  # n = 961
    eig = np.linalg.eigvalsh(A.toarray())
    assert eig[0] < 0 < eig[-1]  # indefinite (NumPy reference)
    sol = solve(A, b, rtol=RTOL, max_steps=2000)
    assert sol.method == "bicgstab"
    assert "CG broke down" in sol.method_reason
    assert relres(A, b, sol.value) <= SLACK * RTOL


def test_indefinite_refusal_names_cause_and_method():
    A, b = helmholtz(25.0, 5)
    msg = r"(?s)max_steps_reached.*not positive definite.*CG broke down.*method='gmres'"
    with pytest.raises(RuntimeError, match=msg):
        solve(A, b, rtol=RTOL, max_steps=3)
    sol = solve(A, b, rtol=RTOL, max_steps=3, throw=False)
    assert sol.method == "bicgstab" and int(sol.num_steps) <= 3


def test_spd_keeps_cg_and_its_result():
    T = sp.diags([-np.ones(39), 2 * np.ones(40), -np.ones(39)], [-1, 0, 1])
    A = (sp.kron(T, sp.eye(40)) + sp.kron(sp.eye(40), T)).tocsr()
    b = np.cos(np.arange(1600.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a scalar PDE: no near-nullspace advice
        sol = solve(A, b, rtol=RTOL)
    ref = amg_setup(A).solve(b, rtol=RTOL)  # the set-up/solve split, which has no fallback
    assert sol.method == ref.method == "cg" and "positive diagonal" in sol.method_reason
    assert int(sol.num_steps) == int(ref.num_steps)
    np.testing.assert_array_equal(np.asarray(sol.value), np.asarray(ref.value))
    assert relres(A, b, sol.value) <= SLACK * RTOL


def test_nonsymmetric_reason():
    n = 200
    A = sp.diags([-1.3 * np.ones(n - 1), 2.5 * np.ones(n), -1.0 * np.ones(n - 1)], [-1, 0, 1], format="csr")
    sol = solve(A, np.ones(n), rtol=RTOL)
    assert sol.method == "gmres" and "not symmetric" in sol.method_reason
    assert relres(A, np.ones(n), sol.value) <= SLACK * RTOL


def elasticity_3d(nref):
    """Linear elasticity on the unit cube (P1 vectors, interleaved dofs), clamped at x = 0, gravity load."""
    mesh = skfem.MeshTet().refined(nref)
    basis = skfem.Basis(mesh, skfem.ElementVector(skfem.ElementTetP1()))
    lam, mu = 1.0, 1.0

    @skfem.BilinearForm
    def a(u, v, w):
        eps_u, eps_v = sym_grad(u), sym_grad(v)
        return 2 * mu * ddot(eps_u, eps_v) + lam * trace(eps_u) * trace(eps_v)

    @skfem.LinearForm
    def f(v, w):
        return -v[2]

    D = basis.get_dofs(lambda x: x[0] == 0.0).all()
    A, b, _, I = skfem.condense(a.assemble(basis), f.assemble(basis), D=D)
    coords = basis.doflocs[:, I][:, ::3].T  # one node per 3 interleaved dofs
    return A.tocsr(), b, coords, I


def test_elasticity_warns_and_modes_match_pyamg():
    A, b, coords, I = elasticity_3d(3)
    assert np.array_equal(I.reshape(-1, 3) % 3, np.tile([0, 1, 2], (I.size // 3, 1)))  # interleaved
    with pytest.warns(UserWarning, match="rigid_body_modes"):
        plain = solve(A, b, rtol=RTOL)
    assert "near_nullspace" in plain.method_reason
    modes = rigid_body_modes(coords)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sol = solve(A, b, rtol=RTOL, near_nullspace=modes)
    assert relres(A, b, sol.value) <= SLACK * RTOL
    res = []
    ml = pyamg.smoothed_aggregation_solver(A, B=np.asarray(modes, np.float64))
    ml.solve(b, tol=RTOL, accel="cg", residuals=res, maxiter=500)
    print(f"n={A.shape[0]}: icmlx {int(plain.num_steps)} (no modes), {int(sol.num_steps)} (modes); "
          f"PyAMG {len(res) - 1}")
    assert int(sol.num_steps) <= 1.3 * (len(res) - 1)


def test_traced_bcoo_names_the_eager_setup():
    from jax.experimental import sparse as jsparse

    T = sp.diags([-np.ones(19), 2 * np.ones(20), -np.ones(19)], [-1, 0, 1], format="csr")
    M = jsparse.BCOO.from_scipy_sparse(T)
    with pytest.raises(TypeError, match=r"(?s)A is traced.*amg_setup\(A0\).*preconditioner=solver"):
        jax.jit(lambda M, b: solve(M, b).value)(M, np.ones(20))
    # what the message proposes: the hierarchy built eagerly, the Krylov method under jit on the traced matrix
    from icmlx.solvers import SparseMatrix, cg

    solver = amg_setup(T, max_coarse=5)
    x = jax.jit(lambda M, b: cg(SparseMatrix.from_bcoo(M), b, rtol=RTOL, preconditioner=solver).value)(
        M, np.ones(20))
    assert relres(T, np.ones(20), x) <= SLACK * RTOL
