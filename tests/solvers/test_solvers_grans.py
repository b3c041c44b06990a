"""G-RANS: exact projection, equivariance, monotone safeguard, lineax interface, errors, training.

Every residual used in an assertion is recomputed independently in float64 with SciPy from the returned
``x`` (never taken from the solver), except where the solver's own history is the object under test.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
import pytest

from _ell_host import ell_dense
from icmlx import RESULTS
from icmlx.solvers import (
    GRANS,
    ChebyshevSmoother,
    FlexibleGCR,
    GRANSNet,
    MultilevelSmoother,
    SparseMatrix,
    ThreeTermStep,
    grans_loss,
    train_grans,
)
from icmlx.solvers._grans._outer import _gcr_update
from icmlx.solvers._grans._precondition import _coarse
from icmlx.solvers._grans._train import _initial_states
from icmlx.solvers.fem import make_problem, unit_square_mesh

sp = pytest.importorskip("scipy.sparse")

X64 = bool(jax.config.jax_enable_x64)
DT = "float64" if X64 else "float32"
# float32 x/r cannot reach 1e-5 reliably (rounding the exact solution to fp32 already costs ~1e-6..1e-5)
RTOL = 1e-6 if X64 else 1e-4
# the iteration's mechanics (projection, outer steps, safeguard) are tested with the polynomial smoother: at the
# small sizes used here the default V-cycle has a single level (a dense solve) and would converge in one step
CHEB = ChebyshevSmoother()


def relres(pb, x):
    A = pb.A.to_scipy().astype(np.float64)
    b = np.asarray(pb.b, np.float64)
    return np.linalg.norm(b - A @ np.asarray(x, np.float64)) / np.linalg.norm(b)


@pytest.fixture(scope="module")
def mesh():
    return unit_square_mesh(3)  # n = 225


@pytest.fixture(scope="module")
def net():
    return GRANSNet.init(jax.random.key(0), hidden=8, layers=2, head_scale=0.5)


@pytest.fixture(scope="module")
def poisson(mesh):
    return make_problem(jax.random.key(11), mesh, "poisson")


@pytest.fixture(scope="module")
def helmholtz(mesh):
    return make_problem(jax.random.key(12), mesh, "helmholtz")


def _dense_V(op, w):
    V = np.zeros((op.padded_size, op.col_used.shape[0]))
    ci = np.asarray(op.colidx)
    for q in range(ci.shape[1]):
        np.add.at(V, (np.arange(op.padded_size), ci[:, q]), np.asarray(w[:, q], np.float64))
    return V[: op.n][:, np.asarray(op.col_used)]


@pytest.mark.x64
@pytest.mark.parametrize("which", ["poisson", "helmholtz"])
def test_projection_is_exact(which, net, poisson, helmholtz):
    """Galerkin: Vᵀ(r − A e) = 0 (SPD); least squares: (AV)ᵀ(r − A e) = 0; e ∈ span V."""
    pb = {"poisson": poisson, "helmholtz": helmholtz}[which]
    solver = GRANS(net, smoother=CHEB, dtype=DT)
    op = solver.setup(pb.A)
    assert op.spd_like == (which == "poisson")
    dt = op.A.dtype
    r = jnp.zeros(op.padded_size, dt).at[: op.n].set(jnp.asarray(pb.b, dt))
    w = net(op, r.astype(jnp.float32) / jnp.linalg.norm(r).astype(jnp.float32)).astype(dt)
    e, Ae = _coarse(op, w, r, op.spd_like)
    V = _dense_V(op, w)
    A = pb.A.to_scipy().astype(np.float64)
    rn = np.asarray(pb.b, np.float64) - A @ np.asarray(e[: op.n], np.float64)
    W = V if op.spd_like else A @ V
    # relative orthogonality; the projection adds a 1e4*eps ridge (1e-12 in f64, 1e-3 in f32), times
    # the conditioning of the small Gram matrix
    tol = 1e-8 if X64 else 3e-2
    assert np.abs(W.T @ rn).max() <= tol * np.abs(W.T @ np.asarray(pb.b, np.float64)).max()
    # A e from the compressed rows equals the matrix product (independent scipy matvec)
    np.testing.assert_allclose(np.asarray(Ae[: op.n]), A @ np.asarray(e[: op.n], np.float64),
                               rtol=1e-6, atol=(1e-10 if X64 else 1e-4) * np.abs(A @ np.asarray(e[: op.n])).max())
    # e lies in span V: least-squares fit of e by V is exact
    coef = np.linalg.lstsq(V, np.asarray(e[: op.n], np.float64), rcond=None)[0]
    assert np.linalg.norm(V @ coef - np.asarray(e[: op.n])) <= 1e-6 * np.linalg.norm(np.asarray(e)) + 1e-30


@pytest.mark.x64
def test_scaling_equivariance(net, poisson):
    """Scaling A by 2^k or b by 2^j scales x exactly; a non-dyadic factor up to float32 net rounding."""
    solver = GRANS(net, rtol=RTOL, max_steps=8, smoother=CHEB, dtype=DT)
    A = poisson.A
    x = solver.solve(solver.setup(A), poisson.b, throw=False).value  # 8 steps: not converged, compared
    A4 = SparseMatrix(A.rows, A.cols, A.vals * 4.0, A.shape)
    x4 = solver.solve(solver.setup(A4), poisson.b * 0.5, throw=False).value  # x -> x * 0.5 / 4
    tol = 1e-12 if X64 else 1e-6
    np.testing.assert_allclose(np.asarray(x4) * 8.0, np.asarray(x), rtol=tol, atol=tol * float(jnp.abs(x).max()))
    A17 = SparseMatrix(A.rows, A.cols, A.vals * 1.7, A.shape)
    x17 = solver.solve(solver.setup(A17), poisson.b, throw=False).value
    np.testing.assert_allclose(np.asarray(x17) * 1.7, np.asarray(x), rtol=1e-3,
                               atol=1e-3 * float(jnp.abs(x).max()))


@pytest.mark.x64
def test_random_weights_monotone_on_helmholtz(helmholtz):
    """A random (untrained, large-head) network: the true residual never increases."""
    rnet = GRANSNet.init(jax.random.key(5), hidden=8, layers=2, head_scale=3.0)
    solver = GRANS(rnet, rtol=1e-12, max_steps=25, stall_patience=30, smoother=CHEB, dtype=DT)
    op = solver.setup(helmholtz.A)
    sol = solver.solve(op, helmholtz.b, throw=False)  # rtol=1e-12 is out of reach: inspect the history
    h = np.asarray(sol.residual_history)[: int(sol.num_steps) + 1]
    assert np.all(np.diff(h) <= 1e-12)
    assert h[-1] < 0.5 * h[0]  # and it makes progress
    assert abs(relres(helmholtz, sol.value) - h[-1]) <= 1e-4 * h[-1] + (1e-12 if X64 else 1e-6)
    # chained one-step solves, each residual recomputed with scipy: non-increasing
    one = GRANS(rnet, rtol=1e-12, max_steps=1, smoother=CHEB, dtype=DT)
    x = jnp.zeros_like(helmholtz.b)
    res = [relres(helmholtz, x)]
    for _ in range(5):  # host-side test driver
        x = one.solve(op, helmholtz.b, x0=x, throw=False).value
        res.append(relres(helmholtz, x))
    assert np.all(np.diff(res) <= 1e-6 * res[0])


def test_gcr_update_is_minimal_residual():
    """The flexible-GCR step is the least-squares fit of r by A times the window (NumPy lstsq): the span of
    all candidates while nothing was dropped, the previous window plus the new directions after truncation."""
    rng = np.random.default_rng(0)
    dt = jnp.float64 if X64 else jnp.float32
    tol = 1e-9 if X64 else 2e-3  # well-conditioned 40x8 problem; f32 orthogonalisation error ~1e-6 * cond
    n = 40
    A = rng.standard_normal((n, n)) + n * np.eye(n)
    U = rng.standard_normal((n, 8))  # 4 rounds of 2 candidates
    r = rng.standard_normal(n)
    upd = jax.jit(_gcr_update)  # one compile per window size instead of ~100 eager dispatches per call
    for m in (8, 6):  # full memory, then truncated (the oldest 2 directions drop out)
        Z = jnp.zeros((m, n), dt)
        AZ, ptr = Z, jnp.array(0, jnp.int32)
        for k in range(4):  # host-side test driver
            cands = [(jnp.asarray(U[:, j], dt), jnp.asarray(A @ U[:, j], dt)) for j in (2 * k, 2 * k + 1)]
            Zprev = np.asarray(Z, np.float64)
            dx, Z, AZ, ptr = upd(cands, jnp.asarray(r, dt), Z, AZ, ptr)
        # the last step minimises over the previous window plus the two new directions
        W = U if m == 8 else np.concatenate([Zprev, np.asarray(Z, np.float64)[[0, 1]]]).T
        np.testing.assert_allclose(A @ np.asarray(Z, np.float64).T, np.asarray(AZ, np.float64).T,
                                   atol=tol * np.abs(AZ).max())  # stored A-images are A times the directions
        np.testing.assert_allclose(np.asarray(AZ @ AZ.T, np.float64), np.eye(m), atol=tol)
        ref = W @ np.linalg.lstsq(A @ W, r, rcond=None)[0]
        np.testing.assert_allclose(np.asarray(dx, np.float64), ref, rtol=tol, atol=tol * np.abs(ref).max())


@pytest.mark.x64
def test_recycle_converges_where_plain_does_not(net, helmholtz):
    """Outer flexible GCR over the last 40 directions converges on indefinite Helmholtz where the
    3-term outer step has not after the same 60 iterations; the residual stays monotone."""
    # same static configuration as test_stagnation_is_reported: shares its compiled solve
    plain = GRANS(net, rtol=RTOL, max_steps=60, stall_patience=3, smoother=CHEB, dtype=DT)
    op = plain.setup(helmholtz.A)
    sp_ = plain.solve(op, helmholtz.b, throw=False)
    assert sp_.result != RESULTS.successful and relres(helmholtz, sp_.value) > 3 * RTOL
    # refresh=3 exercises both paths of the loop: basis rebuilt (iterations 3, 6, ...) and reused
    rec = GRANS(net, rtol=RTOL, max_steps=60, stall_patience=60, outer=FlexibleGCR(memory=40), refresh=3,
                smoother=CHEB, dtype=DT)
    sol = rec.solve(op, helmholtz.b, throw=False)
    h = np.asarray(sol.residual_history)[: int(sol.num_steps) + 1]
    assert sol.result == RESULTS.successful, h[-1]
    assert relres(helmholtz, sol.value) <= 1.05 * RTOL
    assert np.all(np.diff(h) <= 0)


def test_converges_and_lineax_interface(net, poisson):
    solver = GRANS(net, rtol=RTOL, max_steps=150, smoother=CHEB, dtype=DT)
    op = solver.setup(poisson.A)
    sol = solver.solve(op, poisson.b)
    assert sol.result == RESULTS.successful
    assert relres(poisson, sol.value) <= 1.05 * RTOL
    lsol = jax.jit(lambda op, b: lx.linear_solve(op, b, solver, throw=False))(op, poisson.b)
    assert lsol.result == lx.RESULTS.successful
    assert int(lsol.stats["num_steps"]) == int(sol.num_steps)
    np.testing.assert_allclose(np.asarray(lsol.value), np.asarray(sol.value), rtol=1e-5, atol=1e-7)
    # a second matrix in the same bucket reuses the compiled solve (no retrace)
    other = make_problem(jax.random.key(99), unit_square_mesh(3), "poisson")
    op2 = solver.setup(other.A)
    assert op2.padded_size == op.padded_size
    assert relres(other, solver.solve(op2, other.b).value) <= 1.05 * RTOL


def test_bad_inputs(net, poisson):
    solver = GRANS(net, smoother=CHEB, dtype=DT)
    op = solver.setup(poisson.A)
    with pytest.raises(ValueError, match=r"b has length \d+ but A is"):
        solver.solve(op, poisson.b[:-1])
    with pytest.raises(ValueError, match="square"):
        solver.setup(SparseMatrix.from_coo([0, 1], [0, 2], jnp.ones(2), (20, 30)))
    with pytest.raises(ValueError, match="n >= 16"):
        solver.setup(SparseMatrix.from_dense(jnp.eye(4)))
    A = poisson.A
    with pytest.raises(ValueError, match="NaN"):
        solver.setup(SparseMatrix(A.rows, A.cols, A.vals.at[3].set(jnp.nan), A.shape))
    zd = jnp.where(A.rows == A.cols, 0.0, A.vals).astype(A.vals.dtype)
    with pytest.raises(ValueError, match="zero diagonal"):
        solver.setup(SparseMatrix(A.rows, A.cols, zd, A.shape))
    with pytest.raises(ValueError, match="b has NaN or Inf"):  # concrete input: checked on the host at call time
        solver.solve(op, poisson.b.at[0].set(jnp.inf))
    # (traced NaN/Inf under the user's jit: tests/fuzz/test_solvers_fuzz.py, solvers.GRANS.solve.nan_b.jit)
    # b = 0: documented behaviour, x = 0 after 0 iterations, successful (with the settings of
    # test_converges_and_lineax_interface, whose compiled solve it reuses)
    sol = GRANS(net, rtol=RTOL, max_steps=150, smoother=CHEB, dtype=DT).solve(op, jnp.zeros_like(poisson.b))
    assert int(sol.num_steps) == 0 and sol.result == RESULTS.successful
    assert float(jnp.abs(sol.value).max()) == 0.0
    if not X64:
        with pytest.raises(ValueError, match="JAX_ENABLE_X64"):
            GRANS(net, dtype="float64").setup(poisson.A)
    with pytest.raises(ValueError):
        GRANS(net, max_steps=0)
    with pytest.raises(ValueError, match="refresh"):
        GRANS(net, refresh=0)
    with pytest.raises(ValueError, match="norm"):
        GRANS(net, outer=ThreeTermStep(norm="l2"))
    with pytest.raises(ValueError, match="memory"):
        GRANS(net, outer=FlexibleGCR(memory=0))
    with pytest.raises((ValueError, TypeError), match="outer"):  # TypeError under the jaxtyping checks
        GRANS(net, outer="gcr")


@pytest.mark.x64
def test_energy_norm_outer_step_on_spd(poisson, helmholtz):
    """SPD-like systems (default ``ThreeTermStep(norm="auto")`` -> energy): ``‖x* − x_k‖_A`` never increases (x* and the
    A-norm from SciPy in float64) for a random large-head network, and the solve needs fewer iterations than
    the residual-norm outer step; ``norm="energy"`` on an indefinite matrix is refused."""
    import scipy.sparse.linalg as sla

    rnet = GRANSNet.init(jax.random.key(5), hidden=8, layers=2, head_scale=3.0)
    one = GRANS(rnet, rtol=1e-12, max_steps=1, smoother=CHEB, dtype=DT)
    op = one.setup(poisson.A)
    A = poisson.A.to_scipy().astype(np.float64)
    xs = sla.spsolve(A.tocsc(), np.asarray(poisson.b, np.float64))

    def energy(x):
        e = xs - np.asarray(x, np.float64)
        return float(e @ (A @ e))

    x = jnp.zeros_like(poisson.b)
    en = [energy(x)]
    for _ in range(5):  # host-side test driver: chained one-step solves
        x = one.solve(op, poisson.b, x0=x, throw=False).value
        en.append(energy(x))
    en = np.asarray(en) / en[0]
    assert np.all(np.diff(en) <= (1e-10 if X64 else 1e-5)), en
    assert en[-1] < 1e-2, en
    auto = GRANS(rnet, rtol=RTOL, max_steps=100, smoother=CHEB, dtype=DT).solve(op, poisson.b)
    res_step = ThreeTermStep(norm="residual")
    res = GRANS(rnet, rtol=RTOL, max_steps=100, outer=res_step, smoother=CHEB, dtype=DT).solve(op, poisson.b)
    assert auto.result == RESULTS.successful and relres(poisson, auto.value) <= 1.05 * RTOL
    assert res.result == RESULTS.successful
    assert int(auto.num_steps) < int(res.num_steps), (int(auto.num_steps), int(res.num_steps))
    with pytest.raises(ValueError, match="positive-definite"):
        g = GRANS(rnet, outer=ThreeTermStep(norm="energy"), smoother=CHEB, dtype=DT)
        g.solve(g.setup(helmholtz.A), helmholtz.b)


def test_stagnation_is_reported(net, helmholtz):
    solver = GRANS(net, rtol=1e-14, max_steps=60, stall_patience=3, stall_tol=0.5, smoother=CHEB, dtype=DT)
    sol = solver.solve(solver.setup(helmholtz.A), helmholtz.b, throw=False)
    assert sol.result == RESULTS.stagnation
    with pytest.raises(RuntimeError, match="stagnation"):  # the default throw=True raises (eqx.error_if)
        jax.block_until_ready(solver.solve(solver.setup(helmholtz.A), helmholtz.b).value)


@pytest.mark.slow  # ~30-40 s on an idle 2-core box (compile-dominated); run with -m slow
def test_short_training_beats_initialisation():
    """Self-supervised training (no solutions) lowers the held-out one-step log residual reduction."""
    mesh = unit_square_mesh(2)  # n = 49: keeps the (compile-dominated) run short
    solver = GRANS(GRANSNet.init(jax.random.key(1), hidden=8, layers=1), smoother=CHEB, dtype=DT)
    ops, rhs = [], []
    for s in (21, 22):
        pb = make_problem(jax.random.key(s), mesh, "poisson")
        ops.append(solver.setup(pb.A))
        rhs.append(pb.b)
    res = train_grans(jax.random.key(2), ops, rhs, net=solver.net, stages=(0, 2),
                      steps_per_stage=12, batch=4, states_per_operator=6, learning_rate=3e-3,
                      progress=False)
    held = make_problem(jax.random.key(31), mesh, "poisson")
    hop = solver.setup(held.A)
    r = _initial_states(jax.random.key(4), hop, held.b, 6)
    z = jnp.zeros_like(r)
    before = float(grans_loss(res.initial_net, hop, r, z, z))
    after = float(grans_loss(res.net, hop, r, z, z))
    assert after < before - 0.02, (before, after)
    assert res.losses.shape == (24,)


@pytest.mark.slow  # the paper's (non-default) configuration; the default path is covered by the tests above
def test_pretrained_paper_configuration_solves_held_out_problem():
    """The paper's configuration by name (Chebyshev smoother, shipped network, basis every iteration)."""
    solver = GRANS.pretrained(smoother="chebyshev", rtol=RTOL, max_steps=200, dtype=DT)
    assert solver.net is not None and solver.refresh_for() == 1
    pb = make_problem(jax.random.key(10_001), unit_square_mesh(3), "reaction")
    op = solver.setup(pb.A)
    assert solver.configuration(op)["outer"] == ThreeTermStep()  # the paper's step, energy on SPD-like
    sol = solver.solve(op, pb.b)
    assert sol.result == RESULTS.successful
    assert relres(pb, sol.value) <= 1.05 * RTOL


# the default configuration per matrix class (GRANS docstring): the outer step and the safeguarded norm
DEFAULT_CHOICE = {"poisson": ("spd_like", ThreeTermStep(norm="energy"), "energy"),
                  "reaction": ("spd_like", ThreeTermStep(norm="energy"), "energy"),
                  "advection": ("nonsymmetric", FlexibleGCR(memory=40), "residual"),
                  "helmholtz": ("symmetric", FlexibleGCR(memory=100), "residual")}


@pytest.fixture(scope="module")
def four_equations():
    mesh = unit_square_mesh(4)  # n = 961: a two-level V-cycle (the coarsest level is solved densely)
    return {eq: make_problem(jax.random.key(10_400 + i), mesh, eq) for i, eq in enumerate(DEFAULT_CHOICE)}


def _check_default_solve(solver, pb, eq):
    op = solver.setup(pb.A)
    cls, outer, norm = DEFAULT_CHOICE[eq]
    cfg = solver.configuration(op)
    assert (cfg["matrix_class"], cfg["outer"], cfg["norm"]) == (cls, outer, norm), eq
    assert op.hierarchy is not None and len(op.hierarchy.sizes) >= 2, eq
    sol = solver.solve(op, pb.b)
    assert sol.result == RESULTS.successful, eq
    assert relres(pb, sol.value) <= 1.05 * RTOL, (eq, relres(pb, sol.value))
    assert bool(sol.stats["energy_norm"]) == (norm == "energy"), eq
    assert int(sol.stats["outer_memory"]) == getattr(outer, "memory", 0), eq
    assert int(sol.num_steps) <= 40, (eq, int(sol.num_steps))


DEFAULT_KW = dict(max_steps=100, dtype=DT)  # one static configuration: the tests below share compiled solves


def test_default_picks_the_documented_configuration(four_equations):
    """``GRANS.pretrained()`` is the multilevel smoother, no network, no projection, and the outer step of the
    matrix class (all four equations); it converges on an SPD-like and an indefinite one (true residual from
    SciPy in float64; the other two: the slow test below)."""
    solver = GRANS.pretrained(rtol=RTOL, **DEFAULT_KW)
    assert solver.net is None and solver.smoother == MultilevelSmoother() and solver.outer == "auto"
    assert solver.uses_projection is False and GRANS(rtol=RTOL, **DEFAULT_KW) == solver
    for eq, pb in four_equations.items():
        op = solver.setup(pb.A)
        assert not op.has_basis and solver.configuration(op)["network"] == "none"
        cls, outer, norm = DEFAULT_CHOICE[eq]
        assert (op.matrix_class, solver.outer_for(op), solver.outer_norm(op)) == (cls, outer, norm), eq
    for eq in ("poisson", "helmholtz"):
        _check_default_solve(solver, four_equations[eq], eq)


@pytest.mark.slow  # two more compiled solves
def test_default_converges_on_all_four_equations(four_equations):
    solver = GRANS.pretrained(rtol=RTOL, **DEFAULT_KW)
    for eq, pb in four_equations.items():
        _check_default_solve(solver, pb, eq)


def test_zero_head_and_no_projection_are_selectable(four_equations):
    """``GRANS(None, projection=True)`` uses exactly the basis of a network with a zero output head (without
    running one), and converges (SciPy); so does the default without the projection."""
    from icmlx.solvers._grans._network import _ZeroHead

    pb = four_equations["poisson"]
    zero = GRANS(None, projection=True, rtol=RTOL, **DEFAULT_KW)
    op = zero.setup(pb.A)
    assert op.has_basis and zero.configuration(op)["network"] == "zero head"
    net = GRANSNet.init(jax.random.key(3), hidden=4, layers=1)  # head_scale=0: w_out = 0, b_out = 0
    rs = jnp.zeros(op.padded_size, jnp.float32).at[: op.n].set(jnp.cos(jnp.arange(op.n, dtype=jnp.float32)))
    heads = eqx.filter_jit(lambda op, rs: (_ZeroHead(channels=2)(op, rs), net(op, rs)))  # one compile
    np.testing.assert_array_equal(*map(np.asarray, heads(op, rs)))
    a = zero.solve(op, pb.b)
    assert a.result == RESULTS.successful and relres(pb, a.value) <= 1.05 * RTOL
    plain = GRANS(None, rtol=RTOL, **DEFAULT_KW)  # the default (its compiled solve is shared with the test above)
    assert plain.configuration(op)["projection"] is False
    assert GRANS(None, projection=False, **DEFAULT_KW).configuration(op) == plain.configuration(op)
    sol = plain.solve(op, pb.b)  # (an operator with a basis serves a solver without one)
    assert sol.result == RESULTS.successful and relres(pb, sol.value) <= 1.05 * RTOL
    with pytest.raises(ValueError, match="without a basis"):
        zero.solve(plain.setup(pb.A), pb.b)
    assert GRANS.pretrained(network=True, dtype=DT).configuration(op)["network"] == "trained"
    with pytest.raises((ValueError, TypeError), match="network"):  # TypeError under the jaxtyping checks
        GRANS.pretrained(network="yes")
    with pytest.raises((ValueError, TypeError), match="projection"):
        GRANS(projection=1)


def test_setup_keeps_only_used_ell_slots_and_a_float32_cycle(four_equations):
    """The set-up's ELL product is the matrix (SciPy) at the longest row's width; the hierarchy is a float32
    smoothed-aggregation cycle on the M-matrix envelope (closed form, NumPy) with Galerkin coarse levels."""
    pb = four_equations["reaction"]  # P1 reaction-diffusion: rows of 5 and 9 entries (the mass matrix)
    op = GRANS(**DEFAULT_KW).setup(pb.A)
    A = pb.A.to_scipy().tocsr().astype(np.float64)
    A.eliminate_zeros()
    assert op.ell.val.shape[0] == np.diff(A.indptr).max()
    x = np.random.default_rng(0).standard_normal(op.n)
    tol = 1e-12 if X64 else 1e-5
    err = np.abs(np.asarray(op.mv(jnp.asarray(x, DT)), np.float64) - A @ x)
    assert np.all(err <= tol * (abs(A) @ np.abs(x))), float(err.max())  # entrywise rounding bound
    H = op.hierarchy
    assert H.coarse_inv.dtype == jnp.float32 and H.sizes[0] == op.padded_size and H.num_levels >= 2


    n = op.n
    Ad = A.toarray()
    off = np.abs(Ad - np.diag(np.diag(Ad)))
    off = (off + off.T) / 2
    env = np.diag(np.maximum(np.diag(Ad), off.sum(1))) - off  # the envelope's closed form
    A0 = ell_dense(H.ops[0])[:n, :n]
    np.testing.assert_allclose(A0, env, atol=1e-6 * np.abs(env).max())
    assert H.ops[0].val.shape[0] == np.diff(sp.csr_matrix(env).indptr).max()  # finest level at its longest row
    m = int(np.asarray(H.prolong[0].idx)[np.asarray(H.prolong[0].val) != 0].max()) + 1  # coarse unknowns
    P = ell_dense(H.prolong[0])[:n, :m]
    coarse = ell_dense(H.ops[1])[:m, :m] if H.num_levels > 2 else np.linalg.inv(np.asarray(H.coarse_inv, float)[:m, :m])
    np.testing.assert_allclose(coarse, P.T @ env @ P, atol=1e-4 * np.abs(coarse).max())  # Galerkin
    assert MultilevelSmoother(dtype="auto") != MultilevelSmoother()
    with pytest.raises((ValueError, TypeError), match="dtype"):
        MultilevelSmoother(dtype="float64")


@pytest.mark.x64
@pytest.mark.x64_only
def test_float32_cycle_reaches_a_float64_tolerance(four_equations):
    """The default float32 V-cycle inside a float64 solve reaches rtol = 1e-10 (SciPy residual in float64), in at
    most one iteration more than the cycle in float64 (``MultilevelSmoother(dtype="auto")``)."""
    with jax.enable_x64(True):
        for eq in ("reaction", "helmholtz"):
            pb = four_equations[eq]
            steps = {}
            for dt in ("float32", "auto"):
                solver = GRANS(rtol=1e-10, max_steps=100, smoother=MultilevelSmoother(dtype=dt), dtype="float64")
                op = solver.setup(pb.A)
                assert op.hierarchy.coarse_inv.dtype == (jnp.float32 if dt == "float32" else jnp.float64)
                sol = solver.solve(op, pb.b)
                assert sol.result == RESULTS.successful and relres(pb, sol.value) <= 1.05e-10, (eq, dt)
                steps[dt] = int(sol.num_steps)
            assert steps["float32"] <= steps["auto"] + 1, (eq, steps)


def test_basis_slots_past_int32_are_refused_by_name():
    # the compressed A V has S slots a row, stored as int32 segment ids 0..n_pad S: n_pad = 2^27 padded rows with
    # S = 16 (2 levels x 4 aggregates x 2 channels) pass int32, which the device copy of the slots would wrap. A
    # small graph with a large stated padded size crosses the boundary before any (n_pad, S) array is made.
    from icmlx.solvers._amg._aggregation import aggregation_hierarchy
    from icmlx.solvers._grans._operator import _basis_index

    n = 64
    i = np.arange(n)
    rows = np.concatenate([i, i[1:], i[:-1]])
    cols = np.concatenate([i, i[:-1], i[1:]])
    maps = aggregation_hierarchy(rows, cols, n)
    kw = dict(channels=2, max_columns=512, dmax_bucket=4)
    zslot = _basis_index(maps, rows, cols, n, 64, 256, **kw)[2]
    assert zslot.max() == 64 * 16  # S = 16 slots a row: the last id is the dropped one
    with pytest.raises(ValueError, match=r"n_pad=134217728 .* 2,147,483,649 slots"):
        _basis_index(maps, rows, cols, n, 2**27, 256, **kw)
