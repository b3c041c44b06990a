"""G-RANS on complex systems: damped (complex symmetric) Helmholtz ``K − k²(1 + iα)M``.

Every answer is judged in SciPy: SciPy's ``spsolve`` on the complex matrix, and the true residual ``‖b − A x‖``
recomputed in complex128 from the returned ``x``. The matrices are built by ``make_problem(..., absorption=α)`` and
checked against their definition (the real problem's matrix plus ``iα`` times its mass term).
"""

import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
import pytest

from icmlx import RESULTS
from icmlx.solvers import (
    GRANS,
    NoOuterStep,
    helmholtz_family,
)
from icmlx.solvers.fem import assemble_p1, make_problem, unit_square_mesh

sp = pytest.importorskip("scipy.sparse")
sla = pytest.importorskip("scipy.sparse.linalg")


def _damped(k, refine, alpha, seed):
    return make_problem(jax.random.key(seed), unit_square_mesh(refine), "helmholtz", param=k, min_gap=0.005,
                        absorption=alpha)


def _relres(A, b, x):
    b = np.asarray(b, np.complex128)
    return float(np.linalg.norm(b - A @ np.asarray(x, np.complex128)) / np.linalg.norm(b))


def test_damped_matrix_is_the_real_one_plus_i_alpha_times_its_mass_term():
    """``A(α) = A(0) + iα (A(0) − K)`` with ``K`` the stiffness matrix (kappa = 1) assembled on its own."""
    mesh = unit_square_mesh(2)
    real, damped = _damped(9.0, 2, 0.0, 5), _damped(9.0, 2, 0.07, 5)
    A0, A1 = real.A.to_scipy().toarray(), damped.A.to_scipy().toarray()
    K = assemble_p1(mesh)[0].to_scipy().toarray()
    assert real.A.vals.dtype.kind == "f" and damped.A.vals.dtype.kind == "c" and damped.absorption == 0.07
    np.testing.assert_allclose(A1, A0 + 1j * 0.07 * (A0 - K), rtol=0, atol=1e-5 * np.abs(A0).max())
    np.testing.assert_array_equal(np.asarray(damped.b), np.asarray(real.b))
    with pytest.raises(ValueError, match="absorption"):
        make_problem(jax.random.key(0), mesh, "poisson", absorption=0.1)
    with pytest.raises(ValueError, match="absorption"):
        make_problem(jax.random.key(0), mesh, "helmholtz", absorption=-0.1)
    with pytest.raises(TypeError, match="absorption"):
        make_problem(jax.random.key(0), mesh, "helmholtz", absorption="0.1")


def test_family_draws_absorption_in_range():
    pbs = helmholtz_family(jax.random.key(4), 3, wavenumber_range=(5.0, 15.0), refine=2, absorption_range=(0.02, 0.1))
    assert all(0.02 <= pb.absorption <= 0.1 and pb.A.vals.dtype.kind == "c" for pb in pbs)
    assert len({pb.absorption for pb in pbs}) == 3
    with pytest.raises(TypeError, match="absorption_range"):
        helmholtz_family(jax.random.key(0), 1, absorption_range=0.1)
    with pytest.raises(ValueError, match="absorption_range"):
        helmholtz_family(jax.random.key(0), 1, absorption_range=(0.1, 0.0))


@pytest.mark.x64_only
@pytest.mark.x64
def test_damped_helmholtz_reaches_spsolve():
    """Complex symmetric Helmholtz (k = 18.5, α = 0.05, n = 961) with a complex right-hand side: ``GRANS()`` reaches
    rtol 1e-9 in the true residual and SciPy's ``spsolve`` to 1e-7, through ``solve``, through
    ``lineax.linear_solve``, and from a warm start."""
    with jax.enable_x64(True):
        pb = _damped(18.5, 4, 0.05, seed=41_000)
        A = pb.A.to_scipy().tocsr()
        b = np.asarray(pb.b) * (1.0 - 0.5j)
        solver = GRANS(rtol=1e-9, max_steps=300, dtype="float64")
        op = solver.setup(A)
        assert op.matrix_class == "symmetric"  # complex symmetric: FlexibleGCR(memory=100), adjoint = same solve
        ref = sla.spsolve(A.tocsc(), b)
        sol = solver.solve(op, b)
        assert sol.result == RESULTS.successful and sol.value.dtype == jnp.complex128
        assert _relres(A, b, sol.value) <= 1.01e-9
        assert np.linalg.norm(np.asarray(sol.value) - ref) / np.linalg.norm(ref) <= 1e-7
        via_lineax = lx.linear_solve(op, jnp.asarray(b), solver)
        assert via_lineax.result == lx.RESULTS.successful
        assert np.linalg.norm(np.asarray(via_lineax.value) - ref) / np.linalg.norm(ref) <= 1e-7
        warm = solver.solve(op, b, x0=jnp.asarray(ref * (1 + 1e-3)))  # close to the answer: fewer iterations
        assert _relres(A, b, warm.value) <= 1.01e-9 and int(warm.num_steps) < int(sol.num_steps)


def test_complex_float32_with_the_helmholtz_network():
    """The shipped Helmholtz network on a damped problem in float32: a complex64 answer to rtol 1e-4 in the true
    (complex128) residual and close to ``spsolve``; multiplying ``b`` by ``e^{iφ}`` multiplies the answer by ``e^{iφ}``
    (the network sees the phase-aligned residual); a complex ``b`` with a real ``A`` is refused by name."""
    pb = _damped(12.0, 3, 0.05, seed=41_002)
    A = pb.A.to_scipy().tocsr()
    solver = GRANS.pretrained(weights="helmholtz", rtol=1e-4, max_steps=100, dtype="float32")
    op = solver.setup(pb.A)
    assert solver.configuration(op)["network"] == "trained"
    b = np.asarray(pb.b, np.float32).astype(np.complex64)
    x1 = np.asarray(solver.solve(op, b).value)
    assert x1.dtype == np.complex64 and _relres(A, b, x1) <= 1.2e-4
    ref = sla.spsolve(A.tocsc(), b.astype(np.complex128))
    assert np.linalg.norm(x1 - ref) / np.linalg.norm(ref) <= 1e-2
    ph = np.complex64(np.exp(0.7j))
    x2 = np.asarray(solver.solve(op, b * ph).value)
    assert np.linalg.norm(x2 - ph * x1) <= 1e-4 * np.linalg.norm(x1)
    real = make_problem(jax.random.key(0), unit_square_mesh(3), "helmholtz", param=12.0, min_gap=0.005)
    with pytest.raises(TypeError, match="b is complex .* A is real"):
        solver.solve(solver.setup(real.A), np.asarray(real.b, np.float32) * np.complex64(1j))


@pytest.mark.x64
def test_complex_stagnation_is_reported_with_the_true_residual():
    """A configuration that cannot converge on damped Helmholtz (Chebyshev/ℓ1-Jacobi smoothing, no outer step, a
    strict stall rule) stops with ``stagnation``; the residual it reports is the true one of the ``x`` it returns, far
    above the tolerance; ``throw=True`` raises naming the status."""
    pb = _damped(18.5, 3, 0.05, seed=41_003)
    A = pb.A.to_scipy().tocsr()
    solver = GRANS(rtol=1e-8, max_steps=200, smoother="chebyshev", outer=NoOuterStep(), stall_patience=3,
                   stall_tol=0.05)
    op = solver.setup(pb.A)
    sol = solver.solve(op, pb.b, throw=False)
    assert sol.result == RESULTS.stagnation and int(sol.num_steps) < 200
    rel = _relres(A, pb.b, sol.value)
    assert rel > 1e-3
    np.testing.assert_allclose(float(sol.stats["residual_norm"]) / np.linalg.norm(np.asarray(pb.b)), rel, rtol=1e-3)
    with pytest.raises(RuntimeError, match="stagnation"):
        solver.solve(op, pb.b)


def test_gradient_through_a_complex_solve_matches_scipy():
    """``∇_b ‖A⁻¹b‖²`` for a real ``b`` and complex symmetric ``A`` (the implicit adjoint solve on the same
    operator, ``Aᵀ = A``) equals ``2 Re(A⁻ᴴ A⁻¹ b)`` from SciPy, to the solve's float32 tolerance."""
    pb = _damped(12.0, 3, 0.05, seed=41_005)
    solver = GRANS(rtol=1e-5, max_steps=100, dtype="float32")
    op = solver.setup(pb.A)
    g = jax.grad(lambda b: jnp.sum(jnp.abs(solver.solve(op, b).value) ** 2))(jnp.asarray(pb.b, jnp.float32))
    A = pb.A.to_scipy().tocsc().astype(np.complex128)
    x = sla.spsolve(A, np.asarray(pb.b, np.float64))
    ref = 2 * np.real(sla.spsolve(A.conj().T.tocsc(), x))
    assert g.dtype == jnp.float32
    assert np.linalg.norm(np.asarray(g, np.float64) - ref) / np.linalg.norm(ref) <= 1e-3
