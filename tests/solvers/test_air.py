"""``air_setup``: nonsymmetric multigrid by local approximate ideal restriction, against independent references.

References: PyAMG (its classical strength, one-point interpolation and local AIR restriction for the same C/F
splitting, and its ``air_solver`` iteration counts with the same GMRES), SciPy ``spsolve`` and float64 SciPy
residuals, node-by-node NumPy loops (the splitting's interpolation condition, FC-Jacobi sweeps).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx import RESULTS
from icmlx.solvers import AMGSolver, FCJacobiRelaxation, air_setup, amg_setup, solve
from icmlx.solvers._amg._air import air_restriction, cf_splitting, classical_strength, one_point_interpolation

sp = pytest.importorskip("scipy.sparse")
spla = pytest.importorskip("scipy.sparse.linalg")

X64 = bool(jax.config.jax_enable_x64)
RTOL = 1e-8 if X64 else 1e-5


def convection_diffusion(m: int, eps: float, wind: str = "recirculating"):
    r"""$-\epsilon \Delta u + b \cdot \nabla u$ on the unit square, ``m × m`` interior points, Dirichlet boundary,
    central differences for diffusion and first-order upwind differences for convection. ``wind``:
    ``"recirculating"`` $b = (2y(1 - x^2), -2x(1 - y^2))$ or ``"constant"`` $b = (\cos 0.3, \sin 0.3)$; the
    Péclet number is about ``1 / eps``."""
    h = 1.0 / (m + 1)
    x = np.arange(1, m + 1) * h
    X, Y = np.meshgrid(x, x, indexing="ij")
    if wind == "recirculating":
        bx, by = 2 * Y * (1 - X**2), -2 * X * (1 - Y**2)
    else:
        bx, by = np.full_like(X, np.cos(0.3)), np.full_like(X, np.sin(0.3))
    bx, by = bx.ravel(), by.ravel()
    n = m * m
    idx = np.arange(n).reshape(m, m)
    I, J = np.meshgrid(np.arange(m), np.arange(m), indexing="ij")
    rows, cols, vals = [np.arange(n)], [np.arange(n)], [4 * eps / h**2 + (np.abs(bx) + np.abs(by)) / h]
    for di, dj, b, side in ((-1, 0, bx, 1), (1, 0, bx, -1), (0, -1, by, 1), (0, 1, by, -1)):
        inside = ((I + di >= 0) & (I + di < m) & (J + dj >= 0) & (J + dj < m)).ravel()
        r = idx.ravel()[inside]
        c = idx[np.clip(I + di, 0, m - 1), np.clip(J + dj, 0, m - 1)].ravel()[inside]
        # the upwind neighbour (the wind blows from it) takes the convective coupling
        rows.append(r)
        cols.append(c)
        vals.append(-eps / h**2 - np.maximum(side * b[r], 0.0) / h)
    A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))
    A.sum_duplicates()
    return A


def relres(A, b, x):
    x = np.asarray(x, np.float64)
    return np.linalg.norm(b - A @ x) / np.linalg.norm(b)


def _splitting_of_pyamg(A):
    from pyamg.classical.split import RS
    from pyamg.strength import classical_strength_of_connection

    S = classical_strength_of_connection(A, theta=0.3, norm="min")
    return RS(S, second_pass=True).astype(bool)


def test_classical_strength_is_pyamgs():
    from pyamg.strength import classical_strength_of_connection

    A = convection_diffusion(12, 1e-2)
    for norm, theta in (("min", 0.3), ("abs", 0.05), ("abs", 0.5)):
        S = classical_strength(A, theta, norm)
        ref = sp.csr_matrix(classical_strength_of_connection(A, theta=theta, norm=norm))
        ref.setdiag(0)
        ref.eliminate_zeros()
        assert (abs(S) > 0).astype(int).nnz == ref.nnz
        assert ((abs(S) > 0).astype(int) != (abs(ref) > 0).astype(int)).nnz == 0


@pytest.mark.parametrize("distance", [1, 2])
def test_restriction_and_interpolation_are_pyamgs_for_one_splitting(distance):
    pytest.importorskip("pyamg")
    from pyamg.classical.interpolate import local_air
    from pyamg.classical.interpolate import one_point_interpolation as pyamg_one_point
    from pyamg.strength import classical_strength_of_connection

    A = convection_diffusion(16, 1e-3)
    cpt = _splitting_of_pyamg(A)
    R = air_restriction(A, cpt, theta=0.05, distance=distance)
    R_ref = sp.csr_matrix(local_air(A, cpt.astype(np.int32), theta=0.05, degree=distance))
    assert abs(R - R_ref).max() < 1e-12 * abs(R_ref).max()
    S = classical_strength(A, 0.3, "min")
    P = one_point_interpolation(A, S, cpt)
    C = classical_strength_of_connection(A, theta=0.3, norm="min")
    P_ref = sp.csr_matrix(pyamg_one_point(A, C, cpt.astype(np.int32)))
    assert abs(P - P_ref).max() == 0


def test_splitting_meets_the_interpolation_condition():
    A = convection_diffusion(20, 1e-2)
    S = classical_strength(A, 0.3, "min")
    cpt = cf_splitting(S)
    assert 0.2 < cpt.mean() < 0.8
    # every F-point that depends strongly on another F-point shares a strong C-neighbour with it (node by node)
    Sl = S.tolil()
    for i in np.nonzero(~cpt)[0]:
        ci = {j for j in Sl.rows[i] if cpt[j]}
        for j in Sl.rows[i]:
            if not cpt[j]:
                assert ci & {k for k in Sl.rows[j] if cpt[k]}, (i, j)
    # the first pass alone: every F-point depends strongly on a C-point, unless it depends on no one or no one
    # depends on it
    first = cf_splitting(S, second_pass=False)
    has_c = np.asarray((S @ sp.diags(first.astype(float))).astype(bool).sum(axis=1)).ravel() > 0
    lonely = (np.diff(S.indptr) == 0) | (np.diff(S.tocsc().indptr) == 0)
    assert np.all(has_c[~first] | lonely[~first])


@pytest.mark.parametrize("eps,wind", [(1e-2, "recirculating"), (1e-3, "recirculating"), (1e-3, "constant")])
def test_air_iterations_within_twice_pyamg_and_solution_is_spsolves(eps, wind):
    """Péclet ≈ 100 and 1,000: the cycle preconditions PyAMG's own GMRES in at most twice the iterations that
    PyAMG's ``air_solver`` needs with it; ``AMGSolver.solve`` reaches ``rtol`` (true float64 residual) and the
    solution of ``spsolve``."""
    pyamg = pytest.importorskip("pyamg")
    A = convection_diffusion(48, eps, wind)
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    ref_res = []
    pyamg.air_solver(A).solve(b, tol=RTOL, accel="gmres", residuals=ref_res, maxiter=200)
    solver = air_setup(A)
    cycle = jax.jit(lambda v, H=solver.hierarchy: H.as_preconditioner(A.shape[0])(v))
    M = spla.LinearOperator(A.shape, matvec=lambda v: np.array(cycle(jnp.asarray(np.ravel(v), solver.A.val.dtype)),
                                                                np.float64))
    res = []
    pyamg.krylov.gmres(A, b, tol=RTOL, M=M, residuals=res, maxiter=200)
    assert len(res) - 1 <= 2 * (len(ref_res) - 1), (len(res) - 1, len(ref_res) - 1)
    sol = solver.solve(b, rtol=RTOL)
    assert int(sol.num_steps) <= 30  # within the first GMRES(30) cycle
    assert relres(A, b, sol.value) <= RTOL
    x_ref = spla.spsolve(A.tocsc(), b)
    # forward error ≤ κ · backward error; κ(A) ≈ 1e3 here
    assert np.linalg.norm(np.asarray(sol.value, np.float64) - x_ref) <= 1e4 * RTOL * np.linalg.norm(x_ref)
    # icmlx's own BiCGStab: a step applies the cycle twice, so as many steps as PyAMG's GMRES iterations are
    # twice its cycle applications
    sol_b = air_setup(A, method="bicgstab").solve(b, rtol=RTOL)
    assert int(sol_b.num_steps) <= len(ref_res) - 1 and relres(A, b, sol_b.value) <= RTOL


@pytest.mark.x64
@pytest.mark.parametrize("eps,wind", [(1e-2, "recirculating"), (1e-3, "recirculating"), (1e-3, "constant")])
def test_solve_takes_air_on_convection_within_twice_pyamg_air(eps, wind):
    """The default ``solve(A, b)`` on convection–diffusion at Péclet ≈ 100 and 1,000 (nonsymmetric, positive
    diagonal): AIR + GMRES, in at most twice the GMRES iterations of PyAMG's ``air_solver``, to the true float64
    residual ``rtol``."""
    pyamg = pytest.importorskip("pyamg")
    A = convection_diffusion(48, eps, wind)
    b = np.random.default_rng(1).standard_normal(A.shape[0])
    ref_res = []
    pyamg.air_solver(A).solve(b, tol=RTOL, accel="gmres", residuals=ref_res, maxiter=200)
    sol = solve(A, b, rtol=RTOL)
    assert sol.method == "gmres" and "AIR" in sol.method_reason and "not symmetric" in sol.method_reason
    assert int(sol.num_steps) <= 2 * (len(ref_res) - 1), (int(sol.num_steps), len(ref_res) - 1)
    assert relres(A, b, sol.value) <= RTOL


def test_solve_keeps_smoothed_aggregation_when_asked_or_symmetric():
    """An option only smoothed aggregation takes (``strength``), or an explicit ``method``, keeps `amg_setup`;
    a symmetric matrix keeps CG."""
    A = convection_diffusion(20, 1e-2)
    b = np.ones(A.shape[0])
    for kw in (dict(strength="symmetric"), dict(method="gmres")):
        sol = solve(A, b, rtol=RTOL, **kw)
        assert "AIR" not in sol.method_reason and relres(A, b, sol.value) <= RTOL
    S = (A + A.T).tocsr() * 0.5
    sol = solve(S, b, rtol=RTOL)
    assert sol.method == "cg" and "AIR" not in sol.method_reason


def test_air_beats_smoothed_aggregation_on_transport():
    A = convection_diffusion(32, 1e-3)
    b = np.ones(A.shape[0])
    air = air_setup(A, method="bicgstab").solve(b, rtol=RTOL)
    sa = amg_setup(A, method="bicgstab").solve(b, rtol=RTOL, throw=False)
    assert relres(A, b, air.value) <= RTOL
    assert int(air.num_steps) < int(sa.num_steps)


def test_fc_jacobi_is_the_numpy_sweep():
    A = convection_diffusion(10, 1e-2)
    n = A.shape[0]
    f = (np.arange(n) % 3 != 0).astype(np.float64)
    d = A.diagonal()
    rng = np.random.default_rng(3)
    b, x0 = rng.standard_normal(n), rng.standard_normal(n)
    relax = FCJacobiRelaxation(omega=0.8, f_iterations=2, c_iterations=1, presmooth=True)
    from icmlx.solvers import EllMatrix

    E = EllMatrix.from_scipy(A)
    dt = E.val.dtype
    got = relax.relax(E, jnp.asarray(1 / d, dt), None, jnp.asarray(f, dt), jnp.asarray(b, dt), jnp.asarray(x0, dt),
                      False)
    x = x0.copy()
    for mask, times in ((f == 1, 2), (f == 0, 1)):
        for _ in range(times):
            r = b - A @ x
            x[mask] = x[mask] + 0.8 * r[mask] / d[mask]
    tol = 1e-10 if X64 else 1e-4
    assert np.allclose(np.asarray(got, np.float64), x, rtol=tol, atol=tol * np.abs(x).max())
    # post-relaxation only: the relaxation before the coarse correction (from a zero guess) leaves x = 0
    zero = FCJacobiRelaxation().relax(E, jnp.asarray(1 / d, dt), None, jnp.asarray(f, dt), jnp.asarray(b, dt),
                                      jnp.zeros(n, dt), True)
    assert not np.any(np.asarray(zero))


@pytest.mark.x64
def test_air_solve_jit_vmap_and_grad():
    A = convection_diffusion(16, 1e-2)
    n = A.shape[0]
    solver = air_setup(A, max_coarse=20)
    assert isinstance(solver, AMGSolver) and solver.hierarchy.num_levels > 2
    rng = np.random.default_rng(0)
    B = rng.standard_normal((3, n))
    dt = solver.A.val.dtype
    X = jax.jit(jax.vmap(lambda b: solver.solve(b, rtol=RTOL).value))(jnp.asarray(B, dt))
    for k in range(3):
        assert relres(A, B[k], X[k]) <= 10 * RTOL
    # d(w·x)/db = A^{-T} w
    w = rng.standard_normal(n)
    g = jax.grad(lambda b: jnp.vdot(jnp.asarray(w, dt), solver.solve(b, rtol=RTOL).value))(jnp.asarray(B[0], dt))
    lam = spla.spsolve(A.T.tocsc(), w)
    assert np.linalg.norm(np.asarray(g, np.float64) - lam) <= 1e3 * RTOL * np.linalg.norm(lam)
    # a lineax solver: lx.linear_solve with the AIR set-up, and its cycle as lineax GMRES's preconditioner
    import lineax as lx

    from icmlx.solvers import SparseMatrix

    op = SparseMatrix.from_scipy(A, dtype=dt)
    x_ref = spla.spsolve(A.tocsc(), B[0])
    x = lx.linear_solve(op, jnp.asarray(B[0], dt), solver, options={"rtol": RTOL}).value
    assert np.linalg.norm(np.asarray(x, np.float64) - x_ref) <= 1e3 * RTOL * np.linalg.norm(x_ref)
    x = lx.linear_solve(op, jnp.asarray(B[0], dt), lx.GMRES(rtol=RTOL, atol=0.0, restart=30),
                        options={"preconditioner": solver.as_preconditioner()}).value
    assert np.linalg.norm(np.asarray(x, np.float64) - x_ref) <= 1e3 * RTOL * np.linalg.norm(x_ref)


def test_air_setup_errors():
    A = convection_diffusion(8, 1e-2)
    with pytest.raises(ValueError, match="method"):
        air_setup(A, method="cg")
    with pytest.raises(ValueError, match="distance"):
        air_setup(A, distance=3)
    with pytest.raises(TypeError, match="theta"):
        air_setup(A, theta="0.3")
    with pytest.raises(ValueError, match="theta"):
        air_setup(A, restrict_theta=1.0)
    with pytest.raises(ValueError, match="relaxation"):
        air_setup(A, relaxation="gauss")
    Z = A.tolil()
    Z[3, 3] = 0.0
    with pytest.raises(ValueError, match="zero diagonal"):
        air_setup(Z.tocsr())
    N = A.copy()
    N.data[5] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        air_setup(N)
    with pytest.raises(ValueError, match="empty"):
        air_setup(sp.csr_matrix((0, 0)))
    with pytest.raises(ValueError, match="f_iterations"):
        FCJacobiRelaxation(f_iterations=0)
    with pytest.raises(ValueError, match="air_setup"):  # no C/F splitting in a smoothed-aggregation hierarchy
        amg_setup(convection_diffusion(30, 1e-2), relaxation=FCJacobiRelaxation(), max_coarse=50).solve(
            np.ones(900))


@pytest.mark.x64
def test_air_solver_update_says_to_set_up_again():
    """An `AMGSolver` from ``air_setup`` keeps no sparsity pattern: ``update`` and ``values_of`` name the builder
    and the call to make instead (``air_setup`` on the new matrix), rather than suggesting ``reuse_pattern``."""
    A = convection_diffusion(12, 1e-2)
    solver = air_setup(A, max_coarse=20)
    assert solver.builder == "air_setup" and "air_setup" in repr(solver)
    assert amg_setup(A, max_coarse=20).builder == "amg_setup"
    for call in (lambda: solver.update(A.data), lambda: solver.update(A), lambda: solver.values_of(A)):
        with pytest.raises(ValueError, match=r"built by air_setup.*air_setup\(A_new\)"):
            call()


@pytest.mark.x64
def test_solve_falls_back_to_smoothed_aggregation_when_air_fails():
    """When AIR + GMRES does not converge (here: a one-step budget), ``solve`` runs smoothed aggregation + GMRES
    with the same budget, says so in ``method_reason``, and reports the true status of the answer it returns."""
    A = convection_diffusion(32, 1e-2)  # (above max_coarse: not the dense coarsest solve alone)
    b = np.ones(A.shape[0])
    sol = solve(A, b, rtol=RTOL, max_steps=1, throw=False)
    assert "AIR + GMRES ended with max_steps_reached after 1 steps" in sol.method_reason
    assert "V-cycle took over" in sol.method_reason and int(sol.num_steps) == 1
    ok = relres(A, b, sol.value) <= RTOL
    assert ok == bool(sol.result == RESULTS.successful)
    with pytest.raises(RuntimeError, match="max_steps_reached"):
        solve(A, b, rtol=RTOL, max_steps=1)
