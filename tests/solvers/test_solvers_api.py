"""The icmlx.solvers API: one record (LinearSolution, an icmlx.Solution) with icmlx.RESULTS, throw=True,
strategy objects for G-RANS's modes, and the removed old names (errors, no aliases).

References are independent of the code under test where numbers are compared: SciPy float64 residuals, or
the same computation through the new name (the aliases must give bit-identical answers).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import icmlx
from icmlx.solvers import (
    GRANS,
    AbstractOuterStep,
    AbstractSmoother,
    ChebyshevSmoother,
    EllMatrix,
    FlexibleGCR,
    GRANSNet,
    JacobiRelaxation,
    LinearSolution,
    MultilevelSmoother,
    NoOuterStep,
    SparseMatrix,
    ThreeTermStep,
    bicgstab,
    cg,
    estimate_lambda_max,
    gmres,
    grans_loss,
    smoothed_aggregation,
    solve,
)
from icmlx.solvers.fem import make_problem, random_field, unit_square_mesh

sp = pytest.importorskip("scipy.sparse")

X64 = bool(jax.config.jax_enable_x64)
DT = "float64" if X64 else "float32"
# tests of the iteration's mechanics pin the polynomial smoother: at n = 49 the default V-cycle is one dense level
CHEB = ChebyshevSmoother()


@pytest.fixture(scope="module")
def small():
    return make_problem(jax.random.key(3), unit_square_mesh(2), "poisson")  # n = 49


@pytest.fixture(scope="module")
def net():
    return GRANSNet.init(jax.random.key(0), hidden=4, layers=1, head_scale=0.5)


def _relres(pb, x):
    A = pb.A.to_scipy().astype(np.float64)
    b = np.asarray(pb.b, np.float64)
    return np.linalg.norm(b - A @ np.asarray(x, np.float64)) / np.linalg.norm(b)


# -- one record, one status enumeration ------------------------------------------------------------------
def test_every_solver_returns_a_linear_solution_with_icmlx_results(small, net):
    rtol = 1e-4
    grans = GRANS(net, rtol=rtol, max_steps=60, dtype=DT)
    sols = {
        "cg": cg(small.A, small.b, rtol=rtol),
        "gmres": gmres(small.A, small.b, rtol=rtol, restart=10),
        "bicgstab": bicgstab(small.A, small.b, rtol=rtol),
        "grans": grans.solve(grans.setup(small.A), small.b),
    }
    for name, sol in sols.items():
        assert isinstance(sol, LinearSolution) and isinstance(sol, icmlx.Solution), name
        assert sol.result._enumeration is icmlx.RESULTS, name
        assert icmlx.result_name(sol.result) == "successful", name
        assert {"num_steps", "residual_norm"} <= set(sol.stats), name
        assert int(sol.num_steps) == int(sol.stats["num_steps"]) > 0, name
        # the recorded residual norm is the true one (SciPy float64 reference); in float32 ``b − A x`` at
        # relres 1e-4 loses ~3 digits to cancellation (eps · ‖A‖‖x‖ ≈ 1e-7 ‖b‖), hence the absolute slack
        bn = np.linalg.norm(np.asarray(small.b, np.float64))
        true = _relres(small, sol.value) * bn
        np.testing.assert_allclose(float(sol.residual_norm), true, rtol=1e-9, atol=(1e-12 if X64 else 1e-6) * bn)
        assert _relres(small, sol.value) <= 1.001 * rtol, name
    g = sols["grans"]
    assert g.residual_history.shape == (61,) and int(g.num_rejected) >= 0
    assert sols["cg"].residual_history.shape == (10_001,)  # every solver records a history now
    with pytest.raises(AttributeError, match="num_rejected"):
        sols["cg"].num_rejected  # noqa: B018


def test_throw_true_raises_exactly_when_not_successful(small, net):
    grans = GRANS(net, rtol=1e-12, max_steps=2, smoother=CHEB, dtype=DT)
    op = grans.setup(small.A)
    sol = grans.solve(op, small.b, throw=False)
    assert sol.result == icmlx.RESULTS.max_steps_reached
    with pytest.raises(RuntimeError, match="maximum number of solver steps"):
        jax.block_until_ready(grans.solve(op, small.b).value)  # throw=True is the default
    k = cg(small.A, small.b, rtol=1e-12, max_steps=2, throw=False)
    assert k.result == icmlx.RESULTS.max_steps_reached and int(k.num_steps) == 2
    with pytest.raises(RuntimeError):
        jax.block_until_ready(cg(small.A, small.b, rtol=1e-12, max_steps=2).value)
    # (a converged solve returns without raising: test_every_solver_returns_a_linear_solution_...)


def test_failure_text_under_jit_is_the_eager_text():
    """A failed ``solve(throw=True)`` names the status and the fix on its first line eagerly; under the user's
    ``jax.jit`` XLA's runtime makes the exception (its first line is JAX's callback notice, which no code inside
    the compiled program can change), and the exception line it carries is the eager text, status name first."""
    import scipy.sparse as sp

    one = sp.diags([-np.ones(11), 2.0 * np.ones(12), -np.ones(11)], [-1, 0, 1])
    A = sp.kronsum(one, one).tocsr()
    b = jnp.ones(A.shape[0], DT)
    with pytest.raises(RuntimeError) as eager:
        solve(A, b, rtol=1e-12, max_steps=1)
    first = str(eager.value).splitlines()[0]
    assert first.startswith("max_steps_reached: ") and "max_steps" in first.split(": ", 1)[1]
    assert "Pass throw=False" in str(eager.value)
    with pytest.raises(RuntimeError) as traced:
        jax.block_until_ready(jax.jit(lambda b: solve(A, b, rtol=1e-12, max_steps=1).value)(b))
    lines = str(traced.value).splitlines()
    carried = [line.split("Error: ", 1)[1] for line in lines if "Error: max_steps_reached: " in line]
    assert carried == [first], lines
    assert "Pass throw=False" in str(traced.value)


# -- strategy objects -------------------------------------------------------------------------------------
STRATEGIES = [ChebyshevSmoother(), ChebyshevSmoother(degree=5), MultilevelSmoother(),
              MultilevelSmoother(degree=1, max_coarse=50, max_levels=4), ThreeTermStep(),
              ThreeTermStep(norm="residual"), FlexibleGCR(memory=40), NoOuterStep()]


@pytest.mark.parametrize("obj", STRATEGIES, ids=repr)
def test_strategies_are_static_hashable_and_not_callable(obj):
    assert isinstance(obj, AbstractSmoother | AbstractOuterStep)
    assert jax.tree.leaves(obj) == []  # static fields only: optax.inject_hyperparams leaves it alone
    assert not callable(obj)
    twin = type(obj)(**{f: getattr(obj, f) for f in obj.__dataclass_fields__})
    assert twin == obj and hash(twin) == hash(obj)
    assert {obj: 1}[twin] == 1


@pytest.mark.parametrize("make,arg", [
    (lambda: ChebyshevSmoother(degree=0), "degree"),
    (lambda: MultilevelSmoother(degree=0), "degree"),
    (lambda: MultilevelSmoother(max_coarse=0), "max_coarse"),
    (lambda: MultilevelSmoother(max_levels=-1), "max_levels"),
    (lambda: ThreeTermStep(norm="l2"), "norm"),
    (lambda: FlexibleGCR(memory=0), "memory"),
])
def test_strategies_reject_invalid_settings(make, arg):
    with pytest.raises(ValueError, match=arg):
        make()


def test_strategies_reject_what_is_not_an_integer():
    # a bool is not a count: the shared check (icmlx._checks.check_int) answers it with a TypeError
    with pytest.raises(TypeError, match="FlexibleGCR: memory must be an integer"):
        FlexibleGCR(memory=True)


def test_grans_rejects_what_is_not_a_strategy(net):
    with pytest.raises(ValueError, match="smoother"):
        GRANS(net, smoother="jacobi")
    with pytest.raises((ValueError, TypeError), match="outer"):  # TypeError under the jaxtyping checks
        GRANS(net, outer="gcr")
    with pytest.raises(TypeError, match="unexpected"):
        GRANS(net, degre=3)
    for old in ("recycle", "norm", "degree"):  # the removed flags: the strategy objects replace them
        with pytest.raises(TypeError):
            GRANS(net, **{old: 2})


def test_string_shorthands_map_to_default_objects(net):
    assert GRANS(net, smoother="multilevel").smoother == MultilevelSmoother()
    assert GRANS(net, smoother="chebyshev").smoother == ChebyshevSmoother()
    g = GRANS(net)
    assert g.smoother == MultilevelSmoother() and g.outer == "auto" and g.refresh is None
    assert GRANS().net is None and GRANS().channels == 2  # the zero head
    # the paper's configuration: Chebyshev, its 3-term step (outer="auto"), basis every iteration
    p = GRANS(net, smoother="chebyshev")
    assert p.outer_for(p.setup(np.eye(20) * 2.0)) == ThreeTermStep(norm="auto") and p.refresh_for() == 1


def test_no_outer_step_keeps_the_residual_monotone(small, net):
    """NoOuterStep (x ← x + M_θ(r), the ablation): the safeguarded true residual never increases, and the
    recorded final residual is the one SciPy recomputes from x in float64."""
    plain = GRANS(net, rtol=1e-12, max_steps=4, outer=NoOuterStep(), smoother=CHEB, dtype=DT)
    sol = plain.solve(plain.setup(small.A), small.b, throw=False)
    h = np.asarray(sol.residual_history)[: int(sol.num_steps) + 1]
    assert int(sol.num_steps) == 4 and np.all(np.diff(h) <= 0) and h[-1] < h[0]
    np.testing.assert_allclose(h[-1], _relres(small, sol.value), rtol=1e-9, atol=1e-12 if X64 else 1e-6)


# -- removed names: the old spellings are errors, not aliases --------------------------------------------------
def test_removed_names_and_keywords_are_errors(small, net):
    import icmlx.solvers as solvers

    for old in ("GRANSSolution", "KrylovSolution", "jacobi_smoother", "chebyshev_smoother"):
        assert old not in solvers.__all__
        with pytest.raises(AttributeError):
            getattr(solvers, old)
    g = GRANS(net, outer=FlexibleGCR(memory=8), dtype=DT)
    for attr in ("recycle", "norm", "degree"):
        assert not hasattr(g, attr)
    op = GRANS(net, dtype=DT).setup(small.A)
    assert not hasattr(op, "n_pad") and not hasattr(op, "n_agg") and op.padded_size == 64
    A = SparseMatrix.from_dense(jnp.array([[4.0, -1.0, 0.0], [-1.0, 4.0, -1.0], [0.0, -1.0, 4.0]]))
    r = jnp.array([1.0, 2.0, 3.0])
    with pytest.raises(TypeError):
        JacobiRelaxation().apply(A, r, steps=3)
    with pytest.raises(TypeError):
        estimate_lambda_max(A, steps=4)
    M = sp.random(9, 7, density=0.3, random_state=0, format="csr")
    with pytest.raises(TypeError):
        EllMatrix.from_scipy(M, n_rows=12)
    T = sp.diags([-np.ones(19), 2 * np.ones(20), -np.ones(19)], [-1, 0, 1]).tocsr()
    with pytest.raises(TypeError):
        smoothed_aggregation(T, max_coarse=5, n_pad=24)
    x = jnp.linspace(0.0, 1.0, 10)[:, None] * jnp.ones((1, 2))
    with pytest.raises(TypeError):
        random_field(jax.random.key(1), x, n_modes=4)


def test_smoother_must_match_the_operator(small, net):
    cheb = GRANS(net, smoother=CHEB, dtype=DT)
    op = cheb.setup(small.A)  # set up without a hierarchy
    with pytest.raises(ValueError, match="multilevel hierarchy"):
        GRANS(net, smoother=MultilevelSmoother(), dtype=DT).solve(op, small.b)
    z = jnp.zeros((1, op.padded_size), op.A.dtype)
    with pytest.raises(ValueError, match="multilevel hierarchy"):
        grans_loss(net, op, z, z, z, smoother=MultilevelSmoother())


def test_grans_loss_strategies(small, net):
    """The loss takes the same strategy objects as the solver; the removed degree= flag is an error; outer steps
    the loss does not train through are refused."""
    op = GRANS(net, smoother=CHEB, dtype=DT).setup(small.A)
    dt = op.A.dtype
    r = jnp.zeros((2, op.padded_size), dt).at[:, : op.n].set(
        jnp.stack([jnp.asarray(small.b, dt), jnp.cos(jnp.arange(op.n, dtype=dt))]))
    z = jnp.zeros_like(r)
    # compiled (the settings static; the checks run at trace time): one compile per configuration is cheaper
    # than the first eager call's per-operation compiles
    loss = jax.jit(grans_loss, static_argnames=("smoother", "outer"))
    new = loss(net, op, r, z, z, smoother=ChebyshevSmoother(degree=2), outer=NoOuterStep())
    assert np.isfinite(float(new))
    with pytest.raises(TypeError):
        grans_loss(net, op, r, z, z, degree=2)
    # one iteration reduces the D^-1-norm of the residual (the loss is a mean log ratio < 0)
    assert float(loss(net, op, r, z, z)) < 0
    with pytest.raises(ValueError, match="outer"):
        grans_loss(net, op, r, z, z, outer=FlexibleGCR(memory=8))
    # the energy-norm 3-term step is trained through on an SPD-like matrix (refused off it: test_solvers_train.py)
    assert np.isfinite(float(loss(net, op, r, z, z, outer=ThreeTermStep(norm="energy"))))


def test_vmap_over_right_hand_sides_solves_each_as_alone():
    """``vmap`` of ``AMGSolver.solve`` and of ``cg`` over right-hand sides (run one member at a time inside the
    program): each column equals SciPy's ``spsolve`` to the tolerance and takes the steps its own call takes."""
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    from icmlx.solvers import amg_setup

    one = sp.diags([-np.ones(19), 2.0 * np.ones(20), -np.ones(19)], [-1, 0, 1])
    A = sp.kronsum(one, one).tocsr()
    rng = np.random.default_rng(3)
    B = rng.standard_normal((3, A.shape[0]))
    B[1] *= 1e-3  # a different scale: a different step count
    S = amg_setup(A, max_coarse=20)
    Bj = jnp.asarray(B, DT)
    for run in (lambda b: S.solve(b, rtol=1e-5), lambda b: cg(SparseMatrix.from_scipy(A.astype(DT)), b, rtol=1e-5)):
        batch = jax.vmap(run)(Bj)
        for i in range(3):
            ref = spla.spsolve(A.tocsc(), B[i])
            assert np.linalg.norm(np.asarray(batch.value[i], np.float64) - ref) <= 1e-3 * np.linalg.norm(ref)
            assert int(batch.num_steps[i]) == int(run(Bj[i]).num_steps)
