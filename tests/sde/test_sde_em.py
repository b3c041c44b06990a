"""SMC bridges (closed-form Brownian/OU bridge laws), geodesics, EM sanity, diagnostics and jit/vmap
contracts."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import icmlx
from icmlx.sde import (
    RESULTS,
    GeodesicGuidance,
    LinearDrift,
    NoGuidance,
    default_function_class,
    geodesic_targets,
    infer_drift,
    naive_drift,
    ring_drift,
    simulate,
    smc_bridges,
    subsample,
    weighted_rmse,
)


@pytest.mark.slow
@pytest.mark.x64  # > 20 s on the shared 2-core box (compile-dominated)
def test_bridge_evidence_and_midpoint_law_for_ou():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    A = np.array([[-1.0, 1.0], [-1.0, -1.0]])
    sigma, tau, K, N = 0.6, 1.0, 50, 512
    a = np.array([1.0, 0.0])
    bs_ = np.array([[0.2, -0.6], [0.5, 0.3]])
    drift = lambda x: jnp.asarray(A, x.dtype) @ x
    dtype = jnp.zeros(()).dtype
    out = smc_bridges(jax.random.key(0), drift, jnp.asarray(sigma, dtype),
                      jnp.asarray(np.stack([a, a]), dtype), jnp.asarray(bs_, dtype),
                      jnp.full((2,), tau, dtype), num_particles=N, num_time_steps=K, num_paths=N,
                      lookahead=True)
    # exact OU transition density log N(b; e^{A tau} a, Sigma_tau), Sigma_tau from the Van Loan integral
    E = scipy_linalg.expm(A * tau)
    S = scipy_linalg.solve_continuous_lyapunov(A, -(sigma**2) * np.eye(2))
    Sig = S - E @ S @ E.T
    for i, b in enumerate(bs_):
        r = b - E @ a
        ref = -0.5 * r @ np.linalg.solve(Sig, r) - 0.5 * np.log(np.linalg.det(2 * np.pi * Sig))
        # Euler discretisation (h = 0.02) and SMC noise: a few hundredths in log space
        assert abs(float(out.log_evidence[i]) - ref) < 0.1
    assert not bool(out.degenerate.any())
    assert float(out.ess.min()) > 0.1 * N
    # endpoints are pinned
    np.testing.assert_allclose(np.asarray(out.paths[0, :, 0]), np.broadcast_to(a, (N, 2)), atol=1e-6)
    np.testing.assert_allclose(np.asarray(out.paths[1, :, -1]), np.broadcast_to(bs_[1], (N, 2)), atol=1e-6)


def test_plain_bridge_with_zero_drift_is_brownian_bridge():
    sigma, tau, K, N = 0.5, 2.0, 20, 2048
    a, b = jnp.array([[0.0, 0.0]]), jnp.array([[1.0, -1.0]])
    out = smc_bridges(jax.random.key(1), lambda x: jnp.zeros_like(x), jnp.asarray(sigma), a, b,
                      jnp.array([tau]), num_particles=N, num_time_steps=K, num_paths=N, lookahead=True)
    # with the look-ahead twist the MDB proposal is the exact Brownian bridge: weights are constant
    assert float(out.ess[0]) > 0.99 * N
    mid = np.asarray(out.paths[0, :, K // 2], np.float64)  # t = tau / 2
    var = sigma**2 * (tau / 2) * (tau / 2) / tau
    # paths are resampled copies, so use a conservative effective size N/4 for the standard error
    se = np.sqrt(var / (N / 4))
    np.testing.assert_allclose(mid.mean(0), [0.5, -0.5], atol=4 * se)
    np.testing.assert_allclose(mid.var(0), [var, var], rtol=4 * np.sqrt(2 / (N / 4)))
    np.testing.assert_allclose(float(out.log_evidence[0]),
                               -np.sum(np.array([1.0, 1.0]) ** 2) / (2 * sigma**2 * tau)
                               - np.log(2 * np.pi * sigma**2 * tau), atol=0.02)


@pytest.mark.slow  # > 20 s on the shared 2-core box (compile-dominated)
def test_geodesic_follows_the_data_not_the_chord():
    th = jnp.linspace(0.0, 2 * np.pi, 200, endpoint=False)
    obs = jnp.stack([jnp.cos(th), jnp.sin(th)], -1)[None]
    sparse = obs[:, ::25]  # 8 points, 45 degrees apart: the chord dips to r = cos(22.5 deg) = 0.92
    ring = jnp.concatenate([obs, sparse], axis=1)  # metric from the dense cloud
    g = geodesic_targets(ring, 16, num_nodes=208, num_neighbors=4)
    seg = np.asarray(g[0, 200:207])  # geodesics between the 8 sparse points
    r = np.linalg.norm(seg, axis=-1)
    assert np.max(np.abs(r - 1.0)) < 0.03
    np.testing.assert_allclose(seg[:, 0], np.asarray(sparse[0, :7]), atol=1e-6)
    np.testing.assert_allclose(seg[:, -1], np.asarray(sparse[0, 1:8]), atol=1e-6)


@pytest.mark.slow  # compile-dominated
def test_orientation_mask_forbids_going_back_past_the_previous_observation():
    # dense unit circle defines the metric; three sparse observations at 0, 100 and 290 degrees. The
    # shortest route 100 -> 290 runs backwards through 0 (170 deg); with the A2 mask (nodes within eps of
    # y_{k-1} = 0 deg removed) it must run forwards through 195 deg (190 deg of arc).
    th = jnp.linspace(0.0, 2 * np.pi, 180, endpoint=False)
    circ = jnp.stack([jnp.cos(th), jnp.sin(th)], -1)
    ang = jnp.deg2rad(jnp.array([0.0, 100.0, 290.0]))
    sparse = jnp.stack([jnp.cos(ang), jnp.sin(ang)], -1)
    obs = jnp.concatenate([circ, sparse], axis=0)[None]
    K = 16
    geo = eqx.filter_jit(geodesic_targets)
    plain = np.asarray(geo(obs, K, num_nodes=183, num_neighbors=4))[0, -1]  # interval 100 -> 290 deg
    masked = np.asarray(geo(obs, K, num_nodes=183, num_neighbors=4, orientation_eps=0.5))[0, -1]
    mid_angle = lambda c: np.rad2deg(np.arctan2(c[K // 2, 1], c[K // 2, 0])) % 360.0
    # arc-length midpoints (node spacing 2 deg, endpoint snapping 1 deg): 15 deg vs 195 deg
    assert abs(mid_angle(plain) - 15.0) < 6.0, mid_angle(plain)
    assert abs(mid_angle(masked) - 195.0) < 6.0, mid_angle(masked)
    assert np.max(np.abs(np.linalg.norm(masked, axis=-1) - 1.0)) < 0.03  # still on the data
    unmasked_first = np.asarray(geo(obs, K, num_nodes=183, num_neighbors=4))[0, 0]
    np.testing.assert_allclose(np.asarray(geo(obs, K, num_nodes=183, num_neighbors=4, orientation_eps=0.5))[0, 0],
                               unmasked_first, atol=1e-5)  # no y_{k-1} for the first interval: unchanged


@pytest.fixture(scope="module")
def ring_obs():
    th = jax.random.uniform(jax.random.key(7), (20,), minval=0.0, maxval=2 * np.pi)
    x0 = jnp.stack([jnp.cos(th), jnp.sin(th)], -1)
    return subsample(simulate(jax.random.key(8), ring_drift(2.0), 0.5, x0, 10.0, 0.01), 100)


@pytest.mark.parametrize(
    "guidance", [NoGuidance(), pytest.param(GeodesicGuidance(strength=2.0), marks=pytest.mark.slow)],
    ids=["none", "geodesic"])
def test_em_improves_on_its_start_and_keeps_ess(ring_obs, guidance):
    f = ring_drift(2.0)
    res = infer_drift(jax.random.key(2), ring_obs.xs, ring_obs.ts, 0.5, guidance=guidance,
                      num_steps=3, num_particles=64, num_time_steps=10, num_paths=4)
    start = float(weighted_rmse(f, res.initial_drift, ring_obs.xs))
    end = float(weighted_rmse(f, res.drift, ring_obs.xs))
    assert end <= start, (start, end)
    assert end <= 0.85 * start  # tau = 1, omega tau = 2 rad: bridges must fix a good part of the bias
    assert float(res.history.ess_median[-1]) > 0.1  # fraction of particles
    assert int(res.history.num_degenerate.sum()) == 0
    assert bool(res.result == RESULTS.successful)
    assert isinstance(res, icmlx.Solution) and res.value is res.drift
    assert int(res.num_steps) == 3 and res.stats["loss"].shape == (3,)
    np.testing.assert_array_equal(np.asarray(res.stats["ess_median"]), np.asarray(res.history.ess_median))
    assert res.history.weights.shape[0] == 3 and res.ess.shape == (20 * 10,)
    np.testing.assert_allclose(np.asarray(res.drift_at(-1).weights), np.asarray(res.drift.weights))


#: The tiny EM configuration shared by the tests below (one compiled EM loop: init is always given).
TINY = dict(num_steps=1, num_particles=8, num_time_steps=4)
#: with init=: the class init was fitted in (the sparse GP of default_function_class)
TINY_INIT = dict(TINY, function_class=None)


def test_degenerate_bridges_are_reported_and_raise(ring_obs):
    obs, ts = ring_obs.xs[:2], ring_obs.ts
    basis = default_function_class(obs).basis
    # A NaN start is refused at the boundary ...
    nan = LinearDrift(basis, jnp.full((basis.centers.shape[0], 2), jnp.nan))
    with pytest.raises(ValueError, match="init has NaN"):
        infer_drift(jax.random.key(2), obs, ts, 0.5, guidance=NoGuidance(), init=nan, **TINY_INIT)
    # ... while an explosive (finite) drift overflows every bridge weight: all 20 bridges collapse and the M-step
    # has nothing to fit.
    bad = LinearDrift(basis, jnp.full((basis.centers.shape[0], 2), 1e30))
    res = infer_drift(jax.random.key(2), obs, ts, 0.5, guidance=NoGuidance(), init=bad, throw=False, **TINY_INIT)
    assert int(res.history.num_degenerate[0]) == 20 and int(res.stats["num_degenerate"][0]) == 20
    assert bool(res.degenerate.all())
    assert bool(res.result == RESULTS.degenerate_bridges)
    assert bool(res.result == icmlx.RESULTS.degenerate_bridges)
    assert icmlx.result_name(res.result) == "degenerate_bridges"
    assert bool(jnp.all(jnp.isfinite(res.drift.weights)))  # collapsed bridges carry zero weight
    # throw=True (the default) raises exactly because result is not successful
    with pytest.raises(RuntimeError, match="collapsed"):
        jax.block_until_ready(infer_drift(jax.random.key(2), obs, ts, 0.5, guidance=NoGuidance(), init=bad,
                                          **TINY_INIT).value.weights)
    # ... and a healthy start does not raise
    start = naive_drift(obs, ts, 0.5).drift
    good = infer_drift(jax.random.key(2), obs, ts, 0.5, guidance=NoGuidance(), init=start, **TINY_INIT)
    assert bool(good.result == RESULTS.successful) and int(good.stats["num_degenerate"][0]) == 0


def test_infer_drift_jit_vmap_and_compile_once(ring_obs):
    obs, ts = ring_obs.xs[:2], ring_obs.ts
    # the sparse GP (function_class=None), compared with naive_drift's start below; the default "auto" under
    # jit/vmap is tested in test_sde_selection.py
    kw = dict(guidance=GeodesicGuidance(num_nodes=20), num_steps=2, num_particles=8, num_time_steps=4,
              num_paths=2, function_class=None)
    pts = obs.reshape(-1, 2)

    def run(k):
        res = infer_drift(k, obs, ts, 0.5, **kw)
        return res.drift.weights, jax.vmap(res.initial_drift)(pts)

    # jit of vmap over keys, compiled once: a second batch of keys must not retrace
    def batch(seeds):
        return jax.vmap(lambda kd: run(jax.random.wrap_key_data(kd)))(jax.vmap(
            lambda s: jax.random.key_data(jax.random.key(s)))(seeds))

    counted = eqx.filter_jit(eqx.debug.assert_max_traces(batch, max_traces=1))
    ws, init_v = counted(jnp.arange(3))
    ws2, _ = counted(jnp.arange(3, 6))  # no retrace
    assert ws.shape[0] == 3 and bool(jnp.all(jnp.isfinite(ws))) and bool(jnp.all(jnp.isfinite(ws2)))
    assert not np.allclose(np.asarray(ws[0]), np.asarray(ws[1]))  # the key matters
    # The deterministic part (the naive start) agrees jitted+vmapped vs eager to float tolerance; the EM weights
    # themselves are not compared exactly because resampling decisions amplify fusion-level rounding (compare
    # drift values, not weights: float32 weights of a near-singular GP Gram are ill-determined).
    # (the naive start is naive_drift's estimate: compared with it rather than with a second, eager EM run,
    # which would compile the EM loop once more for no further check)
    naive = naive_drift(obs, ts, 0.5).drift
    np.testing.assert_allclose(np.asarray(init_v[0]), np.asarray(jax.vmap(naive)(pts)), rtol=1e-3, atol=1e-3)
    # the fitted drift is a plain callable: jit and vmap it
    drift = LinearDrift(naive.basis, ws[0])
    out = jax.jit(jax.vmap(drift))(obs[0])
    assert out.shape == obs[0].shape and bool(jnp.all(jnp.isfinite(out)))


def test_infer_drift_bad_config(ring_obs):
    obs, ts = ring_obs.xs[:2], ring_obs.ts
    with pytest.raises(ValueError, match="guidance"):
        infer_drift(jax.random.key(0), obs, ts, 0.5, guidance="score")
    with pytest.raises(ValueError, match="num_time_steps"):
        infer_drift(jax.random.key(0), obs, ts, 0.5, num_time_steps=1)
    with pytest.raises(ValueError, match="num_particles"):
        infer_drift(jax.random.key(0), obs, ts, 0.5, num_particles=0)
    with pytest.raises(ValueError, match="num_steps"):
        infer_drift(jax.random.key(0), obs, ts, 0.5, num_steps=0)
    with pytest.raises(ValueError, match="strength"):
        GeodesicGuidance(strength=-1.0)
    with pytest.raises(ValueError, match="sigma"):
        infer_drift(jax.random.key(0), obs, ts, 0.0)
