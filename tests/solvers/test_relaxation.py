"""The relaxation family against float64 NumPy: Jacobi sweeps, the Chebyshev error polynomial in closed form, and
the G-RANS polynomial smoother, which runs the same relaxation objects."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpy.polynomial import chebyshev as C

from icmlx.solvers import (
    GRANS,
    ChebyshevRelaxation,
    ChebyshevSmoother,
    JacobiRelaxation,
    SparseMatrix,
    estimate_lambda_max,
)

X64 = bool(jax.config.jax_enable_x64)
DT = jnp.float64 if X64 else jnp.float32
TOL = 1e-10 if X64 else 2e-5


def _laplacian(n: int, advection: float = 0.0) -> np.ndarray:
    """Variable-coefficient 1-D diffusion (Dirichlet ends: SPD, non-negative row sums) plus upwinded advection."""
    k = 1.0 + 0.5 * np.sin(np.arange(n + 1.0))
    A = np.diag(k[:-1] + k[1:]) - np.diag(k[1:-1], 1) - np.diag(k[1:-1], -1)
    return A + advection * (np.eye(n) - np.eye(n, k=-1))


def _chebyshev_error(A: np.ndarray, degree: int, lam: float, ratio: float) -> np.ndarray:
    """$p(D^{-1}A)$ with $p(\\lambda) = T_k((\\theta - \\lambda)/\\delta) / T_k(\\theta/\\delta)$ for
    $[\\lambda/\\mathrm{ratio}, \\lambda]$, from the eigen-decomposition of $D^{-1/2} A D^{-1/2}$ (A symmetric)."""
    s = np.sqrt(np.diag(A))
    w, U = np.linalg.eigh(A / s[:, None] / s[None, :])
    lmin = lam / ratio
    theta, delta = 0.5 * (lam + lmin), 0.5 * (lam - lmin)
    Tk = [0.0] * degree + [1.0]
    p = C.chebval((theta - w) / delta, Tk) / C.chebval(theta / delta, Tk)
    return (U * p) @ U.T / s[:, None] * s[None, :]


def _jacobi(A: np.ndarray, r: np.ndarray, x: np.ndarray, omega: float, steps: int, d: np.ndarray) -> np.ndarray:
    for _ in range(steps):
        x = x + omega * (r - A @ x) / d
    return x


def _close(got, want):
    got = np.asarray(got, np.float64)
    np.testing.assert_allclose(got, want, rtol=0, atol=TOL * np.abs(want).max())


@pytest.mark.x64
@pytest.mark.parametrize("degree", [1, 2, 3, 5])
def test_chebyshev_error_is_the_closed_form_polynomial(degree):
    """From e = 0 on A x = A x*, the error left is p(D⁻¹A) x* with p the scaled Chebyshev polynomial."""
    A = _laplacian(12)
    xs = np.cos(np.arange(12) * 0.7) + 0.3
    lam = 1.1 * np.linalg.eigvals(A / np.diag(A)[:, None]).real.max()
    relaxation = ChebyshevRelaxation(degree=degree, ratio=20.0)
    e = relaxation.apply(SparseMatrix.from_dense(jnp.asarray(A, DT)), jnp.asarray(A @ xs, DT), lambda_max=lam)
    _close(e, xs - _chebyshev_error(A, degree, lam, 20.0) @ xs)


@pytest.mark.x64
def test_chebyshev_default_bound_and_jit():
    """``lambda_max=None`` is 1.1 times the power-iteration estimate (which bounds the true λ_max(D⁻¹A) from
    below) capped by the Gershgorin bound max_i Σ_j |a_ij| / a_ii; the checked call compiles."""
    A = _laplacian(12)
    As = SparseMatrix.from_dense(jnp.asarray(A, DT))
    r = jnp.asarray(np.sin(np.arange(12.0)), DT)
    lam = np.linalg.eigvals(A / np.diag(A)[:, None]).real.max()
    est = float(estimate_lambda_max(As, num_steps=60))
    assert 0.9 * lam <= est <= lam * (1 + 1e-5)
    relaxation = ChebyshevRelaxation(degree=3)
    got = relaxation.apply(As, r)
    gershgorin = (np.abs(A).sum(axis=1) / np.diag(A)).max()
    bound = min(1.1 * float(estimate_lambda_max(As)), gershgorin)
    assert lam <= bound <= gershgorin
    _close(got, np.asarray(relaxation.apply(As, r, lambda_max=bound), np.float64))
    _close(jax.jit(lambda r: relaxation.apply(As, r, lambda_max=1.6))(r),
           (np.eye(12) - _chebyshev_error(A, 3, 1.6, 30.0)) @ np.linalg.solve(A, np.asarray(r, np.float64)))


@pytest.mark.x64
def test_jacobi_sweeps_against_numpy():
    """Damped Jacobi (ω relative to ρ), ℓ1-Jacobi on a nonsymmetric matrix, and the sweep of a multigrid level
    from a nonzero guess, each against the NumPy iteration."""
    A = _laplacian(10)
    As = SparseMatrix.from_dense(jnp.asarray(A, DT))
    r = np.cos(np.arange(10) * 0.3)
    zero = np.zeros(10)
    d = np.diag(A)
    got = JacobiRelaxation(omega=2 / 3, num_steps=2).apply(As, jnp.asarray(r, DT), lambda_max=1.0)
    _close(got, _jacobi(A, r, zero, 2 / 3, 2, d))
    got = JacobiRelaxation(omega=4 / 3, num_steps=3).apply(As, jnp.asarray(r, DT), lambda_max=2.0)
    _close(got, _jacobi(A, r, zero, 2 / 3, 3, d))
    N = _laplacian(10, advection=3.0)
    got = JacobiRelaxation(omega=1.0, num_steps=4).apply(SparseMatrix.from_dense(jnp.asarray(N, DT)),
                                                         jnp.asarray(r, DT), l1=True)
    _close(got, _jacobi(N, r, zero, 1.0, 4, np.abs(N).sum(1)))
    x0 = np.sin(np.arange(10.0))
    got = JacobiRelaxation(omega=1.2, num_steps=3).relax(As, jnp.asarray(1 / d, DT), 1.5, None, jnp.asarray(r, DT),
                                                          jnp.asarray(x0, DT), zero=False)
    _close(got, _jacobi(A, r, x0, 1.2 / 1.5, 3, d))


@pytest.mark.x64
def test_grans_polynomial_smoother_runs_the_relaxations():
    """``ChebyshevSmoother(degree)`` on a G-RANS operator: Chebyshev for [λ/30, λ] with the operator's bound on an
    SPD-like matrix, ``degree`` ℓ1-Jacobi sweeps otherwise (padding rows are identity rows)."""
    dt = "float64" if X64 else "float32"
    for advection, degree in ((0.0, 3), (2.0, 4)):
        A = _laplacian(40, advection)
        smoother = ChebyshevSmoother(degree=degree)
        op = GRANS(smoother=smoother, dtype=dt).setup(SparseMatrix.from_dense(jnp.asarray(A, DT)))
        assert op.spd_like == (advection == 0.0)
        Ap = np.eye(op.padded_size)
        Ap[:40, :40] = A
        r = np.zeros(op.padded_size)
        r[:40] = np.sin(np.arange(40) * 0.4) + 0.2
        got = smoother.smooth(op, jnp.asarray(r, DT))
        if op.spd_like:
            lam = float(op.lambda_max)
            assert lam >= np.linalg.eigvals(A / np.diag(A)[:, None]).real.max()  # a bound, as Chebyshev needs
            want = (np.eye(op.padded_size) - _chebyshev_error(Ap, degree, lam, 30.0)) @ np.linalg.solve(Ap, r)
        else:
            want = _jacobi(Ap, r, np.zeros_like(r), 1.0, degree, np.abs(Ap).sum(1))
        _close(got, want)


@pytest.mark.parametrize("call, error, words", [
    (lambda A, r: ChebyshevRelaxation().apply(A, r[:-1], lambda_max=1.0), ValueError, "length"),
    (lambda A, r: ChebyshevRelaxation().apply(A, r, lambda_max=0.0), ValueError, "lambda_max"),
    (lambda A, r: ChebyshevRelaxation().apply(A, r, lambda_max="2"), TypeError, "lambda_max"),
    (lambda A, r: JacobiRelaxation().apply(A, r, l1="yes"), TypeError, "l1"),
    (lambda A, r: JacobiRelaxation().apply(A, r.at[0].set(jnp.nan)), ValueError, "NaN"),
    (lambda A, r: JacobiRelaxation().apply(SparseMatrix.from_dense(jnp.array([[0.0, 1.0], [1.0, 2.0]])),
                                           jnp.ones(2)), ValueError, "diagonal"),
    (lambda A, r: JacobiRelaxation().apply(SparseMatrix.from_coo([1], [1], [2.0], (2, 2)), jnp.ones(2), l1=True),
     ValueError, "l1 row sum"),
])
def test_apply_refuses_bad_input(call, error, words):
    A = SparseMatrix.from_dense(jnp.array([[2.0, -1.0], [-1.0, 2.0]]))
    with pytest.raises(error, match=words):
        call(A, jnp.array([1.0, 1.0]))


@pytest.mark.x64
def test_one_power_bound_for_relaxation_and_both_setups():
    """The relaxations, the host set-up and the numeric set-up of the hierarchy take one bound of ρ(D⁻¹A): on a
    2-D variable-coefficient diffusion matrix every one lies between the true λ_max(D⁻¹A) (dense ``eigvalsh``)
    and the Gershgorin cap; a negative diagonal (−A) leaves D⁻¹A, so the estimate, unchanged."""
    import scipy.sparse as sp

    from icmlx.solvers import amg_setup

    m = 24
    k = 1.0 + 0.9 * np.sin(np.arange(m * m) * 0.37) ** 2
    one = sp.diags([-np.ones(m - 1), 2.0 * np.ones(m), -np.ones(m - 1)], [-1, 0, 1])
    L = sp.kronsum(one, one).tocsr()
    A = (sp.diags(np.sqrt(k)) @ L @ sp.diags(np.sqrt(k))).tocsr()
    Ad = A.toarray()
    s = 1.0 / np.sqrt(np.diag(Ad))
    lam = np.linalg.eigvalsh(Ad * s[:, None] * s[None, :]).max()
    cap = (np.abs(Ad).sum(axis=1) / np.diag(Ad)).max()
    As = SparseMatrix.from_dense(jnp.asarray(Ad, DT))
    est = float(estimate_lambda_max(As, num_steps=40))
    assert 0.95 * lam <= est <= lam * (1 + 1e-9)
    assert abs(float(estimate_lambda_max(SparseMatrix.from_dense(jnp.asarray(-Ad, DT)), num_steps=40)) - est) \
        <= 1e-9 * est
    host = amg_setup(A, max_coarse=50, reuse_pattern=True)
    numeric = host.update(A.data)
    ub_host, ub_numeric = float(host.hierarchy.lambda_max[0]), float(numeric.hierarchy.lambda_max[0])
    assert lam <= ub_host <= cap * (1 + 1e-12) and lam <= ub_numeric <= cap * (1 + 1e-12)
    assert abs(ub_host - ub_numeric) <= 1e-9 * ub_host
