"""Implicit differentiation of every solve against the adjoint formula computed with SciPy.

For $L(x) = w^\\top x$ with $A x = b$: $\\partial L/\\partial b = \\lambda$ with $A^\\top \\lambda = w$ and
$\\partial L/\\partial A_{rc} = -\\lambda_r x_c$; $\\lambda$ and $x$ come from ``scipy.sparse.linalg.spsolve`` in
float64. Forward mode is checked against the same formula contracted with a tangent.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx.solvers import GRANS, SparseMatrix, amg_setup, bicgstab, cg, gmres, solve

sp = pytest.importorskip("scipy.sparse")
sla = pytest.importorskip("scipy.sparse.linalg")

X64 = bool(jax.config.jax_enable_x64)
SOLVE_RTOL = 1e-12 if X64 else 1e-5
TOL = 1e-6 if X64 else 5e-3  # relative error of a gradient (float32: the solve tolerance times κ)
M = 10  # grid side: n = 100


def _diffusion(nonsymmetric: bool) -> sp.csr_matrix:
    """$-\\nabla\\cdot(k \\nabla u)$ on an M × M grid with a variable coefficient ``k`` on the edges (SPD), plus an
    upwind advection term when ``nonsymmetric``."""
    rng = np.random.default_rng(3)
    n = M * M
    idx = np.arange(n).reshape(M, M)
    rows, cols, vals = [], [], []
    diag = np.full(n, 0.5)
    for a, b in [(idx[:, :-1], idx[:, 1:]), (idx[:-1, :], idx[1:, :])]:
        a, b = a.ravel(), b.ravel()
        k = 1.0 + 9.0 * rng.random(a.size)
        rows += [a, b]
        cols += [b, a]
        vals += [-k, -k]
        np.add.at(diag, a, k)
        np.add.at(diag, b, k)
    A = sp.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))
    A = (A + sp.diags(diag)).tocsr()
    if nonsymmetric:
        c = 3.0
        A = (A + c * (sp.eye(n) - sp.eye(n, k=-1))).tocsr()
    A.sort_indices()
    return A


@pytest.fixture(scope="module")
def systems():
    rng = np.random.default_rng(0)
    out = {}
    for kind in ("spd", "nonsymmetric"):
        A = _diffusion(kind == "nonsymmetric").tocoo()
        n = A.shape[0]
        b = rng.standard_normal(n)
        w = rng.standard_normal(n)
        x = sla.spsolve(A.tocsc(), b)
        lam = sla.spsolve(A.T.tocsc(), w)
        out[kind] = dict(A=A, b=b, w=w, x=x, lam=lam, n=n)
    return out


def _rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def _f():
    return jnp.result_type(float)


def _krylov_loss(method, S0):
    def loss(vals, b, w):
        S = SparseMatrix(S0.rows, S0.cols, vals, S0.shape)
        return jnp.vdot(w, method(S, b, rtol=SOLVE_RTOL, max_steps=2000).value)

    return loss


@pytest.mark.x64
@pytest.mark.parametrize("method,kind", [(cg, "spd"), (gmres, "spd"), (bicgstab, "spd"), (gmres, "nonsymmetric"),
                                         (bicgstab, "nonsymmetric")])
def test_krylov_grad_jvp_match_adjoint(systems, method, kind):
    s = systems[kind]
    A = s["A"]
    S0 = SparseMatrix(jnp.asarray(A.row, jnp.int32), jnp.asarray(A.col, jnp.int32), jnp.asarray(A.data, _f()),
                      A.shape)
    loss = _krylov_loss(method, S0)
    vals, b, w = S0.vals, jnp.asarray(s["b"], _f()), jnp.asarray(s["w"], _f())
    g_vals, g_b = jax.grad(loss, argnums=(0, 1))(vals, b, w)
    ref_vals = -s["lam"][A.row] * s["x"][A.col]
    assert _rel(g_b, s["lam"]) < TOL
    assert _rel(g_vals, ref_vals) < TOL
    # forward mode: the directional derivative along (dv, db)
    rng = np.random.default_rng(1)
    dv, db = rng.standard_normal(vals.shape), rng.standard_normal(b.shape)
    _, t = jax.jvp(lambda v, bb: loss(v, bb, w), (vals, b), (jnp.asarray(dv, _f()), jnp.asarray(db, _f())))
    ref_t = ref_vals @ dv + s["lam"] @ db
    assert abs(float(t) - ref_t) / abs(ref_t) < TOL


@pytest.mark.x64
def test_krylov_grad_jit_compiles_once_and_vmaps(systems):
    s = systems["nonsymmetric"]
    A = s["A"]
    S0 = SparseMatrix(jnp.asarray(A.row, jnp.int32), jnp.asarray(A.col, jnp.int32), jnp.asarray(A.data, _f()),
                      A.shape)
    loss = _krylov_loss(gmres, S0)
    traces = []

    @jax.jit
    def grads(vals, b, w):
        traces.append(1)
        return jax.grad(loss, argnums=(0, 1))(vals, b, w)

    b, w = jnp.asarray(s["b"], _f()), jnp.asarray(s["w"], _f())
    for scale in (1.0, 2.0, 0.5):
        g_vals, g_b = grads(S0.vals * scale, b, w)
        # A → cA: x → x / c, λ → λ / c
        assert _rel(g_b, s["lam"] / scale) < TOL
        assert _rel(g_vals, -s["lam"][A.row] * s["x"][A.col] / scale**2) < TOL
    assert len(traces) == 1
    # vmap of grad over a batch of weights w (the cotangent of x)
    W = jnp.stack([w, 2 * w, -w])
    G = jax.vmap(lambda w: jax.grad(loss, argnums=1)(S0.vals, b, w))(W)
    for k, c in enumerate((1.0, 2.0, -1.0)):
        assert _rel(G[k], c * s["lam"]) < TOL


@pytest.mark.x64
def test_failed_adjoint_is_reported(systems):
    s = systems["spd"]
    A = s["A"]
    S = SparseMatrix(jnp.asarray(A.row, jnp.int32), jnp.asarray(A.col, jnp.int32), jnp.asarray(A.data, _f()),
                     A.shape)
    x_exact = jnp.asarray(s["x"], _f())
    b = jnp.asarray(s["b"], _f())

    def loss(b, throw):
        # x0 solves the forward system already (0 steps); the adjoint gets 1 step, too few
        sol = cg(S, b, x0=x_exact, rtol=1e-3, max_steps=1, throw=throw)
        return jnp.vdot(jnp.asarray(s["w"], _f()), sol.value)

    with pytest.raises(Exception, match="max_steps_reached"):
        jax.block_until_ready(jax.grad(loss)(b, True))
    assert bool(jnp.all(jnp.isnan(jax.grad(loss)(b, False))))


@pytest.mark.x64
@pytest.mark.parametrize("kind", ["spd", pytest.param("nonsymmetric", marks=pytest.mark.x64_only)])
def test_amg_solver_update_grad_jvp_match_adjoint(systems, kind):
    s = systems[kind]
    A = s["A"].tocsr()
    solver = amg_setup(A, reuse_pattern=True, max_coarse=20, method="cg" if kind == "spd" else "gmres")
    rows, cols = np.asarray(solver.pattern.rows), np.asarray(solver.pattern.cols)
    values = solver.values_of(A)
    b, w = jnp.asarray(s["b"], values.dtype), jnp.asarray(s["w"], values.dtype)

    def loss(v, b):
        return jnp.vdot(w, solver.update(v).solve(b, rtol=SOLVE_RTOL).value)

    g_vals, g_b = jax.jit(jax.grad(loss, argnums=(0, 1)))(values, b)
    ref_vals = -s["lam"][rows] * s["x"][cols]
    assert _rel(g_b, s["lam"]) < TOL
    assert _rel(g_vals, ref_vals) < TOL
    dv = np.random.default_rng(2).standard_normal(values.shape)
    _, t = jax.jvp(lambda v: loss(v, b), (values,), (jnp.asarray(dv, values.dtype),))
    assert abs(float(t) - ref_vals @ dv) / abs(ref_vals @ dv) < TOL


@pytest.mark.x64
@pytest.mark.parametrize("method", ["auto", pytest.param("cg", marks=pytest.mark.x64_only)])
def test_solve_grad_in_traced_sparse_matrix(systems, method):
    s = systems["spd"]
    A = s["A"]
    rows, cols = jnp.asarray(A.row, jnp.int32), jnp.asarray(A.col, jnp.int32)

    def loss(vals, b):
        S = SparseMatrix(rows, cols, vals, A.shape)
        return jnp.vdot(jnp.asarray(s["w"], _f()), solve(S, b, rtol=SOLVE_RTOL, method=method, max_coarse=20).value)

    traces = []

    @jax.jit
    def grads(vals, b):
        traces.append(1)
        return jax.grad(loss, argnums=(0, 1))(vals, b)

    b = jnp.asarray(s["b"], _f())
    g_vals, g_b = grads(jnp.asarray(A.data, _f()), b)
    grads(jnp.asarray(A.data, _f()) * 2, b)
    assert len(traces) == 1
    assert _rel(g_b, s["lam"]) < TOL
    assert _rel(g_vals, -s["lam"][A.row] * s["x"][A.col]) < TOL
    _, t = jax.jvp(lambda bb: loss(jnp.asarray(A.data, _f()), bb), (b,), (jnp.ones_like(b),))
    assert abs(float(t) - s["lam"].sum()) / abs(s["lam"].sum()) < TOL


def test_solve_traced_indices_is_a_clear_error(systems):
    A = systems["spd"]["A"]

    @jax.jit
    def f(rows, vals):
        return solve(SparseMatrix(rows, rows, vals, A.shape), jnp.ones(A.shape[0], vals.dtype)).value

    with pytest.raises(TypeError, match="rows/cols"):
        f(jnp.asarray(A.row, jnp.int32), jnp.asarray(A.data, _f()))


@pytest.mark.x64
def test_grans_grad_in_b_and_operator_values(systems):
    s = systems["spd"]
    A = s["A"].tocsr()
    g = GRANS(dtype="float64" if X64 else "float32", rtol=SOLVE_RTOL)
    op = g.setup(A)
    b, w = jnp.asarray(s["b"], _f()), jnp.asarray(s["w"], _f())

    def loss(op, b):
        return jnp.vdot(w, g.solve(op, b).value)

    g_op, g_b = eqx.filter_grad(lambda ob: loss(*ob))((op, b))
    assert _rel(g_b, s["lam"]) < TOL
    # the values of the ELL matrix the iteration runs on: slot (k, i) holds A[i, idx[k, i]]
    idx = np.asarray(op.ell.idx)
    n = s["n"]
    rowsk = np.broadcast_to(np.arange(idx.shape[1]), idx.shape)
    real = (rowsk < n) & (idx < n) & (np.asarray(op.ell.val) != 0)
    got = np.asarray(g_op.ell.val)[real]
    ref = -s["lam"][rowsk[real]] * s["x"][idx[real]]
    assert _rel(got, ref) < TOL
    _, t = jax.jvp(lambda bb: loss(op, bb), (b,), (jnp.ones_like(b),))
    assert abs(float(t) - s["lam"].sum()) / abs(s["lam"].sum()) < TOL


# -- lineax composition ---------------------------------------------------------------------------------------------
lx = pytest.importorskip("lineax")


@pytest.mark.x64
@pytest.mark.parametrize("kind", ["spd", pytest.param("nonsymmetric", marks=pytest.mark.x64_only)])
def test_amg_solver_is_a_lineax_solver(systems, kind):
    s = systems[kind]
    A = s["A"].tocsr()
    solver = amg_setup(A, max_coarse=20)
    op = SparseMatrix.from_scipy(A, dtype=_f())
    b = jnp.asarray(s["b"], _f())
    sol = lx.linear_solve(op, b, solver, options={"rtol": SOLVE_RTOL})
    assert _rel(sol.value, s["x"]) < TOL
    # lineax's own differentiation goes through the solver's transpose
    w = jnp.asarray(s["w"], _f())
    g = jax.grad(lambda v: jnp.vdot(w, lx.linear_solve(SparseMatrix(op.rows, op.cols, v, op.shape), b, solver,
                                                       options={"rtol": SOLVE_RTOL}).value))(op.vals)
    assert _rel(g, -s["lam"][np.asarray(op.rows)] * s["x"][np.asarray(op.cols)]) < TOL


@pytest.mark.x64
def test_as_preconditioner_in_lineax_cg_and_gmres(systems):
    s = systems["spd"]
    A = s["A"].tocsr()
    solver = amg_setup(A, max_coarse=20)
    assert solver.method == "cg"
    H = solver.as_preconditioner()
    op = SparseMatrix.from_scipy(A, dtype=_f()).with_tags(lx.positive_semidefinite_tag)
    b = jnp.asarray(s["b"], _f())
    rtol = 1e-8 if X64 else 1e-4
    sol = lx.linear_solve(op, b, lx.CG(rtol=rtol, atol=0.0), options={"preconditioner": H})
    assert _rel(sol.value, s["x"]) < (1e-6 if X64 else 1e-2)
    # the same preconditioned CG: within the steps icmlx's cg takes to meet rtol, lx.CG meets it too
    k = int(cg(A, b, rtol=rtol, preconditioner=solver.hierarchy).stats["num_steps"])
    capped = lx.linear_solve(op, b, lx.CG(rtol=1e-30, atol=0.0, max_steps=k), options={"preconditioner": H},
                             throw=False)
    x = np.asarray(capped.value, np.float64)
    assert np.linalg.norm(s["b"] - A @ x) <= 1.01 * rtol * np.linalg.norm(s["b"])
    assert int(capped.stats["num_steps"]) <= k
    # the solver itself as cg's preconditioner: the same cycle, the same iteration
    assert int(cg(A, b, rtol=rtol, preconditioner=solver).stats["num_steps"]) == k
    # GMRES on the nonsymmetric system with its set-up's cycle
    t = systems["nonsymmetric"]
    An = t["A"].tocsr()
    Hn = amg_setup(An, max_coarse=20).as_preconditioner()
    soln = lx.linear_solve(SparseMatrix.from_scipy(An, dtype=_f()), jnp.asarray(t["b"], _f()),
                           lx.GMRES(rtol=rtol, atol=0.0), options={"preconditioner": Hn})
    assert _rel(soln.value, t["x"]) < (1e-6 if X64 else 1e-2)
