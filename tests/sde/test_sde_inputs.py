"""Issue #17 for icmlx.sde: the inputs users hold, results that go on, defaults that run, clear errors.

Every check compares against something independent of the code under test: a closed form (an OU drift, a
constant-drift estimate, a known RBF/monomial formula written in NumPy), scipy's matrix exponential, or the same
quantity computed along another path (a NumPy point-by-point loop, the JAX version of a NumPy function).
"""

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import icmlx
from icmlx.sde import (
    FourierBasis,
    GeodesicGuidance,
    LinearDrift,
    NoGuidance,
    PolynomialBasis,
    RBFBasis,
    RidgeRegression,
    SamplePaths,
    conservative_drift,
    default_function_class,
    geodesic_targets,
    infer_drift,
    kde_weights,
    naive_drift,
    ou_drift,
    plot_drift,
    plot_paths,
    rmse,
    simulate,
    smc_bridges,
    weighted_rmse,
)

pd = pytest.importorskip("pandas")

SIGMA = 0.5
A = np.array([[-1.0, 2.0], [-2.0, -1.0]])


@pytest.fixture(scope="module")
def ou():
    x0 = jax.random.normal(jax.random.key(3), (100, 2)) * 0.3
    return simulate(jax.random.key(4), ou_drift(jnp.asarray(A, jnp.float32)), SIGMA, x0, 10.0, 0.01, save_every=5)


@pytest.fixture(scope="module")
def walk():
    y = np.cumsum(0.3 * np.random.default_rng(0).normal(size=(2, 11, 2)), axis=1).astype(np.float32)
    return y, np.arange(11.0)


# --------------------------------------------------------------------------- drifts broadcast over leading axes


def _np_monomials(x, exponents):
    return np.stack([np.prod(x ** np.asarray(e, float), axis=-1) for e in exponents], axis=-1)


def test_fitted_linear_drift_broadcasts_and_matches_the_ou_closed_form(ou):
    scipy_linalg = pytest.importorskip("scipy.linalg")
    tau = float(ou.ts[1] - ou.ts[0])
    est = naive_drift(ou.xs, ou.ts, SIGMA, function_class=RidgeRegression(PolynomialBasis(2, 1), 1e-6))
    f = est.drift
    ref_matrix = (scipy_linalg.expm(A * tau) - np.eye(2)) / tau  # what increment regression converges to
    rng = np.random.default_rng(1)
    for shape in [(2,), (7, 2), (3, 4, 2)]:
        x = rng.uniform(-0.5, 0.5, size=shape).astype(np.float32)
        out = f(x)  # a NumPy array in, any leading axes
        assert out.shape == shape
        # closed form A_tau x, to the estimation error of 100 x 200 increments (about 0.1 per unit of x)
        np.testing.assert_allclose(np.asarray(out), x @ ref_matrix.T, atol=0.15)
        # ... and exactly the fitted W^T phi(x), with the monomials written in NumPy
        W = np.asarray(f.weights, np.float64)
        np.testing.assert_allclose(np.asarray(out), _np_monomials(x, f.basis.exponents) @ W, rtol=1e-5, atol=1e-5)


def test_default_sparse_gp_drift_broadcasts_like_a_pointwise_loop(ou):
    f = naive_drift(ou.xs, ou.ts, SIGMA).drift
    grid = np.stack(np.meshgrid(np.linspace(-0.5, 0.5, 4), np.linspace(-0.4, 0.4, 3), indexing="ij"), -1)
    out = np.asarray(f(grid.astype(np.float32)))
    assert out.shape == (4, 3, 2)
    loop = np.array([[np.asarray(f(jnp.asarray(p, jnp.float32))) for p in row] for row in grid])
    np.testing.assert_allclose(out, loop, rtol=1e-5, atol=1e-6)


def test_bases_broadcast_against_numpy_formulas():
    rng = np.random.default_rng(2)
    c = rng.normal(size=(5, 2)).astype(np.float32)
    x = rng.normal(size=(3, 4, 2)).astype(np.float32)
    rbf = RBFBasis(c, lengthscale=0.7, variance=2.0)
    ref = 2.0 * np.exp(-0.5 * np.sum((x[..., None, :] - c) ** 2, -1) / 0.49)
    np.testing.assert_allclose(np.asarray(rbf(jnp.asarray(x))), ref, rtol=1e-5)
    four = FourierBasis.sample(jax.random.key(0), 6, 2)
    ref = np.sqrt(2 / 6) * np.cos(x @ np.asarray(four.omegas).T + np.asarray(four.phases))
    np.testing.assert_allclose(np.asarray(four(jnp.asarray(x))), ref, rtol=1e-4, atol=1e-5)
    poly = PolynomialBasis(2, 3)
    np.testing.assert_allclose(np.asarray(poly(jnp.asarray(x))), _np_monomials(x, poly.exponents), rtol=1e-5)


class _PointBasis(eqx.Module):
    """A user basis written for one state only (indexes x[0], x[1])."""

    def __call__(self, x):
        return jnp.stack([x[0], x[1], x[0] * x[1]])


def test_user_pointwise_basis_is_vmapped_and_shape_errors_are_clear():
    W = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, -1.0]], np.float32)
    f = LinearDrift(_PointBasis(), jnp.asarray(W))
    x = np.random.default_rng(3).normal(size=(2, 3, 2)).astype(np.float32)
    feats = np.stack([x[..., 0], x[..., 1], x[..., 0] * x[..., 1]], -1)
    np.testing.assert_allclose(np.asarray(f(x)), feats @ W, rtol=1e-5)
    with pytest.raises(ValueError, match=r"shape \(\.\.\., d\) with d = 2"):
        f(np.zeros((4, 3), np.float32))


# --------------------------------------------------------------------------- inputs users hold


def test_dataframe_numpy_lists_and_jax_give_the_same_estimate_and_names_are_kept(walk):
    y, ts = walk
    fc = RidgeRegression(PolynomialBasis(2, 1), 1e-3)
    ref = naive_drift(jnp.asarray(y[0]), jnp.asarray(ts), 0.3, function_class=fc)
    df = pd.DataFrame(y[0], columns=["x", "v"], index=pd.Index(ts, name="t"))
    for obs, t in [(y[0], ts), (y[0].tolist(), ts.tolist()), (df, df.index), (df, pd.Series(ts))]:
        est = naive_drift(obs, t, 0.3, function_class=fc)
        # float32 tolerance: a list of Python floats takes the default dtype (float64 in the x64 pass)
        np.testing.assert_allclose(np.asarray(est.drift.weights), np.asarray(ref.drift.weights), rtol=1e-4,
                                   atol=1e-6)
    est = naive_drift(df, df.index, 0.3, function_class=fc)
    assert est.drift.names == ("x", "v") and est.names == ("x", "v")
    assert "names=('x', 'v')" in repr(est)
    # the drift takes the DataFrame back and returns one with the same index and columns, in the fitted order
    out = est.drift(df[["v", "x"]])
    assert list(out.columns) == ["x", "v"] and out.index.equals(df.index)
    np.testing.assert_allclose(out.to_numpy(), np.asarray(ref.drift(jnp.asarray(y[0]))), rtol=1e-5)
    # integer data is cast to floats
    yi = np.round(10 * y[0]).astype(np.int64)
    est_i = naive_drift(yi, ts, 0.3, function_class=fc)
    est_f = naive_drift(yi.astype(np.float32), ts, 0.3, function_class=fc)
    np.testing.assert_allclose(np.asarray(est_i.drift.weights), np.asarray(est_f.drift.weights), rtol=1e-4,
                               atol=1e-6)  # to float32 accuracy: integers take the default float dtype


def test_list_of_trajectories_samplepaths_and_per_trajectory_time_grids(walk):
    y, ts = walk
    fc = RidgeRegression(PolynomialBasis(2, 1), 1e-3)
    ref = naive_drift(y, ts, 0.3, function_class=fc)
    frames = [pd.DataFrame(t, columns=["a", "b"]) for t in y]
    for obs in ([t for t in y], frames):
        est = naive_drift(obs, ts, 0.3, function_class=fc)
        np.testing.assert_allclose(np.asarray(est.drift.weights), np.asarray(ref.drift.weights), rtol=1e-6)
    assert naive_drift(frames, ts, 0.3, function_class=fc).drift.names == ("a", "b")
    paths = SamplePaths(ts=jnp.asarray(ts, jnp.float32), xs=jnp.asarray(y))
    est = naive_drift(paths, None, 0.3, function_class=fc)
    np.testing.assert_array_equal(np.asarray(est.drift.weights), np.asarray(ref.drift.weights))
    # one time grid per trajectory, shape (n_traj, n_obs): constant-drift closed form sum(dx) / sum(dt)
    ts2 = np.stack([np.arange(11.0), 0.5 * np.arange(11.0) ** 1.5]).astype(np.float32)
    const = RidgeRegression(PolynomialBasis(2, 0), 1e-8)
    est = naive_drift(y, ts2, 0.3, function_class=const)
    total_dx = (y[:, -1] - y[:, 0]).sum(0)
    total_dt = (ts2[:, -1] - ts2[:, 0]).sum()
    np.testing.assert_allclose(np.asarray(est.drift.weights[0]), total_dx / total_dt, rtol=1e-4)
    # ragged trajectories: a list of time grids, one per trajectory (closed form again)
    with pytest.raises(ValueError, match="ragged observations .* need ts as a list of 2 time grids"):
        naive_drift([y[0], y[1][:7]], ts, 0.3)
    est = naive_drift([y[0], y[1][:7]], [ts2[0], ts2[1][:7]], 0.3, function_class=const)
    total_dx = (y[0, -1] - y[0, 0]) + (y[1, 6] - y[1, 0])
    total_dt = (ts2[0, -1] - ts2[0, 0]) + (ts2[1, 6] - ts2[1, 0])
    np.testing.assert_allclose(np.asarray(est.drift.weights[0]), total_dx / total_dt, rtol=1e-4)
    with pytest.raises(ValueError, match="different columns"):
        naive_drift([frames[0], frames[1].iloc[:7].rename(columns={"a": "z"})], [ts, ts[:7]], 0.3)
    with pytest.raises(ValueError, match="different columns"):
        naive_drift([frames[0], frames[1].rename(columns={"a": "z"})], ts, 0.3)


def test_datetime_times_and_non_numeric_data_say_what_to_do(walk):
    y, _ = walk
    stamps = pd.date_range("2026-01-01", periods=11, freq="s")
    with pytest.raises(TypeError, match="elapsed times"):
        naive_drift(y[0], stamps, 0.3)
    with pytest.raises(TypeError, match="numeric"):
        naive_drift(pd.DataFrame({"x": y[0, :, 0], "label": list("abcdefghijk")}), np.arange(11.0), 0.3)


# --------------------------------------------------------------------------- clear errors, eagerly and under jit


def test_constant_observations_and_bad_values_raise_clear_errors(walk):
    y, ts = walk
    df = pd.DataFrame({"x": y[0, :, 0], "z": np.full(11, 3.0)})
    with pytest.raises(ValueError, match=r"column 'z' is constant \(every value 3\).*drop that column"):
        naive_drift(df, ts, 0.3)
    with pytest.raises(ValueError, match="coordinate 1 is constant"):
        conservative_drift(df.to_numpy(), None, 0.3)
    with pytest.raises(ValueError, match="constant"):
        default_function_class(np.ones((5, 2)))
    bad = y[0].copy()
    bad[4, 1] = np.nan
    with pytest.raises(ValueError, match=r"NaN or inf \(first at index \(0, 4, 1\)\)"):
        naive_drift(bad, ts, 0.3)
    t_bad = ts.copy()
    t_bad[5] = t_bad[4]
    with pytest.raises(ValueError, match=r"ts\[5\] = 4 follows ts\[4\] = 4"):
        infer_drift(jax.random.key(0), y, t_bad, 0.3)
    for sigma in (0.0, -1.0, float("nan"), jnp.asarray(-1.0), np.float32(0.0)):
        with pytest.raises(ValueError, match="sigma must be a positive number"):
            naive_drift(y, ts, sigma)
    with pytest.raises(ValueError, match=r"ts must have shape \(n_obs,\) = \(11,\)"):
        naive_drift(y, ts[:5], 0.3)


def test_value_errors_under_jit_are_runtime_errors_with_the_same_message(walk):
    y, ts = walk
    fc = RidgeRegression(PolynomialBasis(2, 1), 1e-3)
    fit = eqx.filter_jit(lambda obs: naive_drift(obs, ts, 0.3, function_class=fc).drift.weights)
    fit(jnp.asarray(y))  # fine data runs
    with pytest.raises(RuntimeError, match="NaN or inf"):
        fit(jnp.asarray(y).at[0, 2, 0].set(jnp.nan))
    with pytest.raises(RuntimeError, match="constant"):
        fit(jnp.asarray(y).at[..., 1].set(1.0))
    f = ou_drift(-jnp.eye(2))
    sim = eqx.filter_jit(lambda s: simulate(jax.random.key(0), f, s, jnp.zeros((2, 2)), 0.2, 0.1).xs)
    with pytest.raises(RuntimeError, match="sigma must be a positive number"):
        sim(jnp.asarray(-1.0))


def test_simulate_checks_on_the_host_and_takes_what_users_hold():
    f = ou_drift(-jnp.eye(2))
    with pytest.raises(ValueError, match="sigma"):  # a concrete JAX array: checked at call time
        simulate(jax.random.key(0), f, jnp.asarray(-1.0), jnp.zeros((2, 2)), 1.0, 0.1)
    with pytest.raises(ValueError, match="x0 contains NaN"):
        simulate(jax.random.key(0), f, 1.0, np.full((2, 2), np.nan), 1.0, 0.1)
    with pytest.raises(ValueError, match=r"ts must lie in \[0, t1\]"):
        simulate(jax.random.key(0), f, 1.0, np.zeros((2, 2)), 1.0, 0.1, ts=np.array([0.0, 2.0]))
    one = simulate(jax.random.key(0), f, 1.0, [0.5, -0.5], 1.0, 0.1)  # one state: one path
    many = simulate(jax.random.key(0), f, 1.0, pd.DataFrame([[0.5, -0.5]], columns=["x", "y"]), 1.0, 0.1)
    assert one.xs.shape == many.xs.shape == (1, 11, 2)
    np.testing.assert_array_equal(np.asarray(one.xs), np.asarray(many.xs))
    bits = one.xs.dtype.itemsize * 8  # lists take the default float dtype (float64 in the x64 pass)
    assert repr(one) == f"SamplePaths(num_paths=1, num_times=11, d=2, ts=[0, 1], xs=f{bits}[1, 11, 2])"


def test_count_and_scale_settings_are_validated():
    obs = jnp.asarray(np.cumsum(np.random.default_rng(0).normal(size=(1, 12, 2)), 1), jnp.float32)
    for kwargs, name in [(dict(num_nodes=0), "num_nodes"), (dict(num_neighbors=0), "num_neighbors"),
                         (dict(sigma_m=0.0), "sigma_m"), (dict(rho=-1.0), "rho"),
                         (dict(max_metric_points=0), "max_metric_points")]:
        with pytest.raises(ValueError, match=name):
            geodesic_targets(obs, 4, **kwargs)
        if name != "max_metric_points":
            with pytest.raises(ValueError, match=name):
                GeodesicGuidance(**kwargs)
    a, b = obs[0, :-1], obs[0, 1:]
    with pytest.raises(ValueError, match="tau must be positive"):
        smc_bridges(jax.random.key(0), lambda x: -x, 0.5, a, b, jnp.zeros(11), num_particles=4, num_time_steps=2)
    with pytest.raises(ValueError, match="sigma"):
        smc_bridges(jax.random.key(0), lambda x: -x, 0.0, a, b, jnp.ones(11), num_particles=4, num_time_steps=2)
    with pytest.raises(ValueError, match="num_particles"):
        smc_bridges(jax.random.key(0), lambda x: -x, 0.5, a, b, jnp.ones(11), num_particles=0, num_time_steps=2)
    with pytest.raises(ValueError, match="lengthscale must be positive"):
        RBFBasis(jnp.zeros((3, 2)), lengthscale=0.0)
    with pytest.raises(ValueError, match=r"bandwidth must lie in \(0, inf\)"):
        kde_weights(obs[0], obs[0], bandwidth=0.0)
    with pytest.raises(ValueError, match=r"bandwidth must lie in \(0, inf\)"):
        weighted_rmse(lambda x: -x, lambda x: -x, obs, bandwidth=-1.0)


# --------------------------------------------------------------------------- defaults that run


def test_default_function_class_size_does_not_explode_with_d():
    rng = np.random.default_rng(0)
    sizes = {}
    for d in (1, 2, 3, 5, 8):
        fc = default_function_class(rng.normal(size=(3000, d)).astype(np.float32))
        m, dd = fc.basis.centers.shape
        assert dd == d and m <= 2048, (d, m)
        sizes[d] = m
    assert sizes[1] == 12 and sizes[2] == 144 and sizes[3] == 1728  # the paper's 12 per axis where it fits
    assert sizes[5] == 4**5 and sizes[8] == 1000  # data subset (every 3rd of 3000 points) for d >= 7
    with pytest.raises(ValueError, match=r"num_per_dim=12 in d=5 gives 248,832 inducing points .*248 GB.*"
                                         r"num_per_dim <= 7"):
        default_function_class(rng.normal(size=(100, 5)).astype(np.float32), num_per_dim=12)


@pytest.mark.slow  # a 1296-point SparseGP fit in d = 4 (about 40 s on 2 shared cores)
def test_default_drift_in_d4_recovers_a_linear_ou_drift():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    d, tau = 4, 0.05
    A4 = -np.eye(d) + 0.5 * (np.eye(d, k=1) - np.eye(d, k=-1))
    x0 = jnp.asarray(np.random.default_rng(0).normal(size=(100, d)) * 0.7, jnp.float32)
    p = simulate(jax.random.key(5), ou_drift(jnp.asarray(A4, jnp.float32)), 1.0, x0, 2.0, 0.01, save_every=5)
    est = naive_drift(p.xs, p.ts, 1.0)
    assert est.drift.basis.centers.shape == (6**4, 4)
    x = np.asarray(p.xs).reshape(-1, d)
    ref = x @ ((scipy_linalg.expm(A4 * tau) - np.eye(d)) / tau).T
    rel = np.sqrt(np.mean((np.asarray(est.drift(x)) - ref) ** 2) / np.mean(ref**2))
    assert rel < 0.5, rel


def test_metric_accepts_numpy_only_drifts_and_grid_size_is_guarded(ou):
    obs = np.asarray(ou.xs)
    np_true = lambda x: -np.sin(np.asarray(x))  # NumPy only: not JAX-traceable
    jax_true = lambda x: -jnp.sin(x)
    est = lambda x: -x
    w_np = float(weighted_rmse(np_true, est, obs))
    w_jax = float(weighted_rmse(jax_true, est, obs))
    np.testing.assert_allclose(w_np, w_jax, rtol=1e-5)
    assert w_np > 0.0
    np.testing.assert_allclose(float(weighted_rmse(np_true, lambda x: np.asarray(x) * 0 - np.sin(x) + 0.5, obs)),
                               0.5, rtol=1e-5)  # a constant offset of 0.5 per dimension: wRMSE = 0.5 exactly
    np.testing.assert_allclose(float(rmse(np_true, est, obs)), float(rmse(jax_true, est, obs)), rtol=1e-5)
    with pytest.raises(ValueError, match=r"f_true must map a state of shape \(2,\)"):
        weighted_rmse(lambda x: np.zeros(3), est, obs)
    big = np.random.default_rng(0).normal(size=(1000, 5))
    with pytest.raises(ValueError, match="grid_size=20 in d=5.*pass grid_size <= "):
        weighted_rmse(lambda x: -x, lambda x: -x, big)


# --------------------------------------------------------------------------- progress, reprs


def test_infer_drift_progress_follows_the_shared_rule(walk, capfd, monkeypatch):
    from icmlx.sde._em import _infer_core
    from icmlx.sde._estimators import _intervals

    monkeypatch.delenv("ICMLX_PROGRESS", raising=False)
    y, ts = walk
    init = naive_drift(y, ts, 0.3).drift
    tiny = dict(num_steps=2, num_particles=8, num_time_steps=4, guidance=NoGuidance(), init=init,
                function_class=None)
    # what infer_drift hands its compiled loop: progress off for None (also under a terminal), on for True
    import icmlx.sde._em as em

    seen = []

    class _Stop(Exception):
        pass

    def spy(*args, **kwargs):
        seen.append(args[-1])
        raise _Stop

    monkeypatch.setattr(em, "_infer_core", spy)
    monkeypatch.setattr("icmlx._progress._interactive", lambda: True)
    for value in (None, False, True):
        with pytest.raises(_Stop):
            infer_drift(jax.random.key(1), y, ts, 0.3, progress=value, **tiny)
    assert seen == [False, False, True]
    monkeypatch.undo()
    with pytest.raises(TypeError, match="progress"):
        infer_drift(jax.random.key(1), y, ts, 0.3, progress="yes", **tiny)
    # the default program holds no host callback (so the persistent compilation cache can store it)
    obs, tj = jnp.asarray(y), jnp.asarray(ts, jnp.float32)
    fc = default_function_class(obs)
    targets = jnp.zeros((20, 5, 2), obs.dtype)
    args = (jax.random.key(0), obs, tj, jnp.asarray(obs.shape[0], jnp.int32), jnp.asarray(0.3, obs.dtype), fc, init,
            targets, jnp.zeros((), obs.dtype),
            2, 8, 4, 1, False)
    assert _intervals(obs, tj)[0].shape == (20, 2)
    off = str(eqx.filter_make_jaxpr(_infer_core)(*args, False)[0])
    on = str(eqx.filter_make_jaxpr(_infer_core)(*args, True)[0])
    assert "callback" not in off and "callback" in on


def _fake_solution(init, num_steps=3):
    from icmlx.sde import DriftSolution, EMHistory

    m, d = init.weights.shape
    per = jnp.linspace(2.0, 1.0, num_steps)
    hist = EMHistory(per, per / 4, per / 8, per / 10, jnp.zeros(num_steps, jnp.int32),
                     jnp.broadcast_to(init.weights, (num_steps, m, d)), jnp.full(num_steps, 0.3))
    stats = {"num_steps": jnp.asarray(num_steps), "loss": per, "ess_median": per / 4, "ess_min": per / 8,
             "drift_change": per / 10, "num_degenerate": jnp.zeros(num_steps, jnp.int32)}
    return DriftSolution(value=init, result=icmlx.RESULTS.successful, stats=stats, initial_drift=init,
                         history=hist, ess=jnp.ones(20), degenerate=jnp.zeros(20, bool), sigma=jnp.asarray(0.3),
                         initial_sigma=jnp.asarray(0.3))


def test_drift_solution_repr_and_names_from_dataframes(walk, monkeypatch):
    import icmlx.sde._em as em

    y, ts = walk
    init = naive_drift(y, ts, 0.3).drift
    text = repr(_fake_solution(init))
    assert text == ("DriftSolution(result=successful, stats={num_steps=3, loss=1, ess_median=0.25, ess_min=0.125, "
                    "drift_change=0.1, num_degenerate=0} (last iteration), value=LinearDrift(basis=RBFBasis("
                    f"num_centers=144, d=2, lengthscale={float(init.basis.lengthscale):.4g}, variance=1), "
                    "weights=f32[144, 2]))")
    # names of DataFrame columns reach the returned drift (the compiled loop is replaced by a stub here)
    monkeypatch.setattr(em, "_infer_core", lambda *args, **kwargs: _fake_solution(args[6]))
    frames = [pd.DataFrame(t, columns=["p", "q"]) for t in y]
    sol = infer_drift(jax.random.key(1), frames, ts, 0.3, guidance=NoGuidance(), init=init, function_class=None)
    assert sol.drift.names == ("p", "q") and sol.drift_at(0).names == ("p", "q")
    assert "names=('p', 'q')" in repr(sol)


@pytest.mark.slow  # one EM compilation with the progress callback (about 40 s on 2 cores)
def test_infer_drift_progress_true_prints_each_iteration_and_keeps_names(walk, capfd):
    y, ts = walk
    df_list = [pd.DataFrame(t, columns=["p", "q"]) for t in y]
    init = naive_drift(y, ts, 0.3).drift
    tiny = dict(num_steps=2, num_particles=8, num_time_steps=4, guidance=NoGuidance(), init=init,
                function_class=None)
    # progress=True: one line per EM iteration on stderr
    sol = infer_drift(jax.random.key(1), df_list, ts, 0.3, progress=True, **tiny)
    jax.effects_barrier()
    err = capfd.readouterr().err
    assert "infer_drift: step 1/2" in err and "infer_drift: step 2/2" in err and "loss=" in err
    assert sol.drift.names == ("p", "q") and sol.drift_at(0).names == ("p", "q")
    # readable repr: status by name, last-iteration stats by value, the drift by its size
    text = repr(sol)
    assert text.startswith("DriftSolution(result=successful, stats={num_steps=2, loss=")
    assert "value=LinearDrift(basis=RBFBasis(num_centers=144, d=2" in text and len(text) < 400
    assert isinstance(sol, icmlx.Solution)


# --------------------------------------------------------------------------- plots


@pytest.fixture
def agg():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield plt
    plt.close("all")


def test_plot_drift_draws_the_field_and_the_truth(agg, walk):
    ax = plot_drift(ou_drift(-jnp.eye(2)), bounds=((-1, 1), (-2, 2)), true_drift=lambda x: np.asarray(x) * 0,
                    num_points=5)
    est, ref = ax.collections
    X, Y = np.meshgrid(np.linspace(-1, 1, 5), np.linspace(-2, 2, 5), indexing="ij")
    np.testing.assert_allclose(est.U, -X.ravel(), atol=1e-6)  # closed form f(x) = -x
    np.testing.assert_allclose(est.V, -Y.ravel(), atol=1e-6)
    np.testing.assert_allclose(ref.U, 0.0)
    assert ax.get_legend() is not None
    # a fitted estimate from a DataFrame: default box from the inducing points, axis labels from the names
    y, ts = walk
    est = naive_drift(pd.DataFrame(y[0], columns=["x", "v"]), ts, 0.3)
    ax = plot_drift(est, num_points=4)
    c = np.asarray(est.drift.basis.centers)
    q = ax.collections[0]
    np.testing.assert_allclose(q.get_offsets()[0], c.min(0), rtol=1e-6)
    np.testing.assert_allclose(q.get_offsets()[-1], c.max(0), rtol=1e-6)
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("x", "v")
    # 1-D: a curve equal to the drift
    ax = plot_drift(lambda x: -2.0 * x, bounds=(-1.0, 1.0), true_drift=lambda x: -x, num_points=7)
    curve, truth = ax.lines
    np.testing.assert_allclose(curve.get_ydata(), -2.0 * np.linspace(-1, 1, 7), atol=1e-6)
    np.testing.assert_allclose(truth.get_ydata(), -np.linspace(-1, 1, 7), atol=1e-6)
    with pytest.raises(ValueError, match="pass bounds="):
        plot_drift(lambda x: -x)
    with pytest.raises(ValueError, match="1-D or 2-D"):
        plot_drift(lambda x: -x, bounds=[(0, 1)] * 3)


def test_plot_paths_draws_one_line_per_trajectory(agg):
    xs = np.random.default_rng(0).normal(size=(5, 6, 2))
    ax = plot_paths(SamplePaths(ts=jnp.arange(6.0), xs=jnp.asarray(xs, jnp.float32)), max_paths=3)
    assert len(ax.lines) == 3
    np.testing.assert_allclose(ax.lines[1].get_xdata(), xs[1, :, 0], rtol=1e-6)
    ax = plot_paths(xs[:2, :, :1], ts=np.linspace(0, 1, 6))
    assert len(ax.lines) == 2
    np.testing.assert_allclose(ax.lines[0].get_xdata(), np.linspace(0, 1, 6))
    np.testing.assert_allclose(ax.lines[0].get_ydata(), xs[0, :, 0])


def test_importing_sde_pulls_in_no_plotting_or_pandas():
    import subprocess
    import sys

    code = "import sys, icmlx.sde; print(any(m in sys.modules for m in ('matplotlib', 'pandas', 'networkx')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_no_deprecation_warnings_on_the_new_paths(walk):
    y, ts = walk
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        naive_drift(pd.DataFrame(y[0]), ts, 0.3, function_class=RidgeRegression(PolynomialBasis(2, 1), 1e-3))
