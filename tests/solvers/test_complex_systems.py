"""Complex systems: Hermitian positive definite and complex symmetric (damped Helmholtz) matrices through every
Krylov method, ``solve`` and ``amg_setup``, against SciPy's ``spsolve`` (complex128) and PyAMG on the same matrix."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx import RESULTS
from icmlx.solvers import SparseMatrix, amg_setup, bicgstab, cg, gmres, solve

sp = pytest.importorskip("scipy.sparse")
sla = pytest.importorskip("scipy.sparse.linalg")

X64 = bool(jax.config.jax_enable_x64)
RTOL = 1e-8 if X64 else 1e-5  # solver tolerance (complex64 cannot go much lower)
ERR = 1e-6 if X64 else 5e-3  # error against spsolve allowed by RTOL and the conditioning of these small systems


def _grid(n):
    h = 1.0 / (n + 1)
    T = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1]) / h**2
    return (sp.kron(T, sp.eye(n)) + sp.kron(sp.eye(n), T)).tocsr(), h


def helmholtz(n=32, k=10.0, damping=0.5):
    r"""$-\Delta u - (k^2 + i\,\epsilon) u$ on the unit square (5-point stencil, Dirichlet), $\epsilon = $ damping·k²:
    complex symmetric, not Hermitian, indefinite in its real part."""
    L, _ = _grid(n)
    return (L - (k**2 + 1j * damping * k**2) * sp.eye(n * n)).tocsr()


def magnetic_laplacian(n=32, seed=0):
    """A Hermitian positive definite matrix: the 5-point Laplacian with random phases on the x-couplings plus a
    unit shift (a discrete magnetic Laplacian)."""
    _, h = _grid(n)
    phase = np.exp(1j * np.random.default_rng(seed).uniform(0, 2 * np.pi, n * n - 1))
    Tx = sp.diags([-np.conj(phase), -phase], [-1, 1]) / h**2
    Ty = sp.kron(sp.diags([-np.ones(n - 1), -np.ones(n - 1)], [-1, 1]), sp.eye(n)) / h**2
    return (Tx + Ty + (4 / h**2 + 1.0) * sp.eye(n * n)).tocsr()


def _rhs(n, seed=3):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n) + 1j * rng.standard_normal(n)


def _err(x, ref):
    return np.linalg.norm(np.asarray(x, np.complex128) - ref) / np.linalg.norm(ref)


def _relres(A, b, x):
    return np.linalg.norm(b - A @ np.asarray(x, np.complex128)) / np.linalg.norm(b)


@pytest.mark.x64
@pytest.mark.parametrize("method", [cg, gmres, bicgstab])
def test_krylov_hermitian_matches_spsolve(method):
    A = magnetic_laplacian(16)
    assert abs(A - A.conj().T).max() == 0
    b = _rhs(A.shape[0])
    ref = sla.spsolve(A.tocsc(), b)
    sol = method(A, b, rtol=RTOL, max_steps=2000)
    assert sol.result == RESULTS.successful and jnp.iscomplexobj(sol.value)
    assert _relres(A, b, sol.value) <= 2 * RTOL
    assert _err(sol.value, ref) <= ERR


@pytest.mark.x64
@pytest.mark.parametrize("method", [gmres, bicgstab])
def test_krylov_helmholtz_with_amg_preconditioner(method):
    A = helmholtz(24)
    b = _rhs(A.shape[0])
    ref = sla.spsolve(A.tocsc(), b)
    sol = method(A, b, rtol=RTOL, max_steps=500, preconditioner=amg_setup(A, max_coarse=50))
    assert sol.result == RESULTS.successful
    assert _relres(A, b, sol.value) <= 2 * RTOL and _err(sol.value, ref) <= ERR


@pytest.mark.x64
@pytest.mark.parametrize("case", ["helmholtz", "hermitian"])
def test_solve_matches_spsolve(case):
    A = helmholtz(32) if case == "helmholtz" else magnetic_laplacian(32)
    b = _rhs(A.shape[0])
    solver = amg_setup(A)
    assert solver.method == ("gmres" if case == "helmholtz" else "cg")
    sol = solve(A, b, rtol=RTOL)
    assert sol.result == RESULTS.successful
    assert _relres(A, b, sol.value) <= 2 * RTOL
    assert _err(sol.value, sla.spsolve(A.tocsc(), b)) <= ERR


def test_default_tolerance_of_the_default_dtype():
    """``rtol=None``: 1e-5 in complex64, 1e-8 in complex128, judged on the true residual in complex128."""
    A = helmholtz(32)
    b = _rhs(A.shape[0])
    sol = solve(A, b)
    assert sol.value.dtype == (jnp.complex128 if X64 else jnp.complex64)
    assert sol.result == RESULTS.successful
    assert _relres(A, b, sol.value) <= (2e-8 if X64 else 5e-5)


@pytest.mark.x64
def test_damped_helmholtz_iterations_beside_pyamg():
    """Smoothed aggregation + GMRES on the complex matrix, with PyAMG's on the same matrix in the same run."""
    pyamg = pytest.importorskip("pyamg")
    A = helmholtz(32)
    b = _rhs(A.shape[0])
    res = []
    pyamg.smoothed_aggregation_solver(A).solve(b, tol=1e-5, accel="gmres", residuals=res)
    sol = solve(A, b, rtol=1e-5)
    assert sol.result == RESULTS.successful and _relres(A, b, sol.value) <= 1e-5
    assert int(sol.stats["num_steps"]) <= 2 * (len(res) - 1)


def test_sparse_matrix_complex_products_match_scipy():
    A = helmholtz(8) + sp.diags(1j * np.ones(63), 1)
    S = SparseMatrix.from_scipy(A)
    assert jnp.iscomplexobj(S.vals)
    x = _rhs(64, seed=5)
    tol = 1e-12 if X64 else 1e-5
    np.testing.assert_allclose(np.asarray(S.mv(jnp.asarray(x, S.dtype))), A @ x, rtol=tol, atol=tol * 1e4)
    np.testing.assert_allclose(np.asarray(S.transpose().mv(jnp.asarray(x, S.dtype))), A.T @ x, rtol=tol,
                               atol=tol * 1e4)
    assert abs(S.to_scipy() - A.astype(S.dtype)).max() == 0


@pytest.mark.x64
@pytest.mark.parametrize("method", ["cg", "gmres"])
def test_implicit_derivatives_of_a_complex_solve(method):
    """``x = A⁻¹ b`` is linear in ``b``: its JVP is ``A⁻¹ ḃ`` and its VJP (JAX's convention: the plain transpose)
    ``A⁻ᵀ x̄``, both against spsolve."""
    A = magnetic_laplacian(10) if method == "cg" else helmholtz(10)
    n = A.shape[0]
    S = SparseMatrix.from_scipy(A)
    f = {"cg": cg, "gmres": gmres}[method]

    def x_of(b):
        return f(S, b, rtol=1e-10 if X64 else 1e-6, max_steps=1000).value

    b, db, ct = (jnp.asarray(_rhs(n, seed=s), S.dtype) for s in (1, 2, 3))
    _, tangent = jax.jvp(x_of, (b,), (db,))
    assert _err(tangent, sla.spsolve(A.tocsc(), np.asarray(db))) <= ERR
    (cot,) = jax.vjp(x_of, b)[1](ct)
    assert _err(cot, sla.spsolve(A.T.tocsc(), np.asarray(ct))) <= ERR


def test_refusals_name_the_cause():
    A = helmholtz(8)
    with pytest.raises(TypeError, match="complex"):
        cg(A.real, _rhs(64))  # a real A with a complex b
    with pytest.raises(ValueError, match="reuse_pattern"):
        amg_setup(A, reuse_pattern=True)
    with pytest.raises(ValueError, match="symmetric"):
        amg_setup(A, strength="evolution")
    zero_diag = (A - sp.diags(A.diagonal())).tocsr()
    with pytest.raises(ValueError, match="diagonal"):
        amg_setup(zero_diag)


@pytest.mark.x64
@pytest.mark.parametrize("relaxation", ["jacobi", "chebyshev", "gauss_seidel"])
def test_every_relaxation_on_complex_levels(relaxation):
    for A in (helmholtz(16), magnetic_laplacian(16)):
        b = _rhs(A.shape[0])
        sol = solve(A, b, rtol=RTOL, relaxation=relaxation, max_coarse=20)  # (three levels at n = 256)
        assert sol.result == RESULTS.successful
        assert _err(sol.value, sla.spsolve(A.tocsc(), b)) <= ERR


def test_vmapped_complex_solve_under_jit():
    """``jit(vmap(solver.solve))`` over three complex right-hand sides, each against spsolve."""
    A = helmholtz(16)
    solver = amg_setup(A, max_coarse=20)
    B = np.stack([_rhs(A.shape[0], seed=s) for s in range(3)])
    sol = jax.jit(jax.vmap(lambda b: solver.solve(b, rtol=RTOL)))(jnp.asarray(B, solver.A.val.dtype))
    assert bool(jnp.all(sol.result == RESULTS.successful))
    for i in range(3):
        assert _err(sol.value[i], sla.spsolve(A.tocsc(), B[i])) <= ERR


@pytest.mark.x64
def test_real_hierarchy_preconditions_a_complex_system():
    """A real cycle acts on the real and imaginary parts of a complex vector (C-linear): the Laplacian's hierarchy
    preconditions GMRES on the damped Helmholtz matrix."""
    A = helmholtz(16)
    L, _ = _grid(16)
    b = _rhs(A.shape[0])
    sol = gmres(A, b, rtol=RTOL, preconditioner=amg_setup(L, max_coarse=20).hierarchy)
    assert sol.result == RESULTS.successful
    assert _err(sol.value, sla.spsolve(A.tocsc(), b)) <= ERR
