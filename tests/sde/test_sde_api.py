"""The icmlx.sde API after "one library, one API": the old names are gone (a clear TypeError/AttributeError),
guidance strategy objects are hashable and validate their settings, and results carry icmlx.RESULTS."""

import inspect
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import icmlx
import icmlx.sde as sde
from icmlx.sde import (
    AbstractGuidance,
    GeodesicGuidance,
    NoGuidance,
    box_grid,
    conservative_drift,
    default_function_class,
    geodesic_targets,
    infer_drift,
    naive_drift,
    smc_bridges,
)

#: The tiny EM configuration of tests/sde/test_sde_em.py (shared compiled EM loop: init is always given).
TINY = dict(num_steps=1, num_particles=8, num_time_steps=4)


@pytest.fixture(scope="module")
def walk():
    """A short 2-D random walk as two trajectories of 11 observations, tau = 1."""
    y = jnp.cumsum(0.3 * jax.random.normal(jax.random.key(0), (2, 11, 2)), axis=1)
    return y, jnp.arange(11.0)


def _no_warnings(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        return fn(*args, **kwargs)


def test_results_are_the_library_enumeration():
    assert sde.RESULTS is icmlx.RESULTS
    assert issubclass(sde.DriftSolution, icmlx.Solution)
    with pytest.raises(AttributeError):
        sde.DriftInference  # noqa: B018  (removed: DriftSolution)
    assert "DriftInference" not in sde.__all__
    with pytest.raises(AttributeError):
        sde.NoSuchName  # noqa: B018


@pytest.mark.x64
def test_guidance_objects_are_hashable_static_and_validated():
    g = GeodesicGuidance(strength=2.0, num_nodes=50, num_neighbors=4, orientation_eps=0.5)
    assert hash(g) == hash(GeodesicGuidance(strength=2.0, num_nodes=50, num_neighbors=4, orientation_eps=0.5))
    assert g == GeodesicGuidance(strength=2.0, num_nodes=50, num_neighbors=4, orientation_eps=0.5)
    assert g != GeodesicGuidance(strength=3.0, num_nodes=50, num_neighbors=4, orientation_eps=0.5)
    assert hash(NoGuidance()) == hash(NoGuidance())
    for obj in (g, NoGuidance()):
        assert isinstance(obj, AbstractGuidance)
        assert not callable(obj)
        assert jax.tree_util.tree_leaves(obj) == []  # static fields only: nothing for a transform to trace
    with pytest.raises(TypeError):
        AbstractGuidance()  # abstract
    bad = [
        (dict(strength=-1.0), "strength"),
        (dict(num_nodes=1), "num_nodes"),
        (dict(num_nodes=2.5), "num_nodes"),
        (dict(num_neighbors=0), "num_neighbors"),
        (dict(orientation_eps=0.0), "orientation_eps"),
        (dict(sigma_m=0.0), "sigma_m"),
        (dict(rho=-1.0), "rho"),
    ]
    for kwargs, name in bad:
        with pytest.raises((ValueError, TypeError), match=name):  # TypeError: the test-time beartype check
            GeodesicGuidance(**kwargs)
    with pytest.raises(ValueError, match="strength"):
        GeodesicGuidance(strength=-1.0)  # a well-typed but invalid value is a ValueError naming it


def test_guidance_targets_match_geodesic_targets(walk):
    y, _ = walk
    g = GeodesicGuidance(strength=2.0, num_nodes=20, num_neighbors=4)
    targets, beta = g.targets(y, 4)
    ref = geodesic_targets(y, 4, num_nodes=20, num_neighbors=4)
    np.testing.assert_array_equal(np.asarray(targets), np.asarray(ref))
    assert float(beta) == 2.0
    zeros, beta0 = NoGuidance().targets(y, 4)
    assert zeros.shape == ref.shape and not bool(jnp.any(zeros)) and float(beta0) == 0.0


def test_infer_drift_rejects_bad_guidance(walk):
    y, ts = walk
    with pytest.raises(ValueError, match="guidance"):
        infer_drift(jax.random.key(0), y, ts, 0.3, guidance="score")


def test_new_signatures():
    params = inspect.signature(infer_drift).parameters
    assert list(params)[:4] == ["key", "observations", "ts", "sigma"]
    for name in ("num_steps", "num_particles", "num_time_steps", "num_paths", "guidance"):
        assert name in params
    assert params["throw"].default is True
    assert list(inspect.signature(conservative_drift).parameters)[:3] == ["observations", "ts", "sigma"]
    assert list(inspect.signature(naive_drift).parameters)[:3] == ["observations", "ts", "sigma"]


def test_removed_keywords_are_errors(walk):
    y, ts = walk
    pts = y.reshape(-1, 2)
    with pytest.raises(TypeError, match="n_per_dim"):
        box_grid(pts, 4, n_per_dim=4)
    with pytest.raises(TypeError, match="n_per_dim"):
        default_function_class(pts, n_per_dim=5)
    with pytest.raises(TypeError, match="k_neighbors"):
        geodesic_targets(y, 4, num_nodes=20, k_neighbors=4)
    a, b, taus = y[0, :-1], y[0, 1:], jnp.ones(10)
    with pytest.raises(TypeError, match="n_particles"):
        smc_bridges(jax.random.key(3), lambda x: -x, 0.3, a, b, taus, n_particles=8)
    for kwargs in (dict(n_iters=1), dict(strength=2.0), dict(n_nodes=20)):
        with pytest.raises(TypeError, match=next(iter(kwargs))):
            infer_drift(jax.random.key(0), y, ts, 0.3, **kwargs)
    est = conservative_drift(y, ts, 0.3)
    assert est.num_samples == 22 and not hasattr(est, "n_samples")
    # the two-argument call conservative_drift(observations, sigma) is gone: a number is not a time grid
    with pytest.raises(ValueError, match="ts must have shape"):
        conservative_drift(y, 0.3)


def test_infer_drift_guidance_objects_and_strings(walk):
    y, ts = walk
    start = naive_drift(y, ts, 0.3).drift
    plain = _no_warnings(infer_drift, jax.random.key(1), y, ts, 0.3, init=start, function_class=None,
                         guidance=NoGuidance(), **TINY)
    # the shorthand strings mean the default objects
    short = _no_warnings(infer_drift, jax.random.key(1), y, ts, 0.3, init=start, function_class=None,
                         guidance="none", **TINY)
    np.testing.assert_array_equal(np.asarray(short.drift.weights), np.asarray(plain.drift.weights))
    assert isinstance(plain, icmlx.Solution) and bool(plain.result == icmlx.RESULTS.successful)
    assert set(plain.stats) == {"num_steps", "loss", "ess_median", "ess_min", "drift_change", "num_degenerate"}
    assert eqx.tree_equal(plain.value, plain.drift)
