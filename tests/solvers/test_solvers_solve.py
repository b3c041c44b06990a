"""``solve``/``amg_setup``: the smoothed-aggregation hierarchy against independent references.

References: PyAMG (its standard aggregation and its SA+CG iteration counts, the peer), node-by-node Python loops
(greedy colouring, lexicographically first independent sets), SciPy ``spsolve`` and
float64 SciPy residuals, SciPy ``P.T @ A @ P``, the exact-range property ``T B_c = B`` checked in NumPy, and the
kernel of PyAMG's linear-elasticity operator for the rigid-body modes.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import icmlx
from icmlx.solvers import (
    AMGSolver,
    ChebyshevRelaxation,
    GaussSeidelRelaxation,
    JacobiRelaxation,
    SymmetricStrength,
    amg_setup,
    rigid_body_modes,
    solve,
)
from icmlx.solvers._amg._levels import fit_candidates, standard_aggregate, symmetric_strength

sp = pytest.importorskip("scipy.sparse")
spla = pytest.importorskip("scipy.sparse.linalg")
pyamg = pytest.importorskip("pyamg")
from pyamg.gallery import diffusion_stencil_2d, linear_elasticity, poisson, stencil_grid  # noqa: E402

X64 = bool(jax.config.jax_enable_x64)
RTOL = 1e-8 if X64 else 1e-5


def relres(A, b, x):
    x = np.asarray(x, np.float64)
    return np.linalg.norm(b - A @ x) / np.linalg.norm(b)


def aniso(m):
    return stencil_grid(diffusion_stencil_2d(epsilon=1e-3, theta=np.pi / 8, type="FE"), (m, m), format="csr")


def dense_of(E, n_in):
    eye = jnp.eye(E.shape[1], dtype=E.val.dtype)[:n_in]
    return np.asarray(jax.jit(jax.vmap(E.mv))(eye), np.float64).T


@pytest.mark.parametrize("make", [lambda: poisson((20, 20), format="csr"), lambda: aniso(15)])
def test_standard_aggregation_is_pyamgs(make):
    from pyamg.aggregation.aggregate import standard_aggregation

    A = make()
    S = symmetric_strength(A, 0.0)
    agg, num = standard_aggregate(S)
    Agg = standard_aggregation(sp.csr_matrix(S))[0].tocsr()
    ref = np.full(A.shape[0], -1)
    ref[np.repeat(np.arange(A.shape[0]), np.diff(Agg.indptr))] = Agg.indices
    assert num == Agg.shape[1] and np.array_equal(agg, ref)


def _random_graphs(num, seed):
    """Symmetric random patterns (no diagonal) of 5-200 nodes: isolated nodes, chains and dense clumps."""
    rng = np.random.default_rng(seed)
    out = []
    for s in range(num):
        n = int(rng.integers(5, 200))
        R = sp.random(n, n, density=float(rng.uniform(0.005, 0.08)), random_state=s)
        R = sp.csr_matrix(((R + R.T) > 0).astype(float))
        R.setdiag(0)
        R.eliminate_zeros()
        out.append(R)
    return out


def test_wavefront_aggregation_is_pyamgs_on_random_graphs_and_past_the_degree_cap():
    from pyamg.aggregation.aggregate import standard_aggregation

    hub = sp.lil_matrix((90, 90))  # a node with 80 neighbours: the node-by-node fallback
    hub[0, 1:81] = 1.0
    hub[np.arange(81, 89), np.arange(82, 90)] = 1.0
    for S in _random_graphs(12, 1) + [sp.csr_matrix(hub + hub.T)]:
        agg, num = standard_aggregate(S)
        Agg = standard_aggregation(sp.csr_matrix(S))[0].tocsr()
        ref = np.full(S.shape[0], -1)
        ref[np.repeat(np.arange(S.shape[0]), np.diff(Agg.indptr))] = Agg.indices
        assert num == Agg.shape[1] and np.array_equal(agg, ref)


@pytest.mark.parametrize("theta", [0.0, 0.25])
def test_strength_pattern_is_pyamgs(theta):
    from pyamg.strength import symmetric_strength_of_connection

    rng = np.random.default_rng(3)
    lopsided = sp.random(60, 60, density=0.08, random_state=4) + sp.eye(60)  # a nonsymmetric pattern
    lopsided.data *= rng.choice([-1.0, 1.0], lopsided.nnz)
    for A in (aniso(12), sp.csr_matrix(lopsided)):
        S = symmetric_strength(sp.csr_matrix(A), theta)
        R = sp.csr_matrix(symmetric_strength_of_connection(sp.csr_matrix(A), theta))
        R = ((R + R.T) != 0).astype(float).tolil()
        R.setdiag(0)
        R = sp.csr_matrix(R)
        R.eliminate_zeros()
        assert (S != R).nnz == 0 and S.has_sorted_indices


def _sequential_greedy(G):
    # the reference: node by node, the smallest colour no lower neighbour holds
    color = np.full(G.shape[0], -1)
    for i in range(G.shape[0]):
        nb = G.indices[G.indptr[i]:G.indptr[i + 1]]
        taken = set(color[nb[nb < i]].tolist())
        color[i] = min(set(range(len(taken) + 1)) - taken)
    return color


def _sequential_mis(G, hops):
    # the reference: node by node, join unless a member lies within ``hops`` steps (nodes without neighbours stay out)
    near = np.zeros(G.shape[0], bool)
    member = np.zeros(G.shape[0], bool)
    for i in range(G.shape[0]):
        nb = G.indices[G.indptr[i]:G.indptr[i + 1]]
        if nb.size and not near[i] and (hops == 1 or not near[nb].any()):
            member[i] = near[i] = True
            near[nb] = True
    return member


def test_wavefront_colouring_and_independent_sets_equal_the_node_by_node_loops():
    from icmlx.solvers._amg._levels import multicolor
    from icmlx.solvers._amg._wavefront import closed_table, greedy_colors, lexicographic_mis

    for G in _random_graphs(8, 2) + [symmetric_strength(aniso(12), 0.0)]:
        G = sp.csr_matrix(G)
        G.sort_indices()
        C, low = closed_table(G.indptr, G.indices)
        c = greedy_colors(C, low)
        assert np.array_equal(c, _sequential_greedy(G))
        for hops in (1, 2):
            assert np.array_equal(lexicographic_mis(C, low, hops), _sequential_mis(G, hops))
    # the colour counts the Gauss–Seidel sweep relies on: 2 for the 5-point stencil, 4 for the 9-point one
    assert multicolor(poisson((40, 40), format="csr")).max() == 1
    assert multicolor(aniso(40)).max() == 3


def test_tentative_prolongator_holds_the_candidates_exactly():
    rng = np.random.default_rng(0)
    n, k = 60, 3
    agg = rng.integers(0, 9, n)
    agg[:3] = 9  # an aggregate with fewer dofs than candidates: a column is dropped
    agg[3] = -1  # a node outside every aggregate
    B = rng.standard_normal((n, k))
    T, Bc, node = fit_candidates(agg, B, 10)
    Td = T.toarray()
    inside = agg >= 0
    assert np.allclose(Td @ Bc, np.where(inside[:, None], B, 0.0), atol=1e-12)
    for a in range(10):  # orthonormal columns on each aggregate
        cols = np.nonzero(node == a)[0]
        G = Td[:, cols].T @ Td[:, cols]
        assert np.allclose(G, np.eye(cols.size), atol=1e-12)
    assert np.sum(node == 9) == 3 and np.all(Td[3] == 0)


def test_rigid_body_modes_span_the_elasticity_kernel():
    m = 8
    A, B = linear_elasticity((m, m), format="bsr")
    xy = np.array([[i, j] for j in range(m) for i in range(m)], float)
    R = rigid_body_modes(xy)
    AR = np.abs(A @ R).max(axis=1).reshape(m, m, 2).max(axis=2)
    interior = np.zeros((m, m), bool)
    interior[1:-1, 1:-1] = True  # the gallery's boundary rows carry the boundary conditions
    assert AR[interior].max() <= 1e-9 * abs(A).max() * np.abs(R).max()
    # the same space as PyAMG's own candidates
    assert np.linalg.matrix_rank(np.hstack([R, B]), tol=1e-8) == 3
    assert rigid_body_modes(np.zeros((4, 3))).shape == (12, 6)


@pytest.mark.slow
def test_galerkin_levels_match_scipy_triple_products():
    A = poisson((24, 24), format="csr")
    s = amg_setup(A, max_coarse=20, dtype=jnp.float64 if X64 else jnp.float32)
    H = s.hierarchy
    assert H.num_levels >= 3
    n0 = A.shape[0]
    n1 = H.prolong[0].shape[1]
    P = dense_of(H.prolong[0], n1)[:n0]
    A1 = dense_of(H.ops[1], n1)[:n1]
    ref = P.T @ A.toarray() @ P
    assert np.allclose(A1, ref, atol=(1e-10 if X64 else 1e-4) * np.abs(ref).max())
    assert np.allclose(dense_of(H.restrict[0], n0)[:n1, :n0], P.T, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("relaxation", [GaussSeidelRelaxation(), ChebyshevRelaxation(), JacobiRelaxation()])
def test_cycle_is_symmetric_positive_definite(relaxation):
    A = poisson((16, 16), format="csr")
    H = amg_setup(A, max_coarse=20, relaxation=relaxation).hierarchy
    rng = np.random.default_rng(1)
    u, v = np.zeros((2, H.sizes[0]))
    u[:256], v[:256] = rng.standard_normal((2, 256))
    dt = H.coarse_inv.dtype
    Bu, Bv = np.asarray(jax.jit(jax.vmap(H))(jnp.asarray(np.stack([u, v]), dt)))
    tol = 1e-10 if X64 else 1e-4
    assert abs(v @ Bu - u @ Bv) <= tol * np.linalg.norm(u) * np.linalg.norm(Bv)
    assert u @ Bu > 0


PROBLEMS = {
    "poisson": lambda: (poisson((40, 40), format="csr"), None),
    "aniso": lambda: (aniso(40), None),
    "elasticity": lambda: linear_elasticity((24, 24), format="bsr"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_iterations_within_1p5x_of_pyamg_and_answer_matches_spsolve(name):
    A, B = PROBLEMS[name]()
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    res = []
    pyamg.smoothed_aggregation_solver(A, B=B).solve(b, tol=RTOL, accel="cg", residuals=res)
    sol = solve(A, b, near_nullspace=B)
    assert sol.result == icmlx.RESULTS.successful
    assert relres(A, b, sol.value) <= 1.01 * RTOL
    assert int(sol.num_steps) <= 1.5 * (len(res) - 1) + 1, (int(sol.num_steps), len(res) - 1)
    if X64:
        x = spla.spsolve(sp.csc_matrix(A), b)
        assert np.linalg.norm(np.asarray(sol.value) - x) <= 1e-5 * np.linalg.norm(x)


@pytest.mark.slow
def test_near_nullspace_is_what_makes_elasticity_fast():
    A, B = linear_elasticity((24, 24), format="bsr")
    b = np.random.default_rng(2).standard_normal(A.shape[0])
    with_b = solve(A, b, near_nullspace=B)
    without = solve(A, b, throw=False)
    assert int(with_b.num_steps) < int(without.num_steps)


@pytest.mark.slow
def test_setup_once_solve_many_jit_vmap_and_w_cycle():
    A = poisson((20, 20), format="csr")
    s = amg_setup(A, cycle="W", strength=SymmetricStrength(0.1))
    assert isinstance(s, AMGSolver) and s.method == "cg" and "W" in repr(s)
    Bs = np.random.default_rng(3).standard_normal((3, 400))
    out = jax.jit(jax.vmap(lambda b: s.solve(b, throw=False).value))(jnp.asarray(Bs, s.A.val.dtype))
    for b, x in zip(Bs, np.asarray(out)):
        assert relres(A, b, x) <= 1.01 * RTOL


@pytest.mark.slow
def test_nonsymmetric_and_indefinite_take_gmres():
    m = 20
    T = sp.diags([-1.3 * np.ones(m * m - 1), 2.6 * np.ones(m * m), -0.7 * np.ones(m * m - 1)], [-1, 0, 1])
    A = (T + poisson((m, m), format="csr")).tocsr()  # upwinded advection-diffusion: nonsymmetric
    b = np.ones(m * m)
    s = amg_setup(A, max_coarse=50)
    assert s.method == "gmres" and s.hierarchy_on == "A" and s.hierarchy.num_levels >= 2
    assert relres(A, b, s.solve(b).value) <= 1.01 * RTOL
    # a negative diagonal (shifted Laplacian, indefinite): the hierarchy is built on the M-matrix envelope and
    # preconditions GMRES on C itself
    C = (sp.diags([-np.ones(19), 2 * np.ones(20), -np.ones(19)], [-1, 0, 1]) - 2.5 * sp.eye(20)).tocsr()
    s = amg_setup(C, max_coarse=5)
    assert s.hierarchy_on == "envelope" and s.method == "gmres"
    b = np.random.default_rng(4).standard_normal(20)
    assert relres(C, b, s.solve(b).value) <= 1.01 * RTOL


@pytest.mark.slow
def test_failures_are_reported():
    A = aniso(24)
    b = np.ones(A.shape[0])
    sol = solve(A, b, max_steps=2, throw=False)
    assert sol.result == icmlx.RESULTS.max_steps_reached and int(sol.num_steps) == 2
    with pytest.raises(RuntimeError, match="throw=False"):
        solve(A, b, max_steps=2)


def test_bad_settings_are_named():
    A = aniso(24)
    b = np.ones(A.shape[0])
    with pytest.raises(ValueError, match="near_nullspace"):
        amg_setup(A, near_nullspace=np.ones((3, 1)))
    with pytest.raises(ValueError, match="cycle"):
        amg_setup(A, cycle="F")
    with pytest.raises(ValueError, match="method"):
        amg_setup(A, method="lu")
    with pytest.raises(ValueError, match="relaxation"):
        amg_setup(A, relaxation="sor")
    with pytest.raises(ValueError, match="theta"):
        SymmetricStrength(theta=1.5)
    with pytest.raises(TypeError, match="amg_setup"):
        solve(A, b, tol=1e-3)


def test_colouring_separates_every_coupling():
    from icmlx.solvers._amg._levels import multicolor

    for A in (poisson((12, 12), format="csr"), aniso(10), sp.csr_matrix(linear_elasticity((6, 6))[0])):
        A = sp.csr_matrix(A)
        A.eliminate_zeros()
        c = multicolor(A)
        G = A.tocoo()
        off = G.row != G.col
        assert np.all(c >= 0) and np.all(c[G.row[off]] != c[G.col[off]])
    assert multicolor(poisson((12, 12), format="csr")).max() == 1  # red-black in natural order


def test_setup_leaves_the_callers_matrix_alone():
    A = poisson((10, 10), format="csr")
    A.data[::7] = 0.0  # stored zeros, which the set-up drops from its own copy
    A = sp.csr_matrix(sp.csr_array(A))  # two objects sharing one set of arrays, as SciPy conversions make
    before = (A.indptr.copy(), A.indices.copy(), A.data.copy())
    amg_setup(A, max_coarse=20)
    assert all(np.array_equal(u, v) for u, v in zip(before, (A.indptr, A.indices, A.data)))


def test_packed_levels_are_scipys_products():
    # the set-up packs each level straight into ELL and colour blocks (no clean-up copies, the Krylov matrix sharing
    # the finest operator's slots): every packed product, evaluated here in NumPy, is SciPy's on the host levels
    from icmlx.solvers._amg._levels import sa_levels

    def ell_mv(E, x):
        idx, val = np.asarray(E.idx), np.asarray(E.val, np.float64)
        y = (val * x[idx]).sum(axis=0)
        if hasattr(E, "over_rows"):  # a SplitEllMatrix: the overflow slots of its longest rows
            oi, ov = np.asarray(E.over_idx), np.asarray(E.over_val, np.float64)
            y[np.asarray(E.over_rows)] += (ov * x[oi]).sum(axis=0)
        return y

    rng = np.random.default_rng(5)
    for A, pad_rows in ((poisson((30, 31), format="csr"), True), (aniso(32), False)):
        A = sp.csr_matrix(A)
        s = amg_setup(A, max_coarse=40, relaxation=GaussSeidelRelaxation())  # (its colour blocks are checked)
        H, n, npad = s.hierarchy, A.shape[0], s.hierarchy.sizes[0]
        assert (npad > n) == pad_rows
        x = rng.standard_normal(npad)
        kx = ell_mv(s.A, x)  # A on the real rows, the identity on the padding rows
        tol = 1e-12 if X64 else 1e-5
        assert np.allclose(kx[:n], A @ x[:n], atol=tol * 8) and np.allclose(kx[n:], x[n:], atol=tol)
        levels, _ = sa_levels(A, B=np.ones((n, 1)), node_of=np.arange(n), strength=SymmetricStrength(),
                              max_coarse=40, max_levels=10, improve_steps=4, symmetric=True)
        assert len(levels) == len(H.colors) == len(H.ops)
        for lvl, (M, P, _, d, R, _) in enumerate(levels):
            nl, nc = M.shape[0], P.shape[1]
            y = rng.standard_normal(H.sizes[lvl])
            assert np.allclose(ell_mv(H.ops[lvl], y)[:nl], M @ y[:nl], atol=tol * 8 * abs(M).max())
            z = rng.standard_normal(H.prolong[lvl].shape[1])
            assert np.allclose(ell_mv(H.prolong[lvl], z)[:nl], P @ z[:nc], atol=tol * 8)
            assert np.allclose(ell_mv(H.restrict[lvl], y)[:nc], R @ y[:nl], atol=tol * 8)
            cb = H.colors[lvl]
            rows, real = np.asarray(cb.rows), np.asarray(cb.dinv) != 0
            assert np.array_equal(np.sort(rows[real]), np.arange(nl))  # each row in exactly one colour block
            prod = (np.asarray(cb.val, np.float64) * y[np.asarray(cb.idx)]).sum(axis=1)  # (colours, m)
            assert np.allclose(prod[real], (M @ y[:nl])[rows[real]], atol=tol * 8 * abs(M).max())
            assert np.allclose(np.asarray(cb.dinv, np.float64)[real], 1.0 / d[rows[real]], rtol=tol)


@pytest.mark.x64
@pytest.mark.parametrize("complex_values", [False, True])
def test_split_ell_matches_scipy(complex_values):
    # rows of very unequal length (a few long rows among short ones): the set-up stores a SplitEllMatrix, whose
    # product and diagonal are SciPy's, complex values included
    from icmlx.solvers._amg._build import SplitEllMatrix, _ell_any

    rng = np.random.default_rng(3)
    n = 300
    M = sp.random(n, n, density=0.01, random_state=4, format="lil")
    M.setdiag(1.0 + rng.random(n))
    M[:6, :] = sp.random(6, n, density=0.5, random_state=5).toarray()  # six long rows
    M = sp.csr_matrix(M)
    if complex_values:
        M = M + 1j * sp.csr_matrix((rng.standard_normal(M.nnz), M.indices, M.indptr), shape=M.shape)
    M.sum_duplicates()
    M.eliminate_zeros()
    dtype = jnp.result_type(complex if complex_values else float)
    E = _ell_any(M, 320, 320, dtype)
    assert isinstance(E, SplitEllMatrix)
    x = rng.standard_normal(320) + (1j * rng.standard_normal(320) if complex_values else 0)
    y = np.asarray(E.mv(jnp.asarray(x, dtype)))
    tol = 1e-12 if X64 else 1e-4
    assert np.allclose(y[:n], M @ x[:n], atol=tol * 10) and np.allclose(y[n:], 0)
    assert np.allclose(np.asarray(E.diagonal())[:n], M.diagonal(), atol=tol)
