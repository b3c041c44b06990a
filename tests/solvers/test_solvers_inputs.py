"""What a new user holds goes straight into icmlx.solvers (issue #17): SciPy sparse in every format, BCOO/BCSR,
dense NumPy/JAX and pandas; a smoothed-aggregation hierarchy preconditions CG/GMRES on ``A`` itself; lineax's own
solvers accept a tagged ``SparseMatrix``; clear errors; progress; readable reprs; ``plot_residuals``.

Every number is compared with an independent reference: SciPy float64 residuals ``‖b − A x‖/‖b‖`` and
``scipy.sparse.linalg.spsolve`` solutions, SciPy's own CG iterates, or a closed form.
"""

import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
import pytest

import icmlx
from icmlx.solvers import (
    GRANS,
    GRANSNet,
    MultilevelHierarchy,
    SparseMatrix,
    aggregation_hierarchy,
    bicgstab,
    cg,
    gmres,
    m_matrix_envelope,
    plot_residuals,
    smoothed_aggregation,
    standard_aggregation,
)

sp = pytest.importorskip("scipy.sparse")
spl = pytest.importorskip("scipy.sparse.linalg")

X64 = bool(jax.config.jax_enable_x64)
RTOL = 1e-8 if X64 else 1e-5
FORMATS = ("csr", "csc", "coo", "bsr", "lil", "dok", "dia")


def poisson2d(m: int):
    """5-point Laplacian on an m × m interior grid (SPD M-matrix), float64 CSR."""
    T = sp.diags([-np.ones(m - 1), 2.0 * np.ones(m), -np.ones(m - 1)], [-1, 0, 1])
    return (sp.kron(T, sp.eye(m)) + sp.kron(sp.eye(m), T)).tocsr()


def rotated_anisotropic(m: int, theta: float = np.pi / 6, eps: float = 1e-2):
    r"""9-point finite differences of :math:`-\nabla\cdot(K\nabla u)`, :math:`K = R_\theta\,\mathrm{diag}(1, \epsilon)
    R_\theta^\top`, on an m × m interior grid: SPD (``b² < ac``) but not an M-matrix (positive off-diagonals from
    the mixed derivative), so its M-matrix envelope differs from it."""
    c, s = np.cos(theta), np.sin(theta)
    kxx, kyy, kxy = c * c + eps * s * s, s * s + eps * c * c, (1 - eps) * c * s
    T = sp.diags([-np.ones(m - 1), 2.0 * np.ones(m), -np.ones(m - 1)], [-1, 0, 1])
    C = sp.diags([-np.ones(m - 1), np.ones(m - 1)], [-1, 1])
    eye = sp.eye(m)
    return (kxx * sp.kron(eye, T) + kyy * sp.kron(T, eye) + 0.5 * kxy * sp.kron(C, C)).tocsr()


def relres(A, b, x) -> float:
    """The true relative residual in float64 (SciPy), independent of the solver's own bookkeeping."""
    b = np.asarray(b, np.float64)
    return float(np.linalg.norm(b - A @ np.asarray(x, np.float64)) / np.linalg.norm(b))


def variants(A):
    """``A`` in every SciPy format, as sparray and as spmatrix."""
    out = {}
    for fmt in FORMATS:
        out[f"{fmt}_array"] = getattr(sp, f"{fmt}_array")(A)
        out[f"{fmt}_matrix"] = getattr(sp, f"{fmt}_matrix")(A)
    return out


@pytest.fixture(scope="module")
def A():
    return poisson2d(12)  # n = 144


@pytest.fixture(scope="module")
def b(A):
    return np.random.default_rng(0).standard_normal(A.shape[0])


# -- inputs -----------------------------------------------------------------------------------------------
def test_cg_and_grans_setup_take_every_scipy_format(A, b):
    net = GRANSNet.init(jax.random.key(0), hidden=4, layers=1)
    solver = GRANS(net, rtol=1e-4, max_steps=100, dtype="float64" if X64 else "float32")
    v = np.random.default_rng(1).standard_normal(A.shape[0])
    for name, M in variants(A).items():
        x = cg(M, b)  # the defaults run on the data alone
        assert x.result == icmlx.RESULTS.successful, name
        assert relres(A, b, x.value) <= 1.01 * 1e-5, name
        op = solver.setup(M)  # was: AttributeError: ... no attribute 'n_batch'
        np.testing.assert_allclose(np.asarray(op.mv(jnp.asarray(v, op.A.dtype)), np.float64), A @ v,
                                   rtol=1e-5, atol=1e-5 * np.abs(A @ v).max())


def test_gmres_bicgstab_take_bcoo_bcsr_and_dense(A, b):
    from jax.experimental import sparse as jsparse

    dense = A.toarray()
    inputs = {
        "bcoo": jsparse.BCOO.fromdense(jnp.asarray(dense)),
        "bcsr": jsparse.BCSR.fromdense(jnp.asarray(dense)),
        "numpy": dense,
        "jax": jnp.asarray(dense),
        "sparse_matrix": SparseMatrix.from_scipy(A),
        "int_scipy": sp.csr_array(A.astype(np.int64)),  # integer values become floats
    }
    # the conversion is shared by the three solvers: every input through cg, and gmres/bicgstab on one dense and
    # one sparse input (each compiles its loop once per operator kind)
    runs = [(name, cg) for name in inputs] + [("numpy", gmres), ("bcoo", bicgstab)]
    for name, solve in runs:
        sol = solve(inputs[name], b)
        assert relres(A, b, sol.value) <= 1.01 * 1e-5, (name, solve.__name__)


def test_b_may_be_a_list_an_int_array_or_a_pandas_series(A):
    pd = pytest.importorskip("pandas")
    ref = np.ones(A.shape[0])
    for rhs in (ref.tolist(), np.ones(A.shape[0], np.int64), pd.Series(ref)):
        assert relres(A, ref, cg(A, rhs).value) <= 1.01e-5


def test_setup_routines_take_any_matrix_type(A):
    from jax.experimental import sparse as jsparse

    small = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, -1.0], [0.0, -1.0, 2.0]])
    # closed form of the envelope: off-diagonals -(|a_ij| + |a_ji|)/2, diagonal max(a_ii, Σ_j |ã_ij|)
    expected = np.array([[2.0, -1.0, 0.0], [-1.0, 3.0, -1.0], [0.0, -1.0, 2.0]])
    for M in (small, sp.lil_array(small), jsparse.BCOO.fromdense(jnp.asarray(small)), SparseMatrix.from_dense(small)):
        np.testing.assert_array_equal(m_matrix_envelope(M).toarray(), expected)
    # a chain of 100 nodes: the pattern given as a matrix gives the aggregates of the COO pattern
    i = np.arange(99)
    rows, cols = np.r_[i, i + 1], np.r_[i + 1, i]
    chain = sp.coo_array((np.ones(198), (rows, cols)), shape=(100, 100))
    for M in (chain, chain.todok(), chain.toarray()):
        got = aggregation_hierarchy(M)
        want = aggregation_hierarchy(rows, cols, 100)
        assert [a.tolist() for a in got] == [a.tolist() for a in want]
        np.testing.assert_array_equal(standard_aggregation(M), standard_aggregation(rows, cols, 100))
    np.testing.assert_array_equal(standard_aggregation(SparseMatrix.from_scipy(A)), standard_aggregation(A))
    assert isinstance(smoothed_aggregation(sp.dia_matrix(A), max_coarse=20), MultilevelHierarchy)


# -- errors -----------------------------------------------------------------------------------------------
def test_errors_say_what_was_wrong_and_what_to_do(A, b):
    rect = sp.random(20, 30, density=0.2, format="csr", random_state=0)
    for call in (lambda: cg(rect, np.ones(30)), lambda: gmres(rect.toarray(), np.ones(30)),
                 lambda: smoothed_aggregation(rect), lambda: GRANS.pretrained(dtype="float32").setup(rect)):
        with pytest.raises(ValueError, match=r"A must be a square n × n matrix, got shape \(20, 30\)") as err:
            call()
        assert len(str(err.value).splitlines()) == 2
    with pytest.raises(ValueError, match=r"b has length 143 but A is 144 × 144\.\nPass a right-hand side") as err:
        cg(A, b[:-1])
    with pytest.raises(ValueError, match="b must be 1-D.*ravel"):
        cg(A, b[:, None])
    bad = A.copy()
    bad.data[3] = np.nan
    with pytest.raises(ValueError, match="A has NaN or Inf entries"):
        cg(bad, b)
    with pytest.raises(ValueError, match="A has NaN or Inf entries"):
        smoothed_aggregation(bad)
    with pytest.raises(ValueError, match="b has NaN or Inf entries"):
        gmres(A, np.where(np.arange(b.size) == 5, np.inf, b))
    with pytest.raises(TypeError, match="cannot use a builtins.str as a linear operator"):
        cg("A", b)
    with pytest.raises(ValueError, match="unknown preconditioner='ilu'"):
        cg(A, b, preconditioner="ilu")
    with pytest.raises(TypeError, match="'jacobi' needs A as a matrix"):
        cg(lambda v: A @ v, b, preconditioner="jacobi")
    H = smoothed_aggregation(poisson2d(10), max_coarse=20)
    with pytest.raises(ValueError, match="built for a 100 × 100 matrix, but the vectors have length 144"):
        cg(A, b, preconditioner=H)
    with pytest.raises(TypeError, match="either a matrix alone"):
        aggregation_hierarchy(np.arange(3), np.arange(3))


def test_traced_bad_values_fail_at_run_time_concrete_ones_on_the_host(A, b):
    S = SparseMatrix.from_scipy(A)
    bn = jnp.asarray(b).at[0].set(jnp.nan)
    with pytest.raises(RuntimeError, match="b has NaN or Inf"):  # inside the user's jit: eqx.error_if
        jax.block_until_ready(jax.jit(lambda S, b: cg(S, b, throw=False).value)(S, bn))
    with pytest.raises(ValueError, match="b has NaN or Inf"):  # concrete input: checked on the host at once
        cg(S, bn)
    # the compiled CG loop itself holds no host callback (values are checked before it; progress is off)
    from icmlx.solvers._krylov._methods import _identity, cg_loop

    bj = jnp.asarray(b, S.dtype)
    one = jnp.ones((), S.dtype)
    assert "callback" not in cg_loop.lower(S.mv, _identity, bj, bj, one, one, 50, False).as_text()
    assert "callback" in cg_loop.lower(S.mv, _identity, bj, bj, one, one, 50, True).as_text()


# -- preconditioning with a hierarchy ----------------------------------------------------------------------
@pytest.mark.parametrize("method", ["cg", "gmres"])
def test_hierarchy_preconditions_krylov_on_A_itself(method):
    """Rotated anisotropic diffusion: the hierarchy is built on the M-matrix envelope Ã ≠ A; the Krylov iteration
    must still solve A x = b (the old docstring pattern iterated with Ã and reported success at relres ~0.6)."""
    A = rotated_anisotropic(24)  # n = 576
    b = np.random.default_rng(3).standard_normal(A.shape[0])
    H = smoothed_aggregation(A)
    assert abs(H.ops[0].diagonal()[: A.shape[0]].sum() - A.diagonal().sum()) > 1e-3  # Ã differs from A
    rtol = 1e-4
    if method == "cg":
        sol = cg(A, b, preconditioner=H, rtol=rtol, max_steps=300)
        plain = cg(A, b, rtol=rtol, max_steps=2000)
    else:
        sol = gmres(A, b, preconditioner=H.as_preconditioner(), rtol=rtol, restart=20, max_steps=400)
        plain = gmres(A, b, rtol=rtol, restart=20, max_steps=4000, throw=False)
    assert sol.result == icmlx.RESULTS.successful
    # SciPy float64 residual of A itself; the 5% covers the float32 evaluation of b − A x at convergence
    assert relres(A, b, sol.value) <= 1.05 * rtol
    ref = spl.spsolve(A.tocsc(), b)
    assert np.linalg.norm(np.asarray(sol.value, np.float64) - ref) <= 0.05 * np.linalg.norm(ref)
    assert int(sol.num_steps) < int(plain.num_steps)


def test_successful_means_the_true_residual_met_the_tolerance():
    """Rounding makes CG's recursive residual drift from the true one (float32: success was reported at a true
    relative residual of 1.1e-5 for rtol=1e-5 here); residual replacement makes ``successful`` honest."""
    A = rotated_anisotropic(40)
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    for solve in (cg, bicgstab):
        sol = solve(A, b, rtol=1e-5, max_steps=3000)
        assert sol.result == icmlx.RESULTS.successful
        assert relres(A, b, sol.value) <= 1.05e-5, solve.__name__
        np.testing.assert_allclose(float(sol.residual_norm) / np.linalg.norm(b), relres(A, b, sol.value), rtol=0.05)


@pytest.mark.skipif(X64, reason="the float32 floor of the true residual is what is tested")
def test_unreachable_tolerance_stops_with_accuracy_limit_not_at_max_steps():
    """n = 10,000 Poisson in float32: the true relative residual floors near 3e-5 (SciPy float64 check), so
    rtol=1e-5 cannot be met; the solve stops within a few replacements instead of running 10,000 steps."""
    A = poisson2d(100)
    b = np.ones(A.shape[0])
    H = smoothed_aggregation(A)
    sol = cg(A, b, preconditioner=H, rtol=1e-5, throw=False)
    assert sol.result == icmlx.RESULTS.accuracy_limit and int(sol.num_steps) < 100
    assert relres(A, b, sol.value) > 1e-5  # it was right not to report success
    with pytest.raises(RuntimeError, match="jax_enable_x64"):  # the message says what to do
        cg(A, b, preconditioner=H, rtol=1e-5)
    ok = cg(A, b, preconditioner=H, rtol=2e-4)
    assert relres(A, b, ok.value) <= 2e-4 * 1.05


# -- lineax interoperability -------------------------------------------------------------------------------
def test_tagged_sparse_matrix_works_with_lineax_solvers(A, b):
    op = SparseMatrix.from_scipy(A, tags=lx.positive_semidefinite_tag)
    assert lx.is_positive_semidefinite(op) and lx.is_symmetric(op) and not lx.is_diagonal(op)
    assert lx.is_positive_semidefinite(op.transpose())
    ref = spl.spsolve(A.tocsc(), b)
    sol = lx.linear_solve(op, jnp.asarray(b, op.dtype), lx.CG(rtol=RTOL, atol=RTOL))
    np.testing.assert_allclose(np.asarray(sol.value, np.float64), ref, rtol=0, atol=1e-3 * np.abs(ref).max())
    untagged = SparseMatrix.from_scipy(A)
    assert not lx.is_symmetric(untagged)
    with pytest.raises(ValueError, match="positive or negative definite"):
        lx.linear_solve(untagged, jnp.asarray(b, op.dtype), lx.CG(rtol=RTOL, atol=RTOL))
    sym = untagged.with_tags(lx.symmetric_tag)
    assert lx.is_symmetric(sym) and not lx.is_positive_semidefinite(sym)


# -- progress ----------------------------------------------------------------------------------------------
def test_progress_true_reports_from_inside_the_loop_default_is_silent(A, b, capfd):
    cg(A, b, rtol=1e-6)
    jax.effects_barrier()
    assert "cg:" not in capfd.readouterr().err
    sol = cg(A, b, rtol=1e-6, progress=True)
    jax.effects_barrier()
    err = capfd.readouterr().err
    assert "cg: step 10/10000" in err and "relative_residual=" in err
    assert err.count("cg: step") == int(sol.num_steps) // 10


def test_grans_solve_program_holds_a_callback_only_with_progress_true(A, b, capfd):
    solver = GRANS(GRANSNet.init(jax.random.key(0), hidden=4, layers=1), rtol=1e-4, max_steps=40,
                   dtype="float64" if X64 else "float32")
    op = solver.setup(A)
    sol = solver.solve(op, b, progress=True)
    jax.effects_barrier()
    err = capfd.readouterr().err
    assert err.count("G-RANS: step") == int(sol.num_steps) > 0
    from icmlx.solvers._grans._solver import _solve

    bj = jnp.asarray(b, op.A.dtype)
    assert "callback" not in _solve.lower(solver, op, bj, None, False).as_text()
    assert "callback" in _solve.lower(solver, op, bj, None, True).as_text()


# -- results that go on ------------------------------------------------------------------------------------
def test_residual_history_matches_scipy_cg_iterates(A, b):
    """CG's recorded ‖r_k‖/‖b‖ against the true residuals of SciPy's own CG iterates (float64)."""
    ref = [1.0]
    spl.cg(A, b, rtol=1e-10, maxiter=12, callback=lambda xk: ref.append(relres(A, b, xk)))
    sol = cg(A, b, rtol=1e-10, max_steps=12, throw=False)
    hist = np.asarray(sol.residual_history, np.float64)
    assert hist.shape == (13,) and np.all(np.isfinite(hist))
    np.testing.assert_allclose(hist, np.asarray(ref), rtol=1e-3 if not X64 else 1e-8)
    # GMRES: one entry per Arnoldi step, the last one the final true residual
    g = gmres(A, b, rtol=1e-6, restart=5, throw=False)
    gh = np.asarray(g.residual_history, np.float64)
    k = int(g.num_steps)
    assert np.all(np.isfinite(gh[: k + 1])) and np.all(np.isnan(gh[k + 1:]))
    assert gh[k] == pytest.approx(relres(A, b, g.value), rel=1e-2, abs=1e-7)


def test_plot_residuals_draws_the_history():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    A = poisson2d(8)
    b = np.ones(64)
    sol = cg(A, b, rtol=1e-6)
    ax = plot_residuals(sol, rtol=1e-6)
    assert len(ax.lines) == 2
    x, y = ax.lines[0].get_data()
    k = int(sol.num_steps)
    np.testing.assert_array_equal(x, np.arange(k + 1))
    np.testing.assert_allclose(y, np.asarray(sol.residual_history[: k + 1], np.float64))
    assert y[-1] <= 1e-6 < y[0] and ax.get_yscale() == "log"
    g = gmres(A, b, rtol=1e-6, restart=4)
    fig, ax2 = plt.subplots()
    assert plot_residuals({"cg": sol, "gmres": g}, ax=ax2) is ax2
    assert [line.get_label() for line in ax2.lines] == ["cg", "gmres"]
    gx, gy = ax2.lines[1].get_data()
    assert gx[-1] == int(g.num_steps) and gy[-1] == pytest.approx(relres(A, b, g.value), rel=1e-2, abs=1e-7)
    with pytest.raises(ValueError, match="residual_history"):
        plot_residuals(SparseMatrix.from_scipy(A))
    plt.close("all")


def test_reprs_are_short_and_say_what_matters(A):
    S = SparseMatrix.from_scipy(A)
    assert repr(S) == f"SparseMatrix(shape=(144, 144), nnz={A.nnz}, dtype={jnp.dtype(S.dtype).name})"
    H = smoothed_aggregation(A, max_coarse=20)
    assert repr(H).startswith(f"MultilevelHierarchy(n=144, num_levels={H.num_levels}, sizes={H.sizes}")
    assert "net=None" in repr(GRANS.pretrained())  # the default runs no network (see the GRANS docstring)
    g = GRANS.pretrained(network=True, dtype="float32")
    text = repr(g)
    assert len(text) < 250 and "GRANSNet(hidden=16, layers=3, channels=2)" in text and "f32[" not in text
    op = g.setup(A)
    assert repr(op).startswith("GRANSOperator(n=144, padded_size=") and len(repr(op)) < 250


@pytest.mark.slow  # compile-dominated (the training step and evaluation programs), ~1-4 min on a busy 2-core box
def test_train_grans_progress_bar_and_repr(capfd):
    from icmlx.solvers import train_grans
    from icmlx.solvers.fem import make_problem, unit_square_mesh

    solver = GRANS(GRANSNet.init(jax.random.key(1), hidden=4, layers=1), dtype="float64" if X64 else "float32")
    pb = make_problem(jax.random.key(21), unit_square_mesh(2), "poisson")  # n = 49
    res = train_grans(jax.random.key(2), [solver.setup(pb.A)], [pb.b], net=solver.net, stages=(0,),
                      steps_per_stage=3, batch=2, states_per_operator=2, progress=True)
    err = capfd.readouterr().err
    assert "train_grans: 100%" in err and "3/3" in err and "loss=" in err
    text = repr(res)
    assert text.startswith("TrainResult(net=GRANSNet(hidden=4, layers=1, channels=2)") and "losses=[" in text
    assert len(text) < 300

