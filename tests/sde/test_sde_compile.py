"""Compile once: a second ``infer_drift`` call with another number of observations (same ``d``) compiles nothing.

The observation count is padded to a power-of-two number of intervals (``_em._bucket_obs``) and the true
count enters the programs as data, masking the padding intervals. The geodesic targets of the real intervals must not
depend on the padding: they are compared with the unpadded public ``geodesic_targets``.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import monitoring

from icmlx.sde import GeodesicGuidance, geodesic_targets, infer_drift
from icmlx.sde._em import _bucket_obs
from icmlx.sde._geodesic import _geodesic_jit

_COMPILES = [0]
monitoring.register_event_duration_secs_listener(
    lambda e, d, **k: _COMPILES.__setitem__(0, _COMPILES[0] + 1) if e.endswith("backend_compile_duration") else None
)


def _ring(n, seed=0):
    rng = np.random.default_rng(seed)
    th = np.linspace(0.0, 4 * np.pi, n)
    return np.stack([np.cos(th), np.sin(th)], -1) + 0.05 * rng.standard_normal((n, 2))


def test_bucket_rule():
    assert [_bucket_obs(n) for n in (2, 9, 10, 30, 33, 34, 179, 187, 250)] == [9, 9, 17, 33, 33, 65, 257, 257, 257]
    m = np.arange(8, 5000)
    b = np.array([_bucket_obs(int(k) + 1) - 1 for k in m])
    assert np.all(b >= m) and np.all(b < 2 * m)  # at most as much padding work again as real work
    assert np.all(b & (b - 1) == 0)  # powers of two: every count in (B/2, B] shares one program
    # a function of the count alone: the same count pads the same way whatever ran before
    assert [_bucket_obs(n) for n in (200, 100, 200)] == [257, 129, 257]


def test_infer_drift_new_n_compiles_nothing():
    obs = _ring(30).astype(np.float32)
    ts = np.arange(30.0)
    kw = dict(guidance=GeodesicGuidance(num_nodes=12, num_neighbors=3), num_steps=1, num_particles=4,
              num_time_steps=2, num_paths=1, throw=False)
    first = infer_drift(jax.random.key(0), obs, ts, 0.3, **kw)
    jax.block_until_ready(first.drift.weights)
    before = _COMPILES[0]
    second = infer_drift(jax.random.key(1), obs[:22], ts[:22], 0.3, **kw)  # 29 -> 21 intervals, one bucket
    jax.block_until_ready((second.drift.weights, second.ess))
    assert _COMPILES[0] == before, f"{_COMPILES[0] - before} programs compiled for a new n"
    # the per-interval diagnostics are those of the real intervals only
    assert second.ess.shape == (21,) and second.degenerate.shape == (21,) and first.ess.shape == (29,)
    assert bool(jnp.all(jnp.isfinite(second.drift.weights)))


@pytest.mark.slow
@pytest.mark.parametrize("orientation_eps", [None, 0.3])
def test_padded_geodesics_equal_unpadded(orientation_eps):
    obs = _ring(21, seed=1).astype(np.float32)[None]
    kw = dict(num_nodes=15, num_neighbors=3, orientation_eps=orientation_eps)
    ref = np.asarray(geodesic_targets(obs, 3, **kw))
    padded = np.concatenate([obs, np.repeat(obs[:, -1:], 12, axis=1)], axis=1)  # 33 slots, 21 real
    got = np.asarray(_geodesic_jit(jnp.asarray(padded), jnp.asarray(21, jnp.int32), 3, 15, 3, 0.15, 1e-3, 2000,
                                   orientation_eps))
    assert got.shape == (1, 32, 4, 2)
    np.testing.assert_allclose(got[:, :20], ref, rtol=1e-5, atol=1e-5)


def test_weighted_rmse_with_a_new_lambda_each_call_compiles_nothing_again():
    # a lambda is a new object per call: the compiled drift evaluation would key its cache on it (a compile per
    # call); it is evaluated eagerly instead, so repeat calls reuse the per-operation programs
    from icmlx.sde import weighted_rmse

    obs = _ring(41).astype(np.float32)
    a = jnp.array([[0.0, 1.0], [-1.0, 0.0]], jnp.float32)

    def call(scale):
        return float(weighted_rmse(lambda x: a @ x, lambda x: scale * (a @ x), obs))

    first = call(1.5)
    before = _COMPILES[0]
    second = call(1.5)
    assert _COMPILES[0] == before and second == first
    # the eager path gives the compiled path's value (the same drifts as module-level functions)
    assert np.isclose(first, float(weighted_rmse(_rotation, _rotation_scaled, obs)), rtol=1e-6)


def _rotation(x):
    return jnp.array([[0.0, 1.0], [-1.0, 0.0]], x.dtype) @ x


def _rotation_scaled(x):
    return 1.5 * _rotation(x)


def test_naive_drift_host_paths_match_numpy_and_compile_little():
    """``naive_drift``'s intervals, ``default_function_class``'s box, ``box_grid`` and ``subsample`` run on the host
    for concrete input: a new observation count compiles only the fit (not one program per eager op), and the grid
    and intervals equal their float32 NumPy constructions."""
    from icmlx.sde import SamplePaths, box_grid, naive_drift, subsample

    rng = np.random.default_rng(3)
    pts = rng.normal(size=(40, 2)).astype(np.float32)
    g = np.asarray(box_grid(pts, 4, pad=0.25))
    lo, hi = pts.min(0) - np.float32(0.25), pts.max(0) + np.float32(0.25)
    ref = np.stack(np.meshgrid(*(np.linspace(lo[i], hi[i], 4) for i in range(2)), indexing="ij"), -1).reshape(-1, 2)
    np.testing.assert_allclose(g, ref, rtol=0, atol=4 * np.finfo(np.float32).eps * float(np.abs(ref).max()))
    # the traced path (under jit) builds the same grid
    np.testing.assert_allclose(np.asarray(jax.jit(lambda p: box_grid(p, 4, pad=0.25))(pts)), g, rtol=0,
                               atol=4 * np.finfo(np.float32).eps * float(np.abs(ref).max()))
    paths = SamplePaths(ts=jnp.arange(31.0), xs=jnp.asarray(rng.normal(size=(2, 31, 2)).astype(np.float32)))
    sub = subsample(paths, 3)
    np.testing.assert_array_equal(np.asarray(sub.xs), np.asarray(paths.xs)[:, ::3])
    np.testing.assert_array_equal(np.asarray(sub.ts), np.arange(31.0)[::3])
    y = np.cumsum(0.3 * rng.normal(size=(60, 2)), 0).astype(np.float32)
    jax.block_until_ready(naive_drift(y, np.arange(60.0), 0.5).drift.weights)
    before = _COMPILES[0]
    est = naive_drift(y[:47], np.arange(47.0), 0.5)  # a new count: the fit's program (one per size) at most
    jax.block_until_ready(est.drift.weights)
    assert _COMPILES[0] - before <= 2, f"{_COMPILES[0] - before} programs compiled for a new number of observations"
    assert bool(jnp.all(jnp.isfinite(est.drift.weights)))
