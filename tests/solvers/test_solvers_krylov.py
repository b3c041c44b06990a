"""Sparse operator, JAX Krylov baselines and smoothers against SciPy / NumPy float64 references."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx import RESULTS
from icmlx.solvers import (
    SparseMatrix,
    aggregation_hierarchy,
    bicgstab,
    bucket_size,
    cg,
    gmres,
    standard_aggregation,
)
from icmlx.solvers.fem import make_problem, unit_square_mesh

sp = pytest.importorskip("scipy.sparse")
sla = pytest.importorskip("scipy.sparse.linalg")
csgraph = pytest.importorskip("scipy.sparse.csgraph")

X64 = bool(jax.config.jax_enable_x64)
RTOL = 1e-8 if X64 else 1e-4  # solver tolerance used below (float32 cannot go much lower)


@pytest.fixture(scope="module")
def problems():
    mesh = unit_square_mesh(3)
    return {eq: make_problem(jax.random.key(7), mesh, eq) for eq in
            ("poisson", "advection", "helmholtz")}


def _relres(pb, x):
    A = pb.A.to_scipy().astype(np.float64)
    b = np.asarray(pb.b, np.float64)
    return np.linalg.norm(b - A @ np.asarray(x, np.float64)) / np.linalg.norm(b)


def test_matvec_and_transpose_match_scipy(problems):
    pb = problems["advection"]
    A = pb.A.to_scipy().astype(np.float64)
    x = np.sin(np.arange(A.shape[0]))
    tol = 1e-12 if X64 else 1e-5
    dt = pb.A.dtype
    np.testing.assert_allclose(pb.A.mv(jnp.asarray(x, dt)), A @ x, rtol=tol, atol=tol)
    np.testing.assert_allclose(pb.A.rmatvec(jnp.asarray(x, dt)), A.T @ x, rtol=tol, atol=tol)
    np.testing.assert_allclose(pb.A.diagonal(), A.diagonal(), rtol=tol)
    B = SparseMatrix.from_bcoo(pb.A.to_bcoo())
    np.testing.assert_allclose(B.mv(jnp.asarray(x, dt)), A @ x, rtol=tol, atol=tol)


@pytest.mark.x64
def test_cg_matches_scipy_solution(problems):
    pb = problems["poisson"]
    A = pb.A.to_scipy().astype(np.float64)
    xs = sla.spsolve(A.tocsc(), np.asarray(pb.b, np.float64))
    for pre in (None, "jacobi"):
        sol = jax.jit(lambda A, b, pre=pre: cg(A, b, rtol=RTOL, preconditioner=pre, throw=False))(pb.A, pb.b)
        assert sol.result == RESULTS.successful
        assert _relres(pb, sol.value) <= 1.01 * RTOL
        assert np.linalg.norm(np.asarray(sol.value) - xs) <= 100 * RTOL * np.linalg.norm(xs)
    # same iteration count as scipy (same recursion, same stopping rule): exact arithmetic aside,
    # within 3 steps in float64 and 10% in float32 (rounding changes the Krylov recursion)
    its = []
    sla.cg(A, np.asarray(pb.b, np.float64), rtol=RTOL, callback=lambda _: its.append(1))
    slack = 3 if X64 else max(3, len(its) // 10)
    assert abs(int(cg(pb.A, pb.b, rtol=RTOL).num_steps) - len(its)) <= slack


@pytest.mark.x64
def test_gmres_bicgstab_nonsymmetric_match_scipy(problems):
    pb = problems["advection"]
    xs = sla.spsolve(pb.A.to_scipy().astype(np.float64).tocsc(), np.asarray(pb.b, np.float64))
    for solve in (lambda A, b: gmres(A, b, rtol=RTOL, restart=30, throw=False),
                  lambda A, b: bicgstab(A, b, rtol=RTOL, throw=False)):
        sol = jax.jit(solve)(pb.A, pb.b)
        assert sol.result == RESULTS.successful
        assert _relres(pb, sol.value) <= 1.01 * RTOL
        assert np.linalg.norm(np.asarray(sol.value) - xs) <= 1e3 * RTOL * np.linalg.norm(xs)


def test_krylov_reports_failure(problems):
    pb = problems["helmholtz"]
    sol = gmres(pb.A, pb.b, rtol=1e-12, restart=5, max_steps=10, throw=False)
    assert sol.result == RESULTS.max_steps_reached
    with pytest.raises(RuntimeError):
        jax.block_until_ready(gmres(pb.A, pb.b, rtol=1e-12, restart=5, max_steps=10))
    with pytest.raises(ValueError):
        cg(pb.A, pb.b[:-1])


def test_aggregation_is_a_partition_of_connected_sets(problems):
    pb = problems["poisson"]
    rows, cols, n = np.asarray(pb.A.rows), np.asarray(pb.A.cols), pb.A.shape[0]
    agg = standard_aggregation(rows, cols, n)
    assert agg.min() == 0 and agg.shape == (n,)
    nc = agg.max() + 1
    assert 4 <= n / nc <= 12  # 2-D P1 graph: aggregates of a node and its neighbours
    # each aggregate is connected (checked with scipy's connected components on the induced graph)
    G = sp.csr_array((np.ones(rows.size), (rows, cols)), shape=(n, n))
    for a in range(0, nc, 7):
        idx = np.nonzero(agg == a)[0]
        ncomp = csgraph.connected_components(G[idx][:, idx])[0]
        assert ncomp == 1
    sizes = [m.max() + 1 for m in aggregation_hierarchy(rows, cols, n)]
    assert all(a > b for a, b in zip(sizes, sizes[1:]))


def test_bucket_size():
    for n in (1, 64, 65, 961, 1025, 3969, 16129, 65025, 10**6):
        b = bucket_size(n)
        assert b >= n and b <= max(64, 1.25 * n + 1)
