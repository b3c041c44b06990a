"""Bad-input fuzz cases for every public entry point of ``icmlx.sde`` (issue #22).

Each case ends in the right answer (against NumPy/SciPy float64 or a closed form) or a clear error naming the
problem. The cases are built by small helpers below (eager / ``jit`` / ``vmap`` variants of one call); EM drift
inference is expensive, so its cases that compile the EM loop are tiny and marked ``slow``.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

from _harness import Case, assert_good, params, status_of
from icmlx import sde

CASES: list[Case] = []

_rng = np.random.default_rng(0)
WALK = np.cumsum(0.3 * _rng.standard_normal((30, 2)), axis=0).astype(np.float32)  # one trajectory, d = 2
TS = (0.1 * np.arange(30)).astype(np.float32)
SIG = 0.3
GAUSS = (0.5 * _rng.standard_normal((1500, 2))).astype(np.float32)  # N(0, 0.25 I): conservative drift -2 x
PROBE = np.array([[0.5, 0.0], [0.0, -0.3], [0.2, 0.4]], np.float32)
STABLE_A = np.array([[-1.0, 2.0], [-0.5, -1.5]])
SCALE = 1e20

NAN_WORDS = ("nan", "inf", "finite")


def add(name, run, check=None, words=(), **kw):
    CASES.append(Case(f"sde.{name}", run, check, tuple(words), **kw))


def add_ej(name, f, args, check=None, words=(), *, jit=True, jit_slow=True, **kw):
    """An eager case and (unless ``jit=False``) a ``jit`` case of ``f(*args)`` (``args`` traced under jit; the
    ``jit`` case is ``slow`` unless ``jit_slow=False``: each compiles a program of its own)."""
    add(f"{name}.eager", lambda: f(*args), check, words, **kw)
    if jit:
        kw = {**kw, "slow": kw.get("slow", False) or jit_slow}
        add(f"{name}.jit", lambda: jax.jit(f)(*args), check, words, **kw)


def close(ref, rtol=1e-3, atol=1e-4):
    return lambda out: np.allclose(np.asarray(out, np.float64), ref, rtol=rtol, atol=atol)


def raises():
    return None  # no answer is right: the call must raise (or report a failed status)


# --------------------------------------------------------------------------- NumPy references

def np_monomials(x, d, degree):
    exps = [e for e in np.ndindex(*(degree + 1,) * d) if sum(e) <= degree]
    return np.stack([np.prod(np.asarray(x, np.float64) ** np.array(e), axis=-1) for e in exps], -1)


def np_fit(states, incs, dts, sigma, ridge, degree=1):
    """The path-likelihood ridge fit of the _classes module docstring, in float64 NumPy; returns the drift."""
    d = states.shape[-1]
    phi = np_monomials(states, d, degree)
    G = (phi * dts[:, None]).T @ phi + sigma**2 * ridge * np.eye(phi.shape[1])
    W = np.linalg.solve(G, phi.T @ incs)
    return lambda x: np_monomials(x, d, degree) @ W


def np_naive(obs, ts, sigma, ridge=1e-3, degree=1):
    obs = np.asarray(obs, np.float64)
    obs = obs[None] if obs.ndim == 2 else obs
    ts = np.asarray(ts, np.float64)
    dts = np.broadcast_to(np.diff(ts, axis=-1), (obs.shape[0], obs.shape[1] - 1)).reshape(-1)
    states = obs[:, :-1].reshape(-1, obs.shape[-1])
    incs = np.diff(obs, axis=1).reshape(-1, obs.shape[-1])
    return np_fit(states, incs, dts, sigma, ridge, degree)


def poly_ridge(d=2):
    return sde.RidgeRegression(sde.PolynomialBasis(d, 1), ridge=1e-3)


def drift_close(ref_fn, probe=PROBE, rtol=2e-3, atol=2e-3):
    ref = ref_fn(probe)

    def check(out):
        f = out.drift if hasattr(out, "drift") else out
        return np.allclose(np.asarray(f(jnp.asarray(probe)), np.float64), ref, rtol=rtol, atol=atol)

    return check


def naive_poly(obs, ts, sigma=SIG, d=2):
    return sde.naive_drift(obs, ts, sigma, function_class=poly_ridge(d))


# --------------------------------------------------------------------------- naive_drift

REF_WALK = np_naive(WALK, TS, SIG)
add_ej("naive_drift.valid", lambda o, t: naive_poly(o, t), (WALK, TS), drift_close(REF_WALK))
add("naive_drift.int_observations.eager", lambda: naive_poly(np.round(10 * WALK).astype(np.int32), TS),
    drift_close(np_naive(np.round(10 * WALK), TS, SIG)))
uneven = np.cumsum(0.05 + 0.1 * _rng.random(30)).astype(np.float32)
add("naive_drift.uneven_ts.eager", lambda: naive_poly(WALK, uneven), drift_close(np_naive(WALK, uneven, SIG)))
two = np.stack([WALK, WALK[::-1].copy()])
ts2 = np.stack([TS, 2 * TS])
add("naive_drift.per_trajectory_ts.eager", lambda: naive_poly(two, ts2), drift_close(np_naive(two, ts2, SIG)),
    slow=True)
add("naive_drift.default_class_runs.eager", lambda: sde.naive_drift(WALK, TS, SIG),
    lambda out: np.all(np.isfinite(np.asarray(out.drift(jnp.asarray(PROBE))))), slow=True)
add("naive_drift.float64.eager", lambda: _x64(lambda: np.asarray(naive_poly(
    WALK.astype(np.float64), TS.astype(np.float64)).drift(jnp.asarray(PROBE, jnp.float64)))),
    close(REF_WALK(PROBE), rtol=1e-8, atol=1e-8), marks=(pytest.mark.x64,), slow=True)

nan_obs = WALK.copy()
nan_obs[5, 1] = np.nan
inf_obs = WALK.copy()
inf_obs[3, 0] = np.inf
const_obs = WALK.copy()
const_obs[:, 1] = 2.5
dup_ts = TS.copy()
dup_ts[4] = dup_ts[3]
dec_ts = TS[::-1].copy()
nan_ts = TS.copy()
nan_ts[2] = np.nan

for est_name, est in (
    ("naive_drift", lambda o, t, s=SIG: sde.naive_drift(o, t, s)),
    ("conservative_drift", lambda o, t, s=SIG: sde.conservative_drift(o, t, s)),
):
    add_ej(f"{est_name}.nan_observations", lambda o, t, est=est: est(o, t), (nan_obs, TS), None, NAN_WORDS,
           jit_slow=est_name != "naive_drift")
    add(f"{est_name}.inf_observations.eager", lambda est=est: est(inf_obs, TS), None, NAN_WORDS)
    add_ej(f"{est_name}.constant_coordinate", lambda o, t, est=est: est(o, t), (const_obs, TS), None,
           ("constant",), jit_slow=True)
    add(f"{est_name}.duplicate_ts.eager", lambda est=est: est(WALK, dup_ts), None, ("increasing", "repeated"))
    add(f"{est_name}.decreasing_ts.eager", lambda est=est: est(WALK, dec_ts), None, ("increasing",))
    add(f"{est_name}.nan_ts.eager", lambda est=est: est(WALK, nan_ts), None, ("finite", "nan", "increasing"))
    add(f"{est_name}.ts_wrong_shape.eager", lambda est=est: est(WALK, TS[:-1]), None, ("ts must have shape",))
    add(f"{est_name}.single_time_point.eager", lambda est=est: est(WALK[:1], TS[:1]), None,
        ("at least two", "at least 2"))
    add(f"{est_name}.empty.eager", lambda est=est: est(np.zeros((0, 2), np.float32), TS[:0]), None,
        ("at least two", "at least 2"))
    add(f"{est_name}.ragged_paths.eager", lambda est=est: est([WALK, WALK[:20]], TS), None,
        ("different lengths", "ragged"))
    add(f"{est_name}.four_dim.eager", lambda est=est: est(WALK[None, None], TS), None, ("shape",))
    add(f"{est_name}.complex.eager", lambda est=est: est(WALK.astype(np.complex64), TS), None, ("real",))
    for bad in (0.0, -1.0, np.nan, np.inf):
        add(f"{est_name}.sigma_{bad}.eager", lambda est=est, bad=bad: est(WALK, TS, bad), None, ("sigma",))
    add(f"{est_name}.sigma_vector.eager", lambda est=est: est(WALK, TS, np.ones(2)), None, ("sigma",))
    add(f"{est_name}.sigma_nan_traced.jit", lambda est=est: jax.jit(lambda s: est(WALK, TS, s))(jnp.nan),
        None, ("sigma",), slow=est_name != "naive_drift")
    add(f"{est_name}.class_d_mismatch.eager",
        lambda est_name=est_name: getattr(sde, est_name)(WALK, TS, SIG, function_class=poly_ridge(3)),
        None, ("function_class", "d = 3", "d=3"))
    add(f"{est_name}.class_not_a_class.eager",
        lambda est_name=est_name: getattr(sde, est_name)(WALK, TS, SIG, function_class="rbf"),
        None, ("function_class",))

# --------------------------------------------------------------------------- conservative_drift

add("conservative_drift.gaussian.eager", lambda: sde.conservative_drift(GAUSS, None, 1.0),
    drift_close(lambda x: -2.0 * x, rtol=0.2, atol=0.3), slow=True)
add("conservative_drift.gaussian_scaled_1e20.eager", lambda: sde.conservative_drift(SCALE * GAUSS, None, 1.0),
    lambda out: np.allclose(np.asarray(out.drift(jnp.asarray(SCALE * PROBE))) * SCALE, -2.0 * PROBE,
                            rtol=0.2, atol=0.3), slow=True)
add("conservative_drift.gaussian_scaled_1e-20.eager",
    lambda: sde.conservative_drift(GAUSS / SCALE, None, 1.0),
    lambda out: np.allclose(np.asarray(out.drift(jnp.asarray(PROBE / SCALE))) / SCALE, -2.0 * PROBE,
                            rtol=0.2, atol=0.3), slow=True)
for bad in (0.0, -1.0, np.nan, np.inf):
    add(f"conservative_drift.regularization_{bad}.eager",
        lambda bad=bad: sde.conservative_drift(GAUSS, None, 1.0, regularization=bad), None, ("regularization",))

# --------------------------------------------------------------------------- default_function_class

for bad in (0, -3, 2.5, True):
    add(f"default_function_class.num_per_dim_{bad}.eager",
        lambda bad=bad: sde.default_function_class(WALK, num_per_dim=bad), None, ("num_per_dim",))
add("default_function_class.num_per_dim_huge.eager",
    lambda: sde.default_function_class(np.eye(3, dtype=np.float32), num_per_dim=10**6), None, ("num_per_dim",),
    timeout=10)
eye5 = np.eye(5, dtype=np.float32)
add("default_function_class.d5_is_small.eager", lambda: sde.default_function_class(eye5),
    lambda out: out.basis.centers.shape == (4**5, 5), timeout=20, slow=True)
x9 = _rng.standard_normal((3000, 9)).astype(np.float32)
add("default_function_class.d9_is_small.eager", lambda: sde.default_function_class(x9),
    lambda out: out.basis.centers.shape[0] <= 1024 and float(out.basis.lengthscale) > 0, timeout=20, slow=True)
add("default_function_class.constant.eager", lambda: sde.default_function_class(const_obs), None, ("constant",))
add("default_function_class.nan.eager", lambda: sde.default_function_class(nan_obs), None, NAN_WORDS)
add("default_function_class.single_point.eager", lambda: sde.default_function_class(WALK[:1]), None,
    ("at least 2", "at least two"))
add("default_function_class.scalar.eager", lambda: sde.default_function_class(np.float32(1.0)), None, ("shape",))
for bad in (0.0, -1.0, np.nan, np.inf):
    add(f"default_function_class.lengthscale_factor_{bad}.eager",
        lambda bad=bad: sde.default_function_class(WALK, lengthscale_factor=bad), None, ("lengthscale_factor",))
dup9 = np.repeat(x9[:3], 1000, axis=0)
add("default_function_class.d9_duplicated.eager", lambda: sde.default_function_class(dup9),
    lambda out: float(out.basis.lengthscale) > 0 and np.all(np.isfinite(np.asarray(out.basis.centers))),
    ("duplicate", "distinct"), timeout=20)

# --------------------------------------------------------------------------- box_grid

np_grid = lambda pts, k, pad=0.0: np.stack(
    [m.reshape(-1) for m in np.meshgrid(*[np.linspace(lo - pad, hi + pad, k)
                                          for lo, hi in zip(pts.min(0), pts.max(0))], indexing="ij")], -1)
add_ej("box_grid.valid", lambda p: sde.box_grid(p, 3, 0.5), (WALK,), close(np_grid(WALK.astype(float), 3, 0.5)))
add("box_grid.scaled_1e20.eager", lambda: sde.box_grid(SCALE * WALK, 3),
    close(np_grid(SCALE * WALK.astype(float), 3), rtol=1e-5, atol=0))
add("box_grid.int_points.eager", lambda: sde.box_grid(np.array([[0, 0], [2, 4]]), 3),
    close(np_grid(np.array([[0.0, 0.0], [2.0, 4.0]]), 3)))
for bad in (0, -1, 2.5, None):
    add(f"box_grid.num_per_dim_{bad}.eager", lambda bad=bad: sde.box_grid(WALK, bad), None, ("num_per_dim",))
add("box_grid.huge.eager", lambda: sde.box_grid(np.eye(3, dtype=np.float32), 10**5), None, ("num_per_dim",),
    timeout=10)
add_ej("box_grid.nan_points", lambda p: sde.box_grid(p, 3), (nan_obs,), None, NAN_WORDS)
add("box_grid.empty.eager", lambda: sde.box_grid(np.zeros((0, 2), np.float32), 3), None, ("empty", "points"))
add("box_grid.scalar.eager", lambda: sde.box_grid(np.float32(1.0), 3), None, ("shape", "points"))
add("box_grid.complex.eager", lambda: sde.box_grid(WALK.astype(np.complex64), 3), None, ("real",))
for bad in (np.nan, np.inf, -100.0):
    add(f"box_grid.pad_{bad}.eager", lambda bad=bad: sde.box_grid(WALK, 3, bad), None, ("pad",))
add("box_grid.zero_width.eager", lambda: sde.box_grid(const_obs, 3), None, ("width", "pad", "constant"))
add("box_grid.zero_width_padded.eager", lambda: sde.box_grid(const_obs, 3, 0.5),
    close(np_grid(const_obs.astype(float), 3, 0.5)))

# --------------------------------------------------------------------------- bases


def np_rbf(centers, ls, var=1.0):
    centers = np.asarray(centers, np.float64)
    return lambda x: var * np.exp(-0.5 * np.sum((np.asarray(x, np.float64)[..., None, :] - centers) ** 2, -1) / ls**2)


CENT = np_grid(WALK.astype(float), 3).astype(np.float32)
add_ej("RBFBasis.valid", lambda x: sde.RBFBasis(CENT, 1.5, 2.0)(x), (PROBE,), close(np_rbf(CENT, 1.5, 2.0)(PROBE)))
add("RBFBasis.valid.vmap", lambda: jax.vmap(sde.RBFBasis(CENT, 1.5))(jnp.asarray(PROBE)),
    close(np_rbf(CENT, 1.5)(PROBE)), slow=True)
add("RBFBasis.scaled_1e20.eager", lambda: sde.RBFBasis(SCALE * CENT, 1.5 * SCALE)(SCALE * PROBE),
    close(np_rbf(CENT, 1.5)(PROBE), rtol=1e-4, atol=1e-6))
add("RBFBasis.scaled_1e-20.eager", lambda: sde.RBFBasis(CENT / SCALE, 1.5 / SCALE)(PROBE / SCALE),
    close(np_rbf(CENT, 1.5)(PROBE), rtol=1e-4, atol=1e-6))
add("RBFBasis.far_point.eager", lambda: sde.RBFBasis(CENT, 1.0)(np.array([1e30, 0.0], np.float32)),
    close(np.zeros(len(CENT))))
for bad in (0.0, -1.0, np.nan, np.inf):
    add(f"RBFBasis.lengthscale_{bad}.eager", lambda bad=bad: sde.RBFBasis(CENT, bad), None, ("lengthscale",))
    add(f"RBFBasis.variance_{bad}.eager", lambda bad=bad: sde.RBFBasis(CENT, 1.0, bad), None, ("variance",))
add("RBFBasis.lengthscale_nan.jit", lambda: jax.jit(lambda s: sde.RBFBasis(CENT, s)(PROBE))(jnp.nan), None,
    ("lengthscale",))
add("RBFBasis.centers_1d.eager", lambda: sde.RBFBasis(CENT[:, 0]), None, ("centers",))
add("RBFBasis.centers_nan.eager", lambda: sde.RBFBasis(np.full((3, 2), np.nan, np.float32)), None,
    ("centers",))
add("RBFBasis.centers_empty.eager", lambda: sde.RBFBasis(np.zeros((0, 2), np.float32)), None, ("centers",))
add("RBFBasis.x_wrong_d.eager", lambda: sde.RBFBasis(CENT)(np.zeros(3, np.float32)), None, ("centers", "d ="))

add("FourierBasis.sample_valid.eager", lambda: sde.FourierBasis.sample(jax.random.key(0), 1000, 2, 0.7),
    lambda f: abs(float(np.asarray(f(jnp.zeros(2)) @ f(jnp.array([0.7, 0.0])))) - np.exp(-0.5)) < 0.08, slow=True)
for label, kw in (("m_0", dict(m=0)), ("m_neg", dict(m=-2)), ("d_0", dict(d=0)), ("m_float", dict(m=2.5))):
    args = {"m": 8, "d": 2, **kw}
    add(f"FourierBasis.sample_{label}.eager", lambda args=args: sde.FourierBasis.sample(jax.random.key(0), **args),
        None, tuple(kw))
for bad in (0.0, -1.0, np.nan, np.inf):
    add(f"FourierBasis.sample_lengthscale_{bad}.eager",
        lambda bad=bad: sde.FourierBasis.sample(jax.random.key(0), 8, 2, bad), None, ("lengthscale",))
add("FourierBasis.shape_mismatch.eager", lambda: sde.FourierBasis(jnp.zeros((4, 2)), jnp.zeros(3)), None,
    ("phases", "omegas"))
add("FourierBasis.x_wrong_d.eager",
    lambda: sde.FourierBasis(jnp.zeros((8, 2)), jnp.zeros(8))(np.zeros(3, np.float32)), None, ("d =", "omegas"))

add_ej("PolynomialBasis.valid", lambda x: sde.PolynomialBasis(2, 3)(x), (PROBE,), close(np_monomials(PROBE, 2, 3)))
for label, args in (("d_0", (0, 2)), ("degree_neg", (2, -1)), ("degree_float", (2, 2.5)), ("d_float", (2.0, 2))):
    add(f"PolynomialBasis.{label}.eager", lambda args=args: sde.PolynomialBasis(*args), None, ("d", "degree"))
add("PolynomialBasis.huge.eager", lambda: sde.PolynomialBasis(12, 12), None, ("features", "degree"), timeout=10)
add("PolynomialBasis.x_wrong_d.eager", lambda: sde.PolynomialBasis(2, 1)(np.zeros(3, np.float32)), None,
    ("d = 2", "d=2", "last axis"))

# --------------------------------------------------------------------------- LinearDrift

W3 = jnp.array([[0.5, 0.1], [-1.0, 0.2], [0.3, -0.7]], jnp.float32)
ld_ref = lambda x: np_monomials(x, 2, 1) @ np.asarray(W3, np.float64)
add_ej("LinearDrift.valid", lambda x: sde.LinearDrift(sde.PolynomialBasis(2, 1), W3)(x), (PROBE,),
       close(ld_ref(PROBE)))
add("LinearDrift.valid.vmap", lambda: jax.vmap(sde.LinearDrift(sde.PolynomialBasis(2, 1), W3))(jnp.asarray(PROBE)),
    close(ld_ref(PROBE)))
add("LinearDrift.grid_broadcast.eager",
    lambda: sde.LinearDrift(sde.PolynomialBasis(2, 1), W3)(np.stack([PROBE, PROBE])),
    close(np.stack([ld_ref(PROBE)] * 2)))
add("LinearDrift.nan_state_propagates.eager",
    lambda: sde.LinearDrift(sde.PolynomialBasis(2, 1), W3)(np.array([np.nan, 0.0], np.float32)),
    lambda out: np.all(np.isnan(np.asarray(out))))
add("LinearDrift.x_wrong_d.eager", lambda: sde.LinearDrift(sde.PolynomialBasis(2, 1), W3)(np.zeros(3)), None,
    ("d = 2",))
add("LinearDrift.x_scalar.eager", lambda: sde.LinearDrift(sde.PolynomialBasis(2, 1), W3)(1.0), None, ("shape",))
add("LinearDrift.x_complex.eager",
    lambda: sde.LinearDrift(sde.PolynomialBasis(2, 1), W3)(np.zeros(2, np.complex64)), None, ("real", "complex"))
add("LinearDrift.weights_mismatch.eager", lambda: sde.LinearDrift(sde.PolynomialBasis(2, 1), jnp.zeros((4, 2))),
    None, ("weights",))

# --------------------------------------------------------------------------- RidgeRegression / SparseGP fits

ST, INC = WALK[:-1], np.diff(WALK, axis=0)
DT = np.full(len(ST), 0.1, np.float32)
fit_ref = np_fit(ST.astype(float), INC.astype(float), DT.astype(float), SIG, 1e-3)
add_ej("RidgeRegression.fit_valid", lambda s, i: poly_ridge().fit(s, i, 0.1, SIG), (ST, INC), drift_close(fit_ref))
const_st = np.full_like(ST, 1.5)
add("RidgeRegression.fit_constant_states.eager", lambda: poly_ridge().fit(const_st, np.zeros_like(INC), 0.1, SIG),
    drift_close(lambda x: np.zeros_like(x, np.float64)))
for bad in (0.0, -1.0, np.nan, np.inf):
    add(f"RidgeRegression.ridge_{bad}.eager", lambda bad=bad: sde.RidgeRegression(sde.PolynomialBasis(2, 1), bad),
        None, ("ridge",))
for model_name, model in (("RidgeRegression", poly_ridge),
                          ("SparseGP", lambda: sde.SparseGP(sde.RBFBasis(CENT, 1.0)))):
    for label, call, words in (
        ("nan_states", lambda m: m.fit(nan_obs[:-1], INC, 0.1, SIG), ("states",)),
        ("nan_increments", lambda m: m.fit(ST, np.full_like(INC, np.nan), 0.1, SIG), ("increments",)),
        ("shape_mismatch", lambda m: m.fit(ST, INC[:-1], 0.1, SIG), ("increments", "shape")),
        ("d_mismatch", lambda m: m.fit(np.zeros((29, 3), np.float32), np.zeros((29, 3), np.float32), 0.1, SIG),
         ("d =", "d=", "basis")),
        ("dt_zero", lambda m: m.fit(ST, INC, 0.0, SIG), ("dt",)),
        ("dt_negative", lambda m: m.fit(ST, INC, -DT, SIG), ("dt",)),
        ("dt_nan", lambda m: m.fit(ST, INC, np.nan, SIG), ("dt",)),
        ("sigma_zero", lambda m: m.fit(ST, INC, 0.1, 0.0), ("sigma",)),
        ("sigma_nan", lambda m: m.fit(ST, INC, 0.1, np.nan), ("sigma",)),
        ("weights_negative", lambda m: m.fit(ST, INC, 0.1, SIG, weights=-np.ones(29, np.float32)), ("weights",)),
        ("weights_shape", lambda m: m.fit(ST, INC, 0.1, SIG, weights=np.ones(5, np.float32)), ("weights",)),
        ("states_1d", lambda m: m.fit(ST[:, 0], INC[:, 0], 0.1, SIG), ("states", "shape")),
    ):
        add(f"{model_name}.fit_{label}.eager", lambda call=call, model=model: call(model()), None, words)
add("RidgeRegression.fit_nan_states.jit", lambda: jax.jit(lambda s: poly_ridge().fit(s, INC, 0.1, SIG))(nan_obs[:-1]),
    None, ("states",))
for bad in (-1.0, np.nan, np.inf):
    add(f"SparseGP.jitter_{bad}.eager", lambda bad=bad: sde.SparseGP(sde.RBFBasis(CENT), bad), None, ("jitter",))
add("SparseGP.basis_not_rbf.eager", lambda: sde.SparseGP(sde.PolynomialBasis(2, 1)), None, ("basis", "RBFBasis"))


def np_dtc(states, incs, dt, sigma, centers, ls, jitter):
    k = np_rbf(centers, ls)
    phi = k(states)
    K = k(centers) + jitter * np.eye(len(centers))
    W = np.linalg.solve(dt * phi.T @ phi + sigma**2 * K, phi.T @ incs)
    return lambda x: k(x) @ W


add("SparseGP.fit_valid.eager", lambda: _x64(lambda: sde.SparseGP(sde.RBFBasis(CENT.astype(float), 1.0)).fit(
    ST.astype(float), INC.astype(float), 0.1, SIG)),
    drift_close(np_dtc(ST.astype(float), INC.astype(float), 0.1, SIG, CENT, 1.0, 1e-3), rtol=1e-6, atol=1e-6),
    marks=(pytest.mark.x64,), slow=True)

# --------------------------------------------------------------------------- simulate / subsample

zero = lambda x: jnp.zeros_like(x)
X0 = np.zeros((16, 1), np.float32)
add("simulate.brownian_variance.vmap",
    lambda: jax.vmap(lambda k: sde.simulate(k, zero, 1.0, X0, 1.0, 0.1).xs[:, -1, 0])(
        jax.random.split(jax.random.key(0), 64)),
    lambda out: abs(float(np.var(np.asarray(out))) - 1.0) < 0.2, slow=True, timeout=120)
add("simulate.int_x0.eager", lambda: sde.simulate(jax.random.key(0), zero, 1.0, np.zeros((2, 2), int), 1.0, 0.25),
    lambda p: p.xs.shape == (2, 5, 2) and np.allclose(np.asarray(p.ts), [0, 0.25, 0.5, 0.75, 1.0]), slow=True)
sim = lambda **kw: sde.simulate(jax.random.key(0), zero, 1.0, X0[:2], **{"t1": 1.0, "dt": 0.1, **kw})
for bad in (0.0, -0.1, np.nan, np.inf):
    add(f"simulate.dt_{bad}.eager", lambda bad=bad: sim(dt=bad), None, ("dt",))
    add(f"simulate.t1_{bad}.eager", lambda bad=bad: sim(t1=bad), None, ("t1",))
add("simulate.dt_above_t1.eager", lambda: sim(dt=5.0), None, ("dt", "t1"))
add("simulate.too_many_steps.eager", lambda: sim(t1=1e6, dt=1e-6), None, ("steps", "dt", "save_every"),
    timeout=10)
for bad in (0, -1, 2.5):
    add(f"simulate.save_every_{bad}.eager", lambda bad=bad: sim(save_every=bad), None, ("save_every",))
add("simulate.ts_outside.eager", lambda: sim(ts=np.array([0.0, 2.0])), None, ("ts",))
add("simulate.ts_decreasing.eager", lambda: sim(ts=np.array([0.5, 0.2])), None, ("ts",))
add("simulate.x0_nan.eager", lambda: sde.simulate(jax.random.key(0), zero, 1.0, np.full((2, 2), np.nan), 1.0, 0.1),
    None, NAN_WORDS)
add("simulate.x0_3d.eager", lambda: sde.simulate(jax.random.key(0), zero, 1.0, np.zeros((1, 2, 2)), 1.0, 0.1),
    None, ("x0",))
for bad in (0.0, -1.0, np.nan):
    add(f"simulate.sigma_{bad}.eager", lambda bad=bad: sde.simulate(jax.random.key(0), zero, bad, X0, 1.0, 0.1),
        None, ("sigma",))
add("simulate.drift_d_mismatch.eager",
    lambda: sde.simulate(jax.random.key(0), sde.ou_drift(-np.eye(3)), 1.0, np.zeros((2, 2)), 1.0, 0.1),
    None, ("drift",))
add("simulate.drift_wrong_output.eager",
    lambda: sde.simulate(jax.random.key(0), lambda x: jnp.zeros(3), 1.0, np.zeros((2, 2)), 1.0, 0.1),
    None, ("drift",))
PATHS = sde.SamplePaths(ts=jnp.arange(6.0), xs=jnp.asarray(_rng.standard_normal((2, 6, 2)), jnp.float32))
add("subsample.valid.eager", lambda: sde.subsample(PATHS, 2),
    lambda p: np.allclose(np.asarray(p.xs), np.asarray(PATHS.xs)[:, ::2]) and np.allclose(p.ts, [0, 2, 4]))
add("subsample.numpy_int.eager", lambda: sde.subsample(PATHS, np.int64(2)),
    lambda p: np.allclose(np.asarray(p.ts), [0, 2, 4]))
for bad in (0, -2, 2.5, 6, 100):
    add(f"subsample.every_{bad}.eager", lambda bad=bad: sde.subsample(PATHS, bad), None, ("every",))
add("subsample.not_paths.eager", lambda: sde.subsample(np.zeros((2, 6, 2)), 2), None, ("SamplePaths",))

# --------------------------------------------------------------------------- systems

add_ej("ou_drift.valid", lambda x: sde.ou_drift(STABLE_A)(x), (PROBE.astype(np.float32),),
       close(PROBE @ STABLE_A.T))
add("ou_drift.valid.vmap", lambda: jax.vmap(sde.ou_drift(STABLE_A))(jnp.asarray(PROBE)), close(PROBE @ STABLE_A.T))
add("ou_drift.unstable_is_still_a_drift.eager", lambda: sde.ou_drift(np.eye(2))(PROBE), close(PROBE))
add("ou_drift.not_square.eager", lambda: sde.ou_drift(np.zeros((2, 3))), None, ("square",))
add("ou_drift.nan.eager", lambda: sde.ou_drift(np.full((2, 2), np.nan)), None, NAN_WORDS)
add("ou_drift.complex.eager", lambda: sde.ou_drift(np.eye(2) * 1j), None, ("real", "complex"))
add("ou_drift.x_wrong_d.eager", lambda: sde.ou_drift(STABLE_A)(np.zeros(3, np.float32)), None, ("d = 2", "d=2"))

lyap = lambda A, s: scipy.linalg.solve_continuous_lyapunov(A, -(s**2) * np.eye(len(A)))
A3 = np.array([[-2.0, 1.0, 0.0], [0.0, -1.0, 3.0], [0.0, 0.0, -0.5]])
add_ej("ou_stationary_covariance.valid", lambda A: sde.ou_stationary_covariance(A, 0.7), (A3.astype(np.float32),),
       close(lyap(A3, 0.7), rtol=1e-3, atol=1e-4))
add("ou_stationary_covariance.float64.eager",
    lambda: _x64(lambda: sde.ou_stationary_covariance(A3, 0.7)), close(lyap(A3, 0.7), rtol=1e-10, atol=1e-12),
    marks=(pytest.mark.x64,), slow=True)
for label, A in (("positive_eigenvalue", np.array([[0.5, 1.0], [0.0, -1.0]])),
                 ("rotation", np.array([[0.0, 1.0], [-1.0, 0.0]])),
                 ("zero", np.zeros((2, 2)))):
    add_ej(f"ou_stationary_covariance.{label}", lambda A: sde.ou_stationary_covariance(A, 1.0),
           (A.astype(np.float32),), None, ("stable", "eigenvalue"), jit_slow=label != "positive_eigenvalue")
add("ou_stationary_covariance.not_square.eager", lambda: sde.ou_stationary_covariance(np.zeros((2, 3)), 1.0),
    None, ("square",))
add("ou_stationary_covariance.nan.eager", lambda: sde.ou_stationary_covariance(np.full((2, 2), np.nan), 1.0),
    None, NAN_WORDS)
for bad in (0.0, -1.0, np.nan):
    add(f"ou_stationary_covariance.sigma_{bad}.eager",
        lambda bad=bad: sde.ou_stationary_covariance(STABLE_A, bad), None, ("sigma",))
add("ou_stationary_covariance.huge_d.eager", lambda: sde.ou_stationary_covariance(-np.eye(200), 1.0),
    lambda S: np.allclose(np.asarray(S), 0.5 * np.eye(200), atol=1e-5), ("d =", "d=", "solve_continuous_lyapunov"),
    timeout=30)

add("ring_drift.valid.eager", lambda: sde.ring_drift(2.0)(PROBE),
    close(-PROBE * (np.sum(PROBE**2, -1, keepdims=True) - 1) + 2.0 * np.stack([-PROBE[:, 1], PROBE[:, 0]], -1)))
add("ring_drift.omega_nan.eager", lambda: sde.ring_drift(np.nan), None, ("omega",))
add("ring_drift.x_wrong_d.eager", lambda: sde.ring_drift()(np.zeros((4, 3), np.float32)), None, ("d = 2", "d=2"))
add("van_der_pol_drift.valid.eager", lambda: sde.van_der_pol_drift(2.0)(PROBE),
    close(np.stack([2.0 * (PROBE[:, 0] - PROBE[:, 0] ** 3 / 3 - PROBE[:, 1]), PROBE[:, 0] / 2.0], -1)))
for bad in (0.0, -1.0, np.nan, np.inf):
    add(f"van_der_pol_drift.mu_{bad}.eager", lambda bad=bad: sde.van_der_pol_drift(bad), None, ("mu",))
add("van_der_pol_drift.x_wrong_d.eager", lambda: sde.van_der_pol_drift()(np.zeros(3, np.float32)), None,
    ("d = 2", "d=2"))

# --------------------------------------------------------------------------- metrics


def np_kde(points, grid, h):
    z = (np.asarray(grid, np.float64)[:, None] - np.asarray(points, np.float64)[None]) / h
    k = np.exp(-0.5 * np.sum(z * z, -1)).sum(1)
    return k / k.sum()


GRID = np_grid(WALK.astype(float), 4).astype(np.float32)
scott = np.std(WALK.astype(float), 0) * len(WALK) ** (-1 / 6)
add_ej("kde_weights.valid", lambda p, g: sde.kde_weights(p, g, 1.0), (WALK, GRID), close(np_kde(WALK, GRID, 1.0)))
add("kde_weights.scott.eager", lambda: sde.kde_weights(WALK, GRID), close(np_kde(WALK, GRID, scott)))
add("kde_weights.scaled_1e20.eager", lambda: sde.kde_weights(SCALE * WALK, SCALE * GRID),
    close(np_kde(WALK, GRID, scott), rtol=1e-3, atol=1e-6))
add("kde_weights.grids.vmap", lambda: jax.vmap(lambda g: sde.kde_weights(WALK, g, 1.0))(jnp.stack([GRID, GRID])),
    close(np.stack([np_kde(WALK, GRID, 1.0)] * 2)), slow=True)
add("kde_weights.int_points.eager", lambda: sde.kde_weights(np.round(WALK).astype(np.int32), GRID, 1.0),
    close(np_kde(np.round(WALK), GRID, 1.0)))
for bad in (0.0, -1.0, np.nan, np.inf):
    add(f"kde_weights.bandwidth_{bad}.eager", lambda bad=bad: sde.kde_weights(WALK, GRID, bad), None, ("bandwidth",))
add_ej("kde_weights.nan_points", lambda p: sde.kde_weights(p, GRID, 1.0), (nan_obs,), None, NAN_WORDS,
       jit_slow=False)
add("kde_weights.nan_grid.eager", lambda: sde.kde_weights(WALK, np.full((3, 2), np.nan, np.float32), 1.0), None,
    ("grid",))
add("kde_weights.constant_scott.eager", lambda: sde.kde_weights(const_obs, GRID), None, ("constant", "bandwidth"))
add("kde_weights.single_point_scott.eager", lambda: sde.kde_weights(WALK[:1], GRID), None,
    ("bandwidth", "constant", "at least"))
add("kde_weights.d_mismatch.eager", lambda: sde.kde_weights(WALK, np.zeros((3, 3), np.float32), 1.0), None,
    ("grid", "d ="))
add("kde_weights.points_1d.eager", lambda: sde.kde_weights(WALK[:, 0], GRID, 1.0), None, ("points", "shape"))
add("kde_weights.empty.eager", lambda: sde.kde_weights(np.zeros((0, 2), np.float32), GRID, 1.0), None,
    ("points", "empty", "at least"))

f_true = lambda x: -x
f_off = lambda x: -x + 0.5
for metric in ("rmse", "weighted_rmse"):
    m = getattr(sde, metric)
    add_ej(f"{metric}.offset", lambda o, m=m: m(f_true, f_off, o, grid_size=5), (WALK,), close(0.5, rtol=1e-5))
    add(f"{metric}.offset_scaled_1e20.eager",
        lambda m=m: m(f_true, lambda x: -x + 0.5 * SCALE, SCALE * WALK, grid_size=5),
        lambda out: abs(float(out) / SCALE - 0.5) < 1e-4)
    add(f"{metric}.numpy_drift.eager", lambda m=m: m(lambda x: -np.asarray(x), lambda x: 0.5 - np.asarray(x), WALK,
                                                      grid_size=5), close(0.5, rtol=1e-5))
    add(f"{metric}.wrong_output_shape.eager", lambda m=m: m(f_true, lambda x: jnp.zeros(3), WALK, grid_size=5), None,
        ("f_est",))
    add(f"{metric}.d_mismatch.eager", lambda m=m: m(sde.ou_drift(-np.eye(3)), f_true, WALK, grid_size=5), None,
        ("f_true",))
    add(f"{metric}.nan_estimate.eager", lambda m=m: m(f_true, lambda x: x * jnp.nan, WALK, grid_size=5), None,
        ("f_est",))
    for bad in (0, 1, -1, 2.5):
        add(f"{metric}.grid_size_{bad}.eager", lambda m=m, bad=bad: m(f_true, f_off, WALK, grid_size=bad), None,
            ("grid_size",))
    add(f"{metric}.nan_observations.eager", lambda m=m: m(f_true, f_off, nan_obs, grid_size=5), None, NAN_WORDS)
    add(f"{metric}.constant_observations.eager", lambda m=m: m(f_true, f_off, const_obs, grid_size=5), None,
        ("constant",))
    add(f"{metric}.huge_grid.eager", lambda m=m: m(f_true, f_off, x9, grid_size=20), None, ("grid_size",),
        timeout=20)
add("weighted_rmse.bandwidth_0.eager", lambda: sde.weighted_rmse(f_true, f_off, WALK, bandwidth=0.0), None,
    ("bandwidth",))


def np_metric(points, x, sigma_m, rho):
    diff = np.asarray(points, np.float64) - np.asarray(x, np.float64)
    w = np.exp(-0.5 * np.sum(diff**2, -1) / sigma_m**2)
    return 1.0 / (w @ diff**2 + rho)


add_ej("observation_metric.valid", lambda p, x: sde.observation_metric(p, x, 0.5, 1e-2), (WALK, PROBE[0]),
       close(np_metric(WALK, PROBE[0], 0.5, 1e-2)))
add("observation_metric.points.vmap",
    lambda: jax.vmap(lambda x: sde.observation_metric(WALK, x, 0.5, 1e-2))(jnp.asarray(PROBE)),
    close(np.stack([np_metric(WALK, x, 0.5, 1e-2) for x in PROBE])), slow=True)
add("observation_metric.far_point.eager", lambda: sde.observation_metric(WALK, np.array([1e20, 0.0], np.float32)),
    close(np.full(2, 1e3), rtol=1e-4))
add("observation_metric.degenerate_points.eager",
    lambda: sde.observation_metric(np.ones((5, 2), np.float32), np.ones(2, np.float32), 0.15, 1e-2),
    close(np.full(2, 100.0), rtol=1e-5))
for label, kw, words in (("sigma_m_0", dict(sigma_m=0.0), ("sigma_m",)), ("sigma_m_nan", dict(sigma_m=np.nan),
                         ("sigma_m",)), ("rho_0", dict(rho=0.0), ("rho",)), ("rho_neg", dict(rho=-1.0), ("rho",))):
    add(f"observation_metric.{label}.eager", lambda kw=kw: sde.observation_metric(WALK, PROBE[0], **kw), None, words)
add("observation_metric.nan_points.eager", lambda: sde.observation_metric(nan_obs, PROBE[0]), None, NAN_WORDS)
add("observation_metric.x_wrong_d.eager", lambda: sde.observation_metric(WALK, np.zeros(1, np.float32)), None,
    ("x",))
add("observation_metric.points_1d.eager", lambda: sde.observation_metric(WALK[:, 0], np.zeros(2, np.float32)),
    None, ("points",))
add("observation_metric.empty.eager", lambda: sde.observation_metric(np.zeros((0, 2), np.float32), PROBE[0]),
    None, ("points", "empty", "at least"))

# --------------------------------------------------------------------------- geodesics and guidance

LINE = np.array([[[0.0, 0.0], [1.0, 0.0]]], np.float32)
add_ej("geodesic_targets.two_points_is_the_chord", lambda o: sde.geodesic_targets(o, 4, num_nodes=2), (LINE,),
       close(np.stack([np.linspace(0, 1, 5), np.zeros(5)], -1)[None, None], atol=1e-5), slow=True)
OBS3 = WALK[None, :12]
geo = lambda **kw: sde.geodesic_targets(OBS3, 4, **{"num_nodes": 12, "num_neighbors": 3, **kw})
for label, kw, words in (
    ("num_time_steps_0", dict(num_time_steps=0), ("num_time_steps",)),
    ("num_nodes_1", dict(num_nodes=1), ("num_nodes",)), ("num_nodes_0", dict(num_nodes=0), ("num_nodes",)),
    ("num_neighbors_0", dict(num_neighbors=0), ("num_neighbors",)),
    ("num_neighbors_float", dict(num_neighbors=2.5), ("num_neighbors",)),
    ("max_metric_points_0", dict(max_metric_points=0), ("max_metric_points",)),
    ("sigma_m_0", dict(sigma_m=0.0), ("sigma_m",)), ("sigma_m_nan", dict(sigma_m=np.nan), ("sigma_m",)),
    ("rho_neg", dict(rho=-1.0), ("rho",)), ("rho_inf", dict(rho=np.inf), ("rho",)),
    ("orientation_eps_0", dict(orientation_eps=0.0), ("orientation_eps",)),
    ("orientation_eps_nan", dict(orientation_eps=np.nan), ("orientation_eps",)),
):
    if "num_time_steps" in kw:
        add(f"geodesic_targets.{label}.eager", lambda kw=kw: sde.geodesic_targets(OBS3, **kw), None, words)
    else:
        add(f"geodesic_targets.{label}.eager", lambda kw=kw: geo(**kw), None, words)
add("geodesic_targets.two_dim.eager", lambda: sde.geodesic_targets(WALK, 4), None, ("shape",))
add_ej("geodesic_targets.nan_observations", lambda o: sde.geodesic_targets(o, 4, num_nodes=12, num_neighbors=3),
       (nan_obs[None, :12],), None, NAN_WORDS, jit_slow=True)
add("geodesic_targets.one_observation.eager", lambda: sde.geodesic_targets(WALK[None, :1], 4), None,
    ("at least two", "two observations"))
add("geodesic_targets.int_observations.eager", lambda: sde.geodesic_targets(LINE.astype(np.int32), 4, num_nodes=2),
    close(np.stack([np.linspace(0, 1, 5), np.zeros(5)], -1)[None, None], atol=1e-5), slow=True)
add("geodesic_targets.duplicated_observations.eager",
    lambda: sde.geodesic_targets(np.repeat(LINE, 3, axis=1), 2, num_nodes=6, num_neighbors=2),
    lambda out: np.all(np.isfinite(np.asarray(out))) and np.allclose(np.asarray(out)[0, 2], [[0, 0], [0.5, 0],
                                                                                            [1, 0]], atol=1e-5),
    slow=True)

for label, kw, words in (
    ("strength_neg", dict(strength=-1.0), ("strength",)), ("strength_nan", dict(strength=np.nan), ("strength",)),
    ("strength_inf", dict(strength=np.inf), ("strength",)), ("num_nodes_0", dict(num_nodes=0), ("num_nodes",)),
    ("num_neighbors_0", dict(num_neighbors=0), ("num_neighbors",)),
    ("sigma_m_0", dict(sigma_m=0.0), ("sigma_m",)), ("rho_nan", dict(rho=np.nan), ("rho",)),
    ("rho_inf", dict(rho=np.inf), ("rho",)),
    ("orientation_eps_neg", dict(orientation_eps=-1.0), ("orientation_eps",)),
):
    add(f"GeodesicGuidance.{label}.eager", lambda kw=kw: sde.GeodesicGuidance(**kw), None, words)
add("NoGuidance.targets_valid.eager", lambda: sde.NoGuidance().targets(OBS3, 4),
    lambda out: out[0].shape == (1, 11, 5, 2) and float(out[1]) == 0.0)
add("NoGuidance.targets_two_dim.eager", lambda: sde.NoGuidance().targets(WALK, 4), None, ("observations", "shape"))
add("NoGuidance.targets_bad_steps.eager", lambda: sde.NoGuidance().targets(OBS3, 0), None, ("num_time_steps",))
add("AbstractGuidance.instantiate.eager", lambda: sde.AbstractGuidance(), None, ("abstract",))

# --------------------------------------------------------------------------- smc_bridges

B = 200
A0, B1 = np.zeros((B, 1), np.float32), np.ones((B, 1), np.float32)
TAU = np.ones(B, np.float32)
bridges = lambda **kw: sde.smc_bridges(jax.random.key(0), lambda x: 0.0 * x, 0.5, *(kw.pop("abt", (A0, B1, TAU))),
                                       **{"num_particles": 16, "num_time_steps": 4, "num_paths": 1, **kw})
bridge_status = lambda out: (not bool(np.any(np.asarray(out.degenerate))),
                             "degenerate bridges: every particle weight collapsed (non-finite drift or data)")
# zero drift: a Brownian bridge, midpoint mean (a + b) / 2 = 0.5, sd sigma sqrt(tau / 4) = 0.25 (se 0.018)
add("smc_bridges.brownian_midpoint.eager", lambda: bridges(),
    lambda out: abs(float(np.mean(np.asarray(out.paths)[:, 0, 2, 0])) - 0.5) < 0.08, status=bridge_status,
    slow=True)
add("smc_bridges.keys.vmap", lambda: jax.vmap(lambda k: sde.smc_bridges(
    k, lambda x: 0.0 * x, 0.5, A0[:50], B1[:50], TAU[:50], num_particles=16, num_time_steps=4, num_paths=1
).paths[:, 0, 2, 0])(jax.random.split(jax.random.key(1), 4)),
    lambda out: abs(float(np.mean(np.asarray(out))) - 0.5) < 0.08, slow=True, timeout=120)
add("smc_bridges.int_endpoints.eager", lambda: bridges(abt=(A0.astype(np.int32), B1.astype(np.int32), TAU)),
    lambda out: abs(float(np.mean(np.asarray(out.paths)[:, 0, 2, 0])) - 0.5) < 0.08, status=bridge_status,
    slow=True)
for label, kw, words in (
    ("num_time_steps_1", dict(num_time_steps=1), ("num_time_steps",)),
    ("num_particles_0", dict(num_particles=0), ("num_particles",)),
    ("num_paths_0", dict(num_paths=0), ("num_paths",)),
    ("tau_zero", dict(abt=(A0, B1, 0 * TAU)), ("tau",)),
    ("tau_nan", dict(abt=(A0, B1, np.full(B, np.nan, np.float32))), ("tau",)),
    ("starts_nan", dict(abt=(np.full((B, 1), np.nan, np.float32), B1, TAU)), ("starts",)),
    ("ends_inf", dict(abt=(A0, np.full((B, 1), np.inf, np.float32), TAU)), ("ends",)),
    ("shape_mismatch", dict(abt=(A0, B1[:5], TAU)), ("shape",)),
    ("strength_neg", dict(targets=np.zeros((B, 5, 1), np.float32), strength=-1.0), ("strength",)),
    ("strength_nan", dict(targets=np.zeros((B, 5, 1), np.float32), strength=np.nan), ("strength",)),
    ("targets_shape", dict(targets=np.zeros((B, 3, 1), np.float32), strength=1.0), ("targets",)),
    ("targets_nan", dict(targets=np.full((B, 5, 1), np.nan, np.float32), strength=1.0), ("targets",)),
):
    add(f"smc_bridges.{label}.eager", lambda kw=kw: bridges(**kw), None, words, status=bridge_status)
for bad in (0.0, np.nan):
    add(f"smc_bridges.sigma_{bad}.eager", lambda bad=bad: sde.smc_bridges(jax.random.key(0), lambda x: 0 * x, bad, A0,
                                                                          B1, TAU), None, ("sigma",))
add("smc_bridges.nan_drift.eager",
    lambda: sde.smc_bridges(jax.random.key(0), lambda x: x * jnp.nan, 0.5, A0[:4], B1[:4], TAU[:4],
                            num_particles=8, num_time_steps=4, num_paths=1),
    None, ("degenerate",), status=bridge_status, slow=True)
add("smc_bridges.drift_wrong_shape.eager",
    lambda: sde.smc_bridges(jax.random.key(0), lambda x: jnp.zeros(3), 0.5, A0[:4], B1[:4], TAU[:4]), None,
    ("drift",))
add("smc_bridges.nan_starts.jit",
    lambda: jax.jit(lambda a: sde.smc_bridges(jax.random.key(0), lambda x: 0 * x, 0.5, a, B1[:4], TAU[:4],
                                              num_particles=8, num_time_steps=4, num_paths=1).paths)(
        np.full((4, 1), np.nan, np.float32)), None, ("starts",), slow=True)

# --------------------------------------------------------------------------- infer_drift

EM = dict(guidance="none", num_steps=2, num_particles=8, num_time_steps=4, num_paths=2)
infer = lambda o=WALK[:10], t=TS[:10], s=SIG, **kw: sde.infer_drift(jax.random.key(0), o, t, s, **{**EM, **kw})
for label, kw, words in (
    ("num_steps_0", dict(num_steps=0), ("num_steps",)), ("num_steps_float", dict(num_steps=2.0), ("num_steps",)),
    ("num_particles_0", dict(num_particles=0), ("num_particles",)),
    ("num_paths_neg", dict(num_paths=-1), ("num_paths",)),
    ("num_time_steps_1", dict(num_time_steps=1), ("num_time_steps",)),
    ("guidance_bad", dict(guidance="geodesik"), ("guidance",)),
    ("init_d_mismatch", dict(init=sde.LinearDrift(sde.PolynomialBasis(3, 1), jnp.zeros((4, 3), jnp.float32))),
     ("init",)),
    ("class_d_mismatch", dict(function_class=poly_ridge(3)), ("function_class",)),
    ("class_not_a_class", dict(function_class="rbf"), ("function_class",)),
):
    add(f"infer_drift.{label}.eager", lambda kw=kw: infer(**kw), None, words, status=status_of)
for label, args, words in (
    ("nan_observations", dict(o=nan_obs[:10]), NAN_WORDS), ("constant", dict(o=const_obs[:10]), ("constant",)),
    ("duplicate_ts", dict(t=dup_ts[:10]), ("increasing",)), ("decreasing_ts", dict(t=dec_ts[:10]), ("increasing",)),
    ("single_time_point", dict(o=WALK[:1], t=TS[:1]), ("at least two",)),
    ("ragged", dict(o=[WALK[:10], WALK[:8]]), ("different lengths", "ragged")),
    ("four_dim", dict(o=WALK[None, None, :10]), ("shape",)), ("ts_none", dict(t=None), ("ts",)),
    ("sigma_0", dict(s=0.0), ("sigma",)), ("sigma_nan", dict(s=np.nan), ("sigma",)),
):
    add(f"infer_drift.{label}.eager", lambda args=args: infer(**args), None, words, status=status_of)


@functools.cache
def _tiny_solution():
    return infer(function_class=poly_ridge())


# an OU process dX = -X dt + dW seen at tau = 0.2 (exact transitions): EM recovers the slope -1 roughly
_ou = np.zeros((12, 8, 1))
_ou[:, 0, 0] = _rng.standard_normal(12) * np.sqrt(0.5)
for _k in range(1, 8):
    _ou[:, _k] = _ou[:, _k - 1] * np.exp(-0.2) + np.sqrt(0.5 * (1 - np.exp(-0.4))) * _rng.standard_normal((12, 1))
OU_OBS = _ou.astype(np.float32)
OU_TS = (0.2 * np.arange(8)).astype(np.float32)
add("infer_drift.ou_slope.eager",
    lambda: sde.infer_drift(jax.random.key(0), OU_OBS, OU_TS, 1.0, guidance="none", num_steps=3, num_particles=32,
                            num_time_steps=4, num_paths=4, function_class=sde.RidgeRegression(
                                sde.PolynomialBasis(1, 1), ridge=1e-3)),
    lambda sol: -2.0 < float(sol.drift(jnp.ones(1))[0] - sol.drift(jnp.zeros(1))[0]) < -0.4, ("degenerate",),
    status=status_of, slow=True, timeout=120)
add("infer_drift.tiny_valid.eager", _tiny_solution,
    lambda sol: np.all(np.isfinite(np.asarray(sol.drift(jnp.asarray(PROBE))))), status=status_of, slow=True,
    timeout=120)
add("DriftSolution.drift_at_out_of_range.eager", lambda: _tiny_solution().drift_at(5), None, ("iteration",),
    slow=True, timeout=120)
add("DriftSolution.drift_at_last.eager", lambda: _tiny_solution().drift_at(-1),
    lambda f: np.allclose(np.asarray(f.weights), np.asarray(_tiny_solution().history.weights[-1])), slow=True,
    timeout=120)
add("infer_drift.nan_traced.jit",
    lambda: jax.jit(lambda o: infer(o=o, function_class=poly_ridge()).value.weights)(nan_obs[:10]), None,
    NAN_WORDS, slow=True, timeout=120)
add("infer_drift.nan_drift_init.eager",
    lambda: infer(init=sde.LinearDrift(sde.PolynomialBasis(2, 1), jnp.full((3, 2), jnp.nan, jnp.float32)),
                  function_class=poly_ridge(), throw=False),
    None, ("init", "nan", "nonfinite", "degenerate", "finite"), status=status_of, slow=True, timeout=120)

# --------------------------------------------------------------------------- plots

def _agg(fn):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    try:
        return fn()
    finally:
        plt.close("all")


add("plot_drift.quiver_data.eager", lambda: _agg(lambda: np.asarray(sde.plot_drift(
    sde.ou_drift(STABLE_A), bounds=((-1, 1), (-1, 1)), num_points=3).collections[0].U)),
    close((np_grid(np.array([[-1.0, -1.0], [1.0, 1.0]]), 3) @ STABLE_A.T)[:, 0]))
for label, kw, words in (("num_points_1", dict(num_points=1), ("num_points",)),
                         ("bounds_reversed", dict(bounds=((1, -1), (0, 1))), ("bounds",)),
                         ("bounds_nan", dict(bounds=((np.nan, 1), (0, 1))), ("bounds",)),
                         ("no_bounds", dict(bounds=None), ("bounds",))):
    add(f"plot_drift.{label}.eager", lambda kw=kw: _agg(lambda: sde.plot_drift(
        sde.ou_drift(STABLE_A), **{"bounds": ((-1, 1), (-1, 1)), **kw})), None, words)
add("plot_drift.nan_drift.eager", lambda: _agg(lambda: sde.plot_drift(lambda x: x * jnp.nan,
                                                                      bounds=((-1, 1), (-1, 1)))), None, ("drift",))
add("plot_paths.lines.eager", lambda: _agg(lambda: len(sde.plot_paths(PATHS).lines)), lambda n: n == 2)
add("plot_paths.max_paths_0.eager", lambda: _agg(lambda: sde.plot_paths(PATHS, max_paths=0)), None, ("max_paths",))
add("plot_paths.d3.eager", lambda: _agg(lambda: sde.plot_paths(np.zeros((1, 4, 3)))), None, ("d = 1 or 2",))


def _x64(fn):
    with jax.enable_x64(True):
        return fn()


# appended after the first census (kept last so that the case indices of that run stay valid)
add("SparseGP.fit_constant_states.eager", lambda: _x64(lambda: np.asarray(sde.SparseGP(sde.RBFBasis(
    CENT.astype(float), 1.0)).fit(const_st.astype(float), np.zeros_like(INC, float), 0.1, SIG)(
        jnp.asarray(PROBE, jnp.float64)))), close(np.zeros_like(PROBE, np.float64), atol=1e-12),
    marks=(pytest.mark.x64,), slow=True)
add("RidgeRegression.fit_scaled_1e10.eager", lambda: _x64(lambda: np.asarray(poly_ridge().fit(
    1e10 * ST.astype(float), 1e10 * INC.astype(float), 0.1, 1e10 * SIG)(jnp.asarray(1e10 * PROBE, jnp.float64)))),
    close(np_fit(1e10 * ST.astype(float), 1e10 * INC.astype(float), DT.astype(float), 1e10 * SIG, 1e-3)(
        1e10 * PROBE), rtol=1e-6, atol=0), marks=(pytest.mark.x64,), slow=True)

add("SamplePaths.shape_mismatch.eager", lambda: sde.SamplePaths(ts=jnp.arange(5.0), xs=jnp.zeros((2, 6, 2))), None,
    ("ts", "xs"))
add("SamplePaths.two_dim.eager", lambda: sde.SamplePaths(ts=jnp.arange(6.0), xs=jnp.zeros((6, 2))), None, ("xs",))
add("naive_drift.samplepaths.eager",
    lambda: naive_poly(sde.SamplePaths(ts=jnp.asarray(TS), xs=jnp.asarray(WALK[None])), None),
    drift_close(REF_WALK))


@pytest.mark.parametrize("case", params(CASES))
def test_fuzz(case):
    assert_good(case)
