"""Tests for the misspecification sweep (icmlx.optim._robustness) and the annealing example's claim."""

import importlib.util
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx.optim import (
    SlopeFitResult,
    SweepResult,
    constant,
    fit_slopes,
    linear_decay,
    misspecification_sweep,
    schedule_table,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "annealing_robustness.py"


def _load_example():
    spec = importlib.util.spec_from_file_location("annealing_robustness", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses in the example look their module up here
    spec.loader.exec_module(mod)
    return mod


def test_sweep_matches_numpy_reference():
    """Projected SGD in float64 NumPy on the same noise sequence gives the same final errors."""
    T, R = 40, 6
    table = schedule_table([constant(0.2), linear_decay(0.3, T)], T)
    rhos = jnp.array([1.0, 3.0])
    eps = jnp.array([0.1, 0.7])
    key = jax.random.key(3)
    res = misspecification_sweep(key, table, rhos, eps=eps, num_replicates=R, diameter=1.5, noise=0.8)
    # the sweep draws xi_t = normal(fold_in(key, t), (R,)); reproduce that noise, then run NumPy SGD
    xi = np.stack([np.asarray(jax.random.normal(jax.random.fold_in(key, t), (R,))) for t in range(T)])
    tab = np.asarray(table, np.float64)
    ref = np.empty((2, 2, 2, R))
    for s in range(2):
        for k, rho in enumerate([1.0, 3.0]):
            for e, ep in enumerate([0.1, 0.7]):
                x = np.full(R, 1.5)
                for t in range(T):
                    g = ep * np.sign(x) + 0.8 * xi[t].astype(np.float64)
                    x = np.clip(x - rho * tab[s, t] * g, -1.5, 1.5)
                ref[s, k, e] = ep * np.abs(x)
    tol = 50 * float(np.finfo(np.asarray(res.errors).dtype).eps)
    np.testing.assert_allclose(res.errors, ref, rtol=tol, atol=tol)
    np.testing.assert_allclose(res.worst, ref.mean(-1).max(-1), rtol=tol, atol=tol)
    np.testing.assert_array_equal(res.worst_eps_index, ref.mean(-1).argmax(-1))


def test_fit_slopes_recovers_power_law():
    """Synthetic errors exactly c * rho^0.3 (no noise) give slope 0.3 and a degenerate interval."""
    rhos = jnp.array([1.0, 2.0, 4.0, 8.0, 16.0])
    eps = jnp.array([0.5, 1.0])
    base = rhos[None, :, None, None] ** jnp.array([0.3, 1.0])[:, None, None, None]
    errors = jnp.broadcast_to(base * eps[None, None, :, None], (2, 5, 2, 10))
    res = SweepResult(errors=errors, rhos=rhos, eps=eps, worst=errors.mean(-1).max(-1),
                      worst_eps_index=jnp.ones((2, 5), jnp.int32))
    fit = fit_slopes(jax.random.key(0), res, fit_range=(2.0, 16.0), num_resamples=20)
    assert isinstance(fit, SlopeFitResult) and fit.boot.shape == (20, 2)
    np.testing.assert_allclose(fit.slope, [0.3, 1.0], rtol=1e-5)
    np.testing.assert_allclose(fit.lower, [0.3, 1.0], rtol=1e-5)
    np.testing.assert_allclose(fit.upper, [0.3, 1.0], rtol=1e-5)
    with pytest.raises(ValueError, match="two rhos"):
        fit_slopes(jax.random.key(0), res, fit_range=(100.0, 200.0))


def test_sweep_bad_input():
    table = schedule_table([constant(0.1)], 10)
    with pytest.raises(ValueError, match="num_replicates"):
        misspecification_sweep(jax.random.key(0), table, jnp.array([1.0]), num_replicates=0)
    with pytest.raises(Exception, match="rhos must be finite and > 0"):
        misspecification_sweep(jax.random.key(0), table, jnp.array([1.0, -2.0]), num_replicates=2)
    with pytest.raises(ValueError, match="total_steps"):
        schedule_table([constant(0.1)], 0)


def test_sweep_compiles_once():
    from icmlx.optim import _robustness

    table = schedule_table([constant(0.1), linear_decay(0.1, 16)], 16)
    misspecification_sweep(jax.random.key(0), table, jnp.array([1.0, 2.0]), num_replicates=4)
    n = _robustness._sweep._cached._cache_size()
    misspecification_sweep(jax.random.key(1), table * 0.5, jnp.array([3.0, 5.0]), num_replicates=4)
    assert _robustness._sweep._cached._cache_size() == n


def test_removed_names_are_errors():
    """n_replicates, n_boot and the (result, key) order of fit_slopes are gone."""
    table = schedule_table([constant(0.1), linear_decay(0.1, 32)], 32)
    rhos = jnp.array([1.0, 2.0, 4.0, 8.0])
    key = jax.random.key(3)
    with pytest.raises(TypeError, match="n_replicates"):
        misspecification_sweep(key, table, rhos, n_replicates=6)
    new = misspecification_sweep(key, table, rhos, num_replicates=6)
    with pytest.raises(TypeError, match="n_boot"):
        fit_slopes(jax.random.key(4), new, fit_range=(1.0, 8.0), n_boot=12)
    with pytest.raises(TypeError, match="SweepResult"):
        fit_slopes(new, jax.random.key(4), fit_range=(1.0, 8.0), num_resamples=12)
    with pytest.raises(ValueError, match="num_resamples"):
        fit_slopes(jax.random.key(4), new, fit_range=(1.0, 8.0), num_resamples=0)


@pytest.fixture(scope="module")
def quick_run(optimized_compilation):
    ex = _load_example()
    with optimized_compilation():  # the example's Monte Carlo sweep runs long compiled loops
        rows, res, fit, _ = ex.run(ex.QUICK, seed=0)
    return ex, {r["schedule"]: r for r in rows}, res


def test_quick_slopes_ordering(quick_run):
    """Quick scale of the example: annealed slopes <= 0.5, constant/inv-sqrt and the floored control >= 0.9.

    The control (cosine that stops at 10%) shows the test can fail: a schedule that does not anneal to zero
    loses the robustness, exactly as the theory says.
    """
    _, by, _ = quick_run
    for name in ["linear (p=1)", "poly p=2", "cosine", "poly p=3", "WSD 20% linear", "10% warmup + cosine"]:
        assert by[name]["slope"] <= 0.5, (name, by[name]["slope"])
    for name in ["constant", "inverse-sqrt", "cosine 10% floor (control)"]:
        assert by[name]["slope"] >= 0.9, (name, by[name]["slope"])
    assert by["constant"]["slope"] - by["cosine"]["slope"] >= 0.5


def test_quick_mechanism(quick_run):
    """Worst-case scale grows with rho for annealed schedules and is pinned at the grid edge for constant."""
    ex, _, res = quick_run
    names = [n for n, _, _ in ex.build_schedules(ex.QUICK.total_steps)]
    idx = np.asarray(res.worst_eps_index)
    in_fit = np.asarray(res.rhos) >= ex.QUICK.fit_range[0]
    n_eps = res.eps.shape[0]
    for name in ["linear (p=1)", "poly p=2", "cosine", "poly p=3"]:
        row = idx[names.index(name)][in_fit]
        assert (np.diff(row) >= 0).all() and row[-1] > row[0], (name, row)
    assert (idx[names.index("constant")] == n_eps - 1).all()


@pytest.mark.slow
def test_full_scale_slopes_match_theory():
    """Full scale (T=16384, R=1024, rho in [4, 64]): |slope - 1/(2p+1)| <= 0.05 (about a minute)."""
    ex = _load_example()
    rows, _, _, _ = ex.run(ex.FULL, seed=0)
    by = {r["schedule"]: r for r in rows}
    for name, pred in [("linear (p=1)", 1 / 3), ("poly p=2", 1 / 5), ("cosine", 1 / 5), ("poly p=3", 1 / 7)]:
        assert abs(by[name]["slope"] - pred) <= 0.05, (name, by[name]["slope"])
    for name in ["constant", "inverse-sqrt", "cosine 10% floor (control)"]:
        assert by[name]["slope"] >= 0.9
