"""The χ² upper tail for integer dof (structure/_citests/_chi2_tail.py) against SciPy and an exact decimal sum.

Grid: dof 1..40 and 60 log-spaced values up to 10^4; x from 10^-4 k to 10 k and k + sqrt(2k) * [-6, 40] (the bulk,
both tails, p down to the underflow limit). Tolerances: float32 on the device, 32 eps times the tail's own
condition number ``1 + |x - k| / 2`` (the relative change of the tail per relative change of x); float64 (host,
and the device under x64), 2e-11 against SciPy, whose Cephes routine is itself that far off in the far tail at
large dof (checked here against the exact sum, which ours matches to 1e-13).
"""

from decimal import Decimal, getcontext

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx.structure._citests._chi2_tail import chi2_sf, chi2_sf_host


def _grid():
    dofs = np.unique(np.concatenate([np.arange(1, 41), np.round(np.logspace(0, 4, 60)).astype(int)]))
    xs, ks = [], []
    for k in dofs:
        q = np.concatenate([np.logspace(-4, 1, 25) * k, k + np.sqrt(2 * k) * np.linspace(-6, 40, 47)])
        q = q[q > 0]
        xs.append(q)
        ks.append(np.full(q.size, k))
    return np.concatenate(xs), np.concatenate(ks)


def _check(got, ref, rtol, floor):
    m = ref > floor
    assert m.sum() > 3000
    err = np.abs(got[m] - ref[m]) / ref[m]
    i = int(np.argmax(err / np.broadcast_to(rtol, ref.shape)[m]))
    assert np.all(err <= np.broadcast_to(rtol, ref.shape)[m]), (err[i], i)
    assert np.all(got[~m] <= 1e3 * floor)  # below the floor: underflows to (near) zero, never above


def test_float32_device_matches_scipy_to_its_conditioning():
    stats = pytest.importorskip("scipy.stats")
    x, k = _grid()
    xr = np.asarray(jnp.asarray(x, jnp.float32), np.float64)  # SciPy at the float32 input: no input rounding
    ref = stats.chi2.sf(xr, k)
    got = np.asarray(jax.jit(chi2_sf)(jnp.asarray(xr, jnp.float32), jnp.asarray(k, jnp.int32)), np.float64)
    eps = np.finfo(np.float32).eps
    _check(got, ref, 32 * eps * (1 + np.abs(xr - k) / 2), 1e-35)


def test_float64_host_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    x, k = _grid()
    _check(chi2_sf_host(x, k), stats.chi2.sf(x, k), 2e-11, 1e-300)


@pytest.mark.x64
@pytest.mark.x64_only
def test_float64_device_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    x, k = _grid()
    with jax.enable_x64(True):
        got = np.asarray(jax.jit(chi2_sf)(jnp.asarray(x, jnp.float64), jnp.asarray(k, jnp.int64)))
    _check(got, stats.chi2.sf(x, k), 2e-11, 1e-300)


def test_even_dof_matches_the_exact_finite_sum():
    # Q = exp(-x/2) sum_{i < k/2} (x/2)^i / i! in 60-digit decimal arithmetic: independent of both codes
    getcontext().prec = 60
    cases = [(14060.614312133037, 9254), (11577.2, 10000), (2169.03, 1444), (12000.0, 10000), (10000.0, 10000),
             (9000.0, 10000), (0.0038, 38), (30.0, 2), (700.0, 40), (55.5, 56)]
    for x, k in cases:
        t, term, tot = Decimal(x) / 2, Decimal(1), Decimal(1)
        for i in range(1, k // 2):
            term = term * t / i
            tot += term
        ref = float((-t).exp() * tot)
        assert abs(float(chi2_sf_host(x, k)) - ref) <= 1e-13 * ref, (x, k)


def test_edges():
    x = jnp.array([0.0, -1.0, jnp.nan, jnp.inf, 1e30, 3.0, 3.0])
    k = jnp.array([3, 1, 2, 5, 4, 0, -2])
    got = np.asarray(chi2_sf(x, k))
    np.testing.assert_array_equal(got[:2], [1.0, 1.0])
    assert np.isnan(got[2]) and got[3] == 0.0 and got[4] == 0.0
    assert np.all(np.isnan(got[5:]))  # dof <= 0 is not a chi-square law
    host = chi2_sf_host(np.asarray(x, np.float64), np.asarray(k))
    np.testing.assert_array_equal(np.isnan(host), np.isnan(got))
    np.testing.assert_array_equal(np.nan_to_num(host, nan=-1.0), np.nan_to_num(got, nan=-1.0))


def test_vmap_and_jit_agree_with_eager():
    x = jnp.linspace(0.5, 80.0, 12).reshape(3, 4)
    k = jnp.array([[1, 2, 7, 30]] * 3)
    eager = np.asarray(chi2_sf(x, k))
    np.testing.assert_allclose(np.asarray(jax.vmap(chi2_sf)(x, k)), eager, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jax.jit(chi2_sf)(x, k)), eager, rtol=1e-6)
    np.testing.assert_allclose(chi2_sf_host(np.asarray(x, np.float64), np.asarray(k)), eager, rtol=2e-5)
