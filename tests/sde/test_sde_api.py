"""The icmlx.sde API after "one library, one API": deprecated aliases warn and give the same numbers as the new
names, guidance strategy objects are hashable and validate their settings, and results carry icmlx.RESULTS."""

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
    with pytest.warns(DeprecationWarning, match="'DriftInference' is deprecated.*'DriftSolution'"):
        assert sde.DriftInference is sde.DriftSolution
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
    with pytest.raises(TypeError, match="GeodesicGuidance"):
        infer_drift(jax.random.key(0), y, ts, 0.3, guidance=GeodesicGuidance(), strength=1.0)


def test_new_signatures():
    params = inspect.signature(infer_drift).parameters
    assert list(params)[:4] == ["key", "observations", "ts", "sigma"]
    for name in ("num_steps", "num_particles", "num_time_steps", "num_paths", "guidance"):
        assert name in params
    assert params["throw"].default is True
    assert list(inspect.signature(conservative_drift).parameters)[:3] == ["observations", "ts", "sigma"]
    assert list(inspect.signature(naive_drift).parameters)[:3] == ["observations", "ts", "sigma"]


def test_renamed_keywords_warn_and_agree(walk):
    y, _ = walk
    pts = y.reshape(-1, 2)
    with pytest.warns(DeprecationWarning, match="'n_per_dim' is deprecated.*'num_per_dim'"):
        old = box_grid(pts, n_per_dim=4)
    np.testing.assert_array_equal(np.asarray(old), np.asarray(_no_warnings(box_grid, pts, num_per_dim=4)))
    with pytest.warns(DeprecationWarning, match="'n_per_dim'"):
        old = default_function_class(pts, n_per_dim=5)
    new = _no_warnings(default_function_class, pts, num_per_dim=5)
    np.testing.assert_array_equal(np.asarray(old.basis.centers), np.asarray(new.basis.centers))
    with pytest.warns(DeprecationWarning, match="'k_neighbors'"):
        old = geodesic_targets(y, 4, n_nodes=20, k_neighbors=4)
    np.testing.assert_array_equal(
        np.asarray(old), np.asarray(_no_warnings(geodesic_targets, y, num_time_steps=4, num_nodes=20,
                                                 num_neighbors=4)))
    with pytest.raises(TypeError, match="both"):
        box_grid(pts, n_per_dim=4, num_per_dim=4)


def test_smc_bridges_renamed_keywords_warn_and_agree(walk):
    y, _ = walk
    a, b, taus = y[0, :-1], y[0, 1:], jnp.ones(10)
    drift = lambda x: -x
    with pytest.warns(DeprecationWarning, match="'n_particles'"):
        old = smc_bridges(jax.random.key(3), drift, 0.3, a, b, taus, n_particles=8, n_steps=4, n_paths=2)
    new = _no_warnings(smc_bridges, jax.random.key(3), drift, 0.3, a, b, taus, num_particles=8,
                       num_time_steps=4, num_paths=2)
    np.testing.assert_array_equal(np.asarray(old.paths), np.asarray(new.paths))
    np.testing.assert_array_equal(np.asarray(old.log_evidence), np.asarray(new.log_evidence))


@pytest.mark.x64
def test_conservative_old_two_argument_call_warns_and_agrees(walk):
    y, ts = walk
    new = _no_warnings(conservative_drift, y, ts, 0.3)
    with pytest.warns(DeprecationWarning, match=r"conservative_drift\(observations, ts, sigma\)"):
        old = conservative_drift(y, 0.3)
    with pytest.warns(DeprecationWarning, match="conservative_drift"):
        old_kw = conservative_drift(y, sigma=0.3)
    none_ts = _no_warnings(conservative_drift, y, None, 0.3)
    for est in (old, old_kw, none_ts):
        np.testing.assert_array_equal(np.asarray(est.drift.weights), np.asarray(new.drift.weights))
    assert new.num_samples == 22
    with pytest.warns(DeprecationWarning, match="'n_samples' is deprecated.*'num_samples'"):
        assert new.n_samples == 22
    with pytest.warns(DeprecationWarning):
        with pytest.raises(ValueError, match="sigma"):
            conservative_drift(y, 0.0)  # the old call keeps its validation


def test_infer_drift_old_names_warn_and_agree(walk):
    y, ts = walk
    start = naive_drift(y, ts, 0.3).drift
    new = _no_warnings(
        infer_drift, jax.random.key(1), y, ts, 0.3, init=start,
        guidance=GeodesicGuidance(strength=2.0, num_nodes=20, num_neighbors=4), **TINY)
    with pytest.warns(DeprecationWarning) as record:
        old = infer_drift(jax.random.key(1), y, ts, 0.3, init=start, guidance="geodesic", strength=2.0, n_nodes=20,
                          k_neighbors=4, n_iters=1, n_particles=8, n_steps=4)
    text = " ".join(str(w.message) for w in record)
    for name in ("n_iters", "n_particles", "n_steps", "strength", "k_neighbors", "GeodesicGuidance"):
        assert name in text, (name, text)
    np.testing.assert_array_equal(np.asarray(old.drift.weights), np.asarray(new.drift.weights))
    np.testing.assert_array_equal(np.asarray(old.history.loss), np.asarray(new.history.loss))
    with pytest.warns(DeprecationWarning, match="'n_degenerate' is deprecated.*'num_degenerate'"):
        np.testing.assert_array_equal(np.asarray(new.history.n_degenerate), np.asarray(new.history.num_degenerate))
    # guidance="none" ignored the strength flag before; it still does, with a warning
    plain = _no_warnings(infer_drift, jax.random.key(1), y, ts, 0.3, init=start, guidance=NoGuidance(), **TINY)
    with pytest.warns(DeprecationWarning, match="strength"):
        old_plain = infer_drift(jax.random.key(1), y, ts, 0.3, init=start, guidance="none", strength=2.0, **TINY)
    np.testing.assert_array_equal(np.asarray(old_plain.drift.weights), np.asarray(plain.drift.weights))
    # the shorthand strings mean the default objects
    short = _no_warnings(infer_drift, jax.random.key(1), y, ts, 0.3, init=start, guidance="none", **TINY)
    np.testing.assert_array_equal(np.asarray(short.drift.weights), np.asarray(plain.drift.weights))
    assert isinstance(plain, icmlx.Solution) and bool(plain.result == icmlx.RESULTS.successful)
    assert set(plain.stats) == {"num_steps", "loss", "ess_median", "ess_min", "drift_change", "num_degenerate"}
    assert eqx.tree_equal(plain.value, plain.drift)
