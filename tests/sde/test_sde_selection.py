"""select_function_class: held-out likelihood picks a class that contains the true drift over one that does not,
and scores match a float64 NumPy evaluation of the Euler likelihood."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx.sde import PolynomialBasis, RidgeRegression, naive_drift, select_function_class, simulate


def _double_well(x):
    return x - x**3


def test_selection_prefers_a_class_containing_the_double_well():
    """Double well at tau = 0.05: cubic monomials (containing x - x^3) score above linear ones, and the held-out
    score of the chosen class is the best; the chosen class's naive fit is close to the truth on the bulk."""
    p = simulate(jax.random.key(0), _double_well, 0.7, jnp.zeros((12, 1)), 30.0, 0.01, save_every=5)
    lin = RidgeRegression(PolynomialBasis(1, 1), 1e-3)
    cub = RidgeRegression(PolynomialBasis(1, 3), 1e-3)
    sel = select_function_class(p, None, 0.7, candidates=[lin, cub])
    assert sel.index == 1 and float(sel.scores[1]) > float(sel.scores[0])
    x = jnp.linspace(-1.2, 1.2, 9)[:, None]
    f = naive_drift(p, None, 0.7, function_class=sel.function_class).drift(x)
    assert float(jnp.sqrt(jnp.mean((f - _double_well(x)) ** 2))) < 0.3


@pytest.mark.x64
def test_scores_are_the_held_out_euler_likelihood():
    """The score of a class against a float64 NumPy fit on the first 75% of the intervals and Euler
    log-likelihood on the rest (monomials of degree 2, uneven times, sigma given)."""
    rng = np.random.default_rng(0)
    ts = np.concatenate([[0.0], np.cumsum(rng.uniform(0.02, 0.08, 199))])
    y = np.cumsum(0.5 * np.sqrt(np.diff(ts, prepend=0.0))[:, None] * rng.normal(size=(200, 1)), 0)
    sigma, ridge = 0.5, 1e-3
    sel = select_function_class(y, ts, sigma, candidates=[RidgeRegression(PolynomialBasis(1, 2), ridge)])
    x, dx, h = y[:-1, 0], np.diff(y[:, 0]), np.diff(ts)
    k = int(round(199 * 0.75))
    phi = np.stack([np.ones_like(x), x, x**2], 1)
    A = (phi[:k] * h[:k, None]).T @ phi[:k] + sigma**2 * ridge * np.eye(3)
    w = np.linalg.solve(A, phi[:k].T @ dx[:k])
    r = dx[k:] - (phi[k:] @ w) * h[k:]
    ref = np.mean(-0.5 * r**2 / (sigma**2 * h[k:]) - 0.5 * np.log(2 * np.pi * sigma**2 * h[k:]))
    rtol = 1e-9 if jnp.zeros(()).dtype == jnp.float64 else 1e-4
    np.testing.assert_allclose(float(sel.scores[0]), ref, rtol=rtol)


def test_selection_errors():
    y = np.cumsum(np.random.default_rng(1).normal(size=(50, 2)), 0)
    ts = np.arange(50.0)
    with pytest.raises(ValueError, match="holdout"):
        select_function_class(y, ts, 1.0, holdout=1.0)
    with pytest.raises(TypeError, match="holdout"):
        select_function_class(y, ts, 1.0, holdout="half")
    with pytest.raises(ValueError, match="candidates"):
        select_function_class(y, ts, 1.0, candidates=[])
    with pytest.raises(ValueError, match="d = 1"):
        select_function_class(y, ts, 1.0, candidates=[RidgeRegression(PolynomialBasis(1, 1))])


@pytest.mark.slow
def test_bridge_score_prefers_the_true_class_where_the_euler_score_does_not():
    """Double well at tau = 0.5 (sigma known): the Euler score of the naive fits prefers the sparse GP, whose EM
    drift is several times worse than that of cubic monomials (which contain x - x^3); the held-out bridge
    evidence of the EM fits keeps the cubic class. The chosen class's EM drift is checked against the truth."""
    from icmlx.sde import default_function_class, infer_drift, subsample, weighted_rmse

    p = simulate(jax.random.key(0), _double_well, 0.7, jnp.zeros((8, 1)), 45.0, 0.01)
    sp = subsample(p, 50)
    keep = sp.ts >= 5.0
    obs, ts = sp.xs[:, keep], sp.ts[keep]
    cub = RidgeRegression(PolynomialBasis(1, 3), 1e-3)
    gp = default_function_class(obs)
    euler = select_function_class(obs, ts, 0.7, candidates=[cub, gp])
    bridge = select_function_class(obs, ts, 0.7, candidates=[cub, gp], score="bridge", key=jax.random.key(2))
    assert euler.index == 1 and bridge.index == 0
    sol = infer_drift(jax.random.key(1), obs, ts, 0.7, function_class=bridge.function_class, num_steps=6,
                      num_particles=32, num_time_steps=10)
    assert float(weighted_rmse(_double_well, sol.drift, obs.reshape(-1, 1))) < 0.15


def test_bridge_score_errors():
    y = np.cumsum(np.random.default_rng(1).normal(size=(50, 1)), 0)
    ts = np.arange(50.0)
    with pytest.raises(ValueError, match="key"):
        select_function_class(y, ts, 1.0, score="bridge")
    with pytest.raises(ValueError, match="score"):
        select_function_class(y, ts, 1.0, score="evidence")
    with pytest.raises(TypeError, match="em_options"):
        select_function_class(y, ts, 1.0, score="bridge", key=jax.random.key(0), em_options=[4])
    with pytest.raises(TypeError, match="num_iters"):
        select_function_class(y, ts, 1.0, score="bridge", key=jax.random.key(0), em_options={"num_iters": 2})


@pytest.mark.slow
def test_infer_drift_auto_records_the_selection():
    """function_class="auto" fits the chosen class and records the selection; on an OU process (drift -x, in
    every candidate class) the drift is close to the truth on the bulk."""
    from icmlx.sde import infer_drift, subsample

    p = subsample(simulate(jax.random.key(3), lambda x: -x, 0.7, jnp.zeros((4, 1)), 40.0, 0.01), 50)
    sol = infer_drift(jax.random.key(4), p.xs, p.ts, 0.7, function_class="auto", num_steps=4, num_particles=32,
                      num_time_steps=10)
    assert sol.selection is not None and sol.selection.scores.shape == (3,)
    assert repr(sol.drift.basis) == repr(sol.selection.function_class.basis)
    x = jnp.linspace(-0.8, 0.8, 9)[:, None]
    assert float(jnp.sqrt(jnp.mean((sol.drift(x) + x) ** 2))) < 0.3


def test_infer_drift_function_class_string_errors():
    from icmlx.sde import infer_drift

    y = np.cumsum(np.random.default_rng(1).normal(size=(20, 1)), 0)
    with pytest.raises(ValueError, match="function_class"):
        infer_drift(jax.random.key(0), y, np.arange(20.0), 1.0, function_class="cubic")


@pytest.mark.slow
def test_auto_picks_the_linear_class_for_an_ou_process():
    """OU process, f(x) = -x (linear) at tau = 0.5: the default bridge candidates start with linear monomials, and
    the one-standard-error rule keeps them over the larger classes that only tie; the chosen fit recovers the
    slope -1 (closed form)."""
    from icmlx.sde import infer_drift, subsample

    p = simulate(jax.random.key(3), lambda x: -x, 0.7, jnp.zeros((8, 1)), 45.0, 0.01)
    sp = subsample(p, 50)
    keep = sp.ts >= 5.0
    obs, ts = sp.xs[:, keep], sp.ts[keep]
    sol = infer_drift(jax.random.key(1), obs, ts, 0.7, function_class="auto", num_steps=4, num_particles=32,
                      num_time_steps=10)
    assert sol.selection.index == 0 and len(sol.selection.candidates) == 4
    x = jnp.linspace(-1.0, 1.0, 5)[:, None]
    slope = np.polyfit(np.asarray(x[:, 0]), np.asarray(sol.drift(x)[:, 0]), 1)[0]
    assert abs(slope + 1.0) < 0.3


def test_auto_is_the_default_and_runs_under_jit_and_vmap():
    """function_class="auto" (the default) selects inside a caller's jax.jit: the same scores, choice and drift as
    the eager run (which fits the chosen class itself), the drift a LinearDrift on a SelectedBasis; jax.vmap over
    keys runs; init= with the default is refused with a message naming function_class."""
    import inspect

    from icmlx.sde import SelectedBasis, infer_drift

    assert inspect.signature(infer_drift).parameters["function_class"].default == "auto"
    rng = np.random.default_rng(0)
    obs = np.zeros((4, 14, 1), np.float32)
    for i in range(1, 14):  # an OU process observed every 0.5 (Euler steps of 0.05)
        x = obs[:, i - 1]
        for _ in range(10):
            x = x - x * 0.05 + 0.7 * np.sqrt(0.05) * rng.normal(size=x.shape).astype(np.float32)
        obs[:, i] = x
    ts = np.arange(14, dtype=np.float32) * 0.5
    cfg = dict(num_steps=1, num_particles=8, num_time_steps=4, throw=False)
    eager = infer_drift(jax.random.key(0), obs, ts, 0.7, **cfg)
    traced = jax.jit(lambda o: infer_drift(jax.random.key(0), o, ts, 0.7, **cfg))(obs)
    assert int(traced.selection.index) == int(eager.selection.index)
    np.testing.assert_allclose(np.asarray(traced.selection.scores), np.asarray(eager.selection.scores), rtol=1e-4)
    assert isinstance(traced.drift.basis, SelectedBasis) and not isinstance(eager.drift.basis, SelectedBasis)
    # the final fit is the chosen class's own fit with the caller's key
    chosen = infer_drift(jax.random.key(0), obs, ts, 0.7, function_class=eager.selection.function_class, **cfg)
    np.testing.assert_array_equal(np.asarray(chosen.drift.weights), np.asarray(eager.drift.weights))
    x = jnp.linspace(-1.0, 1.0, 7)[:, None]
    np.testing.assert_allclose(np.asarray(traced.drift(x)), np.asarray(eager.drift(x)), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(traced.drift.std(x)), np.asarray(eager.drift.std(x)), rtol=1e-4,
                               atol=1e-6)
    batched = jax.jit(jax.vmap(lambda k: infer_drift(k, obs, ts, 0.7, **cfg).drift(x)))(
        jax.random.split(jax.random.key(1), 2))
    assert batched.shape == (2, 7, 1) and np.all(np.isfinite(np.asarray(batched)))
    with pytest.raises(ValueError, match="function_class"):
        infer_drift(jax.random.key(0), obs, ts, 0.7, init=eager.drift, **cfg)


def test_selected_class_fits_the_chosen_candidate():
    """SelectedClass(candidates, i).fit equals candidate i's ridge solution (float64 NumPy normal equations),
    padded with zeros to the largest candidate's size, for a traced index too; SelectedBasis pads the features."""
    from icmlx.sde import SelectedBasis, SelectedClass

    rng = np.random.default_rng(3)
    x = rng.normal(size=(300, 1)).astype(np.float32)
    dx = (0.1 * (x - x**3) + 0.05 * rng.normal(size=x.shape)).astype(np.float32)
    lin, cub = RidgeRegression(PolynomialBasis(1, 1), 1e-2), RidgeRegression(PolynomialBasis(1, 3), 1e-2)
    for i, deg in ((0, 1), (1, 3)):
        f = jax.jit(lambda i: SelectedClass((lin, cub), i).fit(x, dx, 0.1, 0.5))(i)
        phi = np.concatenate([np.ones_like(x, np.float64), x.astype(np.float64)] +
                             [x.astype(np.float64) ** k for k in range(2, deg + 1)], 1)
        ref = np.linalg.solve(0.1 * phi.T @ phi + 0.25 * 1e-2 * np.eye(phi.shape[1]), phi.T @ dx)
        assert f.weights.shape == (4, 1)
        np.testing.assert_allclose(np.asarray(f.weights[: deg + 1]), ref, rtol=2e-3, atol=2e-4)
        assert not np.any(np.asarray(f.weights[deg + 1:]))
        np.testing.assert_allclose(np.asarray(f(x[:5])), phi[:5] @ ref, rtol=2e-3, atol=2e-4)
    b = SelectedBasis((PolynomialBasis(1, 1), PolynomialBasis(1, 3)), 0)
    assert np.asarray(b(jnp.array([[2.0], [3.0]]))).tolist() == [[1.0, 2.0, 0.0, 0.0], [1.0, 3.0, 0.0, 0.0]]


def test_one_standard_error_rule_matches_numpy():
    """The traced choice equals a float64 NumPy one-standard-error rule on random per-interval scores, with
    non-finite entries counted as -1e30 and ties broken towards the simplest class."""
    from icmlx.sde._class_scores import one_standard_error_choice

    rng = np.random.default_rng(5)
    for trial in range(20):
        ll = rng.normal(size=(4, 50)) + rng.normal(size=(4, 1)) * 0.3
        if trial % 5 == 0:
            ll[2, 3] = -np.inf
        scores, se, index = jax.jit(one_standard_error_choice)(jnp.asarray(ll, jnp.float32))
        ref = np.where(np.isfinite(ll), ll, -1e30)
        m = ref.mean(1)
        best = int(np.argmax(m))
        e = (ref - ref[best]).std(1, ddof=1) / np.sqrt(ref.shape[1])
        assert int(index) == int(np.flatnonzero(m >= m[best] - e)[0])
        np.testing.assert_allclose(np.asarray(scores), m, rtol=1e-5, atol=1e-6)
