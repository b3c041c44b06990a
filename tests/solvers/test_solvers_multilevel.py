"""Smoothed-aggregation hierarchy, ELL products and G-RANS's multilevel smoother.

References are independent: SciPy sparse products in float64, dense NumPy triple products, a direct
NumPy construction of the M-matrix envelope, SciPy-recomputed residuals.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from _ell_host import ell_dense
from icmlx.solvers import (
    GRANS,
    EllMatrix,
    FlexibleGCR,
    GRANSNet,
    MultilevelSmoother,
    SparseMatrix,
    cg,
    m_matrix_envelope,
    smoothed_aggregation,
    standard_aggregation,
)
from icmlx.solvers.fem import make_problem, unit_square_mesh

sp = pytest.importorskip("scipy.sparse")

X64 = bool(jax.config.jax_enable_x64)
TOL = 1e-12 if X64 else 1e-5


def laplace2d(m):
    T = sp.diags([-np.ones(m - 1), 2 * np.ones(m), -np.ones(m - 1)], [-1, 0, 1])
    return (sp.kron(T, sp.eye(m)) + sp.kron(sp.eye(m), T)).tocsr()


def test_ell_matches_scipy_and_pads():
    rng = np.random.default_rng(0)
    M = sp.random(37, 23, density=0.15, random_state=1, format="csr")
    E = EllMatrix.from_scipy(M, num_rows=40, num_cols=30)
    assert E.shape == (40, 30) and E.idx.shape[0] % 4 == 0
    x = rng.standard_normal(30)
    y = np.asarray(E.mv(jnp.asarray(x, E.val.dtype)))
    ref = M @ x[:23]
    assert np.allclose(y[:37], ref, rtol=10 * TOL, atol=10 * TOL * np.abs(ref).max())
    assert np.all(y[37:] == 0)
    Ei = EllMatrix.from_scipy(laplace2d(4), num_rows=20, num_cols=20, pad_identity=True)
    d = np.asarray(Ei.diagonal())
    assert np.allclose(d[:16], 4.0) and np.all(d[16:] == 1.0)
    with pytest.raises(ValueError, match="ELL width"):
        EllMatrix.from_scipy(M, width=1)


def test_m_matrix_envelope_matches_direct_construction():
    rng = np.random.default_rng(3)
    D = rng.standard_normal((12, 12)) * (rng.random((12, 12)) < 0.3)
    D = D + np.diag(rng.uniform(-1, 3, 12))
    off = np.abs(D - np.diag(np.diag(D)))
    off = -(off + off.T) / 2
    ref = off + np.diag(np.maximum(np.diag(D), -off.sum(1)))
    assert np.allclose(m_matrix_envelope(sp.csr_matrix(D)).toarray(), ref, atol=1e-14)
    L = laplace2d(6)  # a symmetric diagonally dominant M-matrix is its own envelope
    assert abs(m_matrix_envelope(L) - L).max() == 0


def test_standard_aggregation_equals_pyamg():
    # the public aggregation is the set-up's: PyAMG's standard aggregation of the graph node for node (a mesh
    # stencil, a random symmetric pattern), and a node without neighbours becomes an aggregate of its own
    pyamg_aggregate = pytest.importorskip("pyamg.aggregation.aggregate")
    rng = np.random.default_rng(4)
    R = sp.random(300, 300, density=0.01, random_state=rng)
    st = np.array([[-0.3, -1.2, -0.1], [-1.5, 6.0, -0.6], [-0.2, -0.9, -0.4]])  # 9-point stencil, 21 × 21 grid
    conv = sp.csr_matrix(sum(sp.diags(np.full(441, st[1 + di, 1 + dj]), di * 21 + dj, shape=(441, 441))
                             for di in (-1, 0, 1) for dj in (-1, 0, 1)))
    for A in (conv, (R + R.T + sp.eye(300)).tocsr(), laplace2d(20)):
        G = abs(A) + abs(A).T
        G.setdiag(0)
        G.eliminate_zeros()
        ref = np.asarray(pyamg_aggregate.standard_aggregation(sp.csr_matrix(G))[0].argmax(axis=1)).ravel()
        covered = np.asarray(G.sum(axis=1)).ravel() > 0
        agg = standard_aggregation(A)
        assert np.array_equal(agg[covered], ref[covered])
        lone = agg[~covered]  # isolated nodes: their own aggregates, numbered after the others
        assert np.array_equal(np.sort(lone), np.arange(ref[covered].max() + 1, agg.max() + 1))


def test_hierarchy_is_galerkin_and_cycle_symmetric():
    A = laplace2d(16)  # n = 256: three levels (256 -> 40 -> 16 padded)
    H = smoothed_aggregation(A, max_coarse=20)
    assert H.num_levels >= 3
    n0 = A.shape[0]
    # the level matrices read from their ELL slots on the host (the ELL product itself is checked against SciPy
    # in test_ell_matches_scipy_and_pads; compiling one product per matrix here cost most of this test)
    A0 = ell_dense(H.ops[0])[:n0, :n0]
    assert np.allclose(A0, A.toarray(), atol=TOL)
    n1 = H.prolong[0].shape[1]
    P = ell_dense(H.prolong[0])[:n0, :n1]
    R = ell_dense(H.restrict[0])
    assert np.allclose(R[:n1, :n0], P.T, atol=TOL)
    A1 = ell_dense(H.ops[1])[:n1, :n1]
    assert np.allclose(A1, P.T @ A.toarray() @ P, atol=1e2 * TOL)
    # the V-cycle is a symmetric positive-definite operator for symmetric A
    rng = np.random.default_rng(1)
    u = np.zeros(H.sizes[0])
    v = np.zeros(H.sizes[0])
    u[:n0], v[:n0] = rng.standard_normal(n0), rng.standard_normal(n0)
    cycle = jax.jit(jax.vmap(H))  # (one program for both vectors instead of an eager cycle each)
    Bu, Bv = np.asarray(cycle(jnp.asarray(np.stack([u, v]), H.lambda_max.dtype)), np.float64)
    assert abs(v @ Bu - u @ Bv) <= 1e3 * TOL * np.linalg.norm(u) * np.linalg.norm(Bv)
    assert u @ Bu > 0


def test_vcycle_preconditioned_cg_is_mesh_independent():
    iters = []
    for ref in (3, 4):  # n = 225, 961 (P1 Poisson with a random coefficient field)
        pb = make_problem(jax.random.key(7), unit_square_mesh(ref), "poisson")
        H = smoothed_aggregation(pb.A, max_coarse=20)  # >= 3 levels at both sizes
        assert H.num_levels >= 3
        n = pb.A.shape[0]
        E = EllMatrix.from_sparse(pb.A, num_rows=H.sizes[0], num_cols=H.sizes[0], pad_identity=True)
        b = jnp.zeros(H.sizes[0], E.val.dtype).at[:n].set(pb.b)
        rtol = 1e-8 if X64 else 1e-4
        sol = cg(E, b, preconditioner=H, rtol=rtol, max_steps=100)
        x = np.asarray(sol.value, np.float64)[:n]
        A = pb.A.to_scipy().astype(np.float64)
        bb = np.asarray(pb.b, np.float64)
        assert np.linalg.norm(bb - A @ x) / np.linalg.norm(bb) <= 5 * rtol
        iters.append(int(sol.num_steps))
    assert max(iters) <= 25 and iters[1] <= iters[0] + 5, iters


def test_bad_inputs():
    with pytest.raises(ValueError, match="square"):
        smoothed_aggregation(sp.random(10, 12, density=0.5, format="csr"))
    with pytest.raises(ValueError, match="degree"):
        smoothed_aggregation(laplace2d(5), degree=0)
    with pytest.raises(ValueError, match="positive diagonal"):
        smoothed_aggregation(-laplace2d(5), envelope=False)
    net = GRANSNet.init(jax.random.key(0), hidden=4, layers=1)
    with pytest.raises(ValueError, match="smoother"):
        GRANS(net, smoother="gauss_seidel")
    with pytest.raises(ValueError, match="max_coarse"):
        MultilevelSmoother(max_coarse=0)
    A = SparseMatrix.from_scipy(laplace2d(5))

    @jax.jit
    def traced(vals):
        return smoothed_aggregation(SparseMatrix(A.rows, A.cols, vals, A.shape)).lambda_max

    with pytest.raises(TypeError, match="eager"):
        traced(A.vals)


@pytest.mark.x64
def test_grans_multilevel_converges_monotonically_on_helmholtz():
    pb = make_problem(jax.random.key(12), unit_square_mesh(4), "helmholtz")  # n = 961, k = 12
    net = GRANSNet.init(jax.random.key(1), hidden=8, layers=2, head_scale=0.5)  # random weights
    rtol = 1e-6 if X64 else 1e-4
    solver = GRANS(net, rtol=rtol, max_steps=80, outer=FlexibleGCR(memory=60), refresh=10**6,
                   smoother=MultilevelSmoother(), dtype="float64" if X64 else "float32")
    sol = solver.solve(solver.setup(pb.A), pb.b)
    k = int(sol.num_steps)
    hist = np.asarray(sol.residual_history)[: k + 1]
    assert np.all(np.diff(hist) <= 0)
    A = pb.A.to_scipy().astype(np.float64)
    b = np.asarray(pb.b, np.float64)
    assert np.linalg.norm(b - A @ np.asarray(sol.value, np.float64)) / np.linalg.norm(b) <= 2 * rtol
    assert k < 60
