"""Tests for icmlx.optim schedules: optax conformance, float64 references, invariants, tail degrees, JAX
contracts and validation errors."""

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icmlx import optim
from icmlx.optim import (
    constant,
    cosine_decay,
    inverse_sqrt,
    join,
    linear_decay,
    polynomial_decay,
    robustness_exponent,
    tail_degree,
    warmup,
    warmup_cosine_decay,
    wsd,
)

F32_EPS = float(np.finfo(np.float32).eps)


def _eps():
    return float(np.finfo(jnp.asarray(0.0).dtype).eps)


def _counts(T):
    return jnp.arange(T + 6)


def _fcounts(T):
    # optax's schedules mix int counts with float constants, which strict dtype promotion rejects: give
    # optax float counts (exact for these small integers).
    return jnp.arange(T + 6).astype(jnp.asarray(0.0).dtype)


# ---------------------------------------------------------------------------------------------- optax conformance
# Tolerance: absolute, scaled to init (atol = 16 eps * init). A pure rtol would fail on optax's side: its float32
# cosine cancels catastrophically near T (see tests of the float64 reference below).

HORIZONS = [1, 7, 100, 4096]


@pytest.mark.x64
@pytest.mark.parametrize("T", HORIZONS)
@pytest.mark.parametrize("power", [0.5, 1.0, 2.0, 3.0])
def test_polynomial_matches_optax(T, power):
    init, end = 0.3, 0.01
    ours = polynomial_decay(init, T, power=power, end_value=end)(_counts(T))
    ref = optax.polynomial_schedule(init, end, power, T)(_fcounts(T))
    np.testing.assert_allclose(ours, ref, rtol=0, atol=16 * _eps() * init)


@pytest.mark.parametrize("T", HORIZONS)
def test_linear_matches_optax(T):
    ours = linear_decay(2.0, T)(_counts(T))
    ref = optax.linear_schedule(2.0, 0.0, T)(_fcounts(T))
    np.testing.assert_allclose(ours, ref, rtol=0, atol=16 * _eps() * 2.0)


@pytest.mark.x64
@pytest.mark.parametrize("T", HORIZONS)
@pytest.mark.parametrize("alpha", [0.0, 0.1])
@pytest.mark.parametrize("exponent", [1.0, 2.0])
def test_cosine_matches_optax(T, alpha, exponent):
    init = 0.5
    ours = cosine_decay(init, T, alpha=alpha, exponent=exponent)(_counts(T))
    ref = optax.cosine_decay_schedule(init, T, alpha=alpha, exponent=exponent)(_fcounts(T))
    np.testing.assert_allclose(ours, ref, rtol=0, atol=16 * _eps() * init)


@pytest.mark.parametrize("W,T", [(1, 7), (10, 100), (400, 4096)])
def test_warmup_cosine_matches_optax(W, T):
    ours = warmup_cosine_decay(1.0, W, T, init_value=0.1, end_value=0.01)(_counts(T))
    ref = optax.warmup_cosine_decay_schedule(0.1, 1.0, W, T, end_value=0.01)(_fcounts(T))
    np.testing.assert_allclose(ours, ref, rtol=0, atol=16 * _eps())


def test_join_matches_optax():
    a, b, c = constant(1.0), linear_decay(1.0, 50), cosine_decay(0.5, 30)
    oa, ob, oc = (optax.constant_schedule(1.0), optax.linear_schedule(1.0, 0.0, 50),
                  optax.cosine_decay_schedule(0.5, 30))
    counts = jnp.arange(120)
    ours = join([a, b, c], [10, 60])(counts)
    ref = optax.join_schedules([oa, ob, oc], [10, 60])(counts.astype(jnp.asarray(0.0).dtype))
    np.testing.assert_allclose(ours, ref, rtol=0, atol=16 * _eps())


# ------------------------------------------------------------------------------------ float64 closed-form references


@pytest.mark.x64
def test_cosine_tail_accurate_in_float32():
    """Values near T match a float64 closed form to float32 relative precision (optax's do not)."""
    T = 100_000
    counts = np.array([T - 1000, T - 100, T - 10, T - 1])
    ref = 0.5 * (1 + np.cos(np.pi * counts.astype(np.float64) / T))  # float64 reference
    ours = np.asarray(cosine_decay(jnp.float32(1.0), T)(jnp.asarray(counts, jnp.int32)), np.float64)
    assert ours.dtype == np.float64
    np.testing.assert_allclose(ours, ref, rtol=8 * F32_EPS)


@pytest.mark.x64
@pytest.mark.parametrize("shape,ref", [
    ("linear", lambda v: v),
    ("cosine", lambda v: np.sin(np.pi * v / 2) ** 2),
    ("1-sqrt", lambda v: 1 - np.sqrt(1 - v)),
])
def test_wsd_against_closed_form(shape, ref):
    T, W, frac = 1000, 50, 0.3
    C = round(frac * T)
    s = wsd(2.0, T, warmup_steps=W, cooldown_fraction=frac, cooldown_shape=shape, end_value=0.1,
            warmup_init_value=0.2)
    t = np.arange(T + 5, dtype=np.float64)
    expect = np.where(
        t < W, 0.2 + (2.0 - 0.2) * t / W,
        0.1 + (2.0 - 0.1) * ref(np.clip(T - t, 0, C) / C),
    )
    np.testing.assert_allclose(np.asarray(s(jnp.arange(T + 5)), np.float64), expect,
                               rtol=8 * _eps(), atol=8 * _eps())


def test_inverse_sqrt_closed_form():
    t = np.arange(50, dtype=np.float64)
    np.testing.assert_allclose(inverse_sqrt(0.7, timescale=4.0)(jnp.arange(50)),
                               0.7 / np.sqrt(1 + t / 4.0), rtol=4 * _eps())


def test_warmup_wrapper_closed_form():
    s = warmup(polynomial_decay(1.0, 20, power=2.0), warmup_steps=5, init_value=0.5)
    t = np.arange(30, dtype=np.float64)
    expect = np.where(t < 5, 0.5 + 0.5 * t / 5, np.clip(1 - (t - 5) / 20, 0, 1) ** 2)
    np.testing.assert_allclose(s(jnp.arange(30)), expect, rtol=0, atol=4 * _eps())
    assert s.horizon == 25


# ------------------------------------------------------------------------------------------------------ invariants


def _annealed(kind, T, p):
    if kind == "poly":
        return polynomial_decay(1.0, T, power=p)
    if kind == "cosine":
        return cosine_decay(1.0, T, exponent=p)
    return wsd(1.0, T, cooldown_fraction=min(1.0, 0.1 * p), cooldown_shape="cosine")


_INV_COUNTS = jnp.arange(3010)


@settings(deadline=None, max_examples=15)
@given(kind=st.sampled_from(["poly", "cosine", "wsd"]), T=st.integers(1, 3000),
       p=st.floats(0.5, 4.0))
def test_invariants(kind, T, p):
    s = _annealed(kind, T, p)
    v = np.asarray(s(_INV_COUNTS))[: T + 10]  # one fixed shape for every example: no recompiles
    assert v[0] == 1.0  # starts at init exactly
    assert (v >= 0).all()
    assert (np.diff(v) <= 0).all()  # nonincreasing
    assert (v[T:] == 0.0).all()  # exactly end at and past T
    assert np.asarray(s(10 * T + 7)) == 0.0  # clamped far past T


def test_power_zero_is_constant():
    v = polynomial_decay(0.3, 10, power=0.0)(jnp.arange(15))
    np.testing.assert_array_equal(v, np.full(15, np.float32(0.3)))


def test_wsd_monotone_after_warmup_and_peak():
    s = wsd(1.0, 200, warmup_steps=20, cooldown_fraction=0.25, cooldown_shape="1-sqrt")
    v = np.asarray(s(jnp.arange(205)))
    assert (np.diff(v[:21]) > 0).all()
    assert (np.diff(v[20:]) <= 0).all()
    assert v[20] == 1.0 and v[200] == 0.0


# ---------------------------------------------------------------------------------------------------- tail degree


@pytest.mark.parametrize("sched,p", [
    (linear_decay(1.0, 1000), 1.0),
    (cosine_decay(1.0, 1000), 2.0),
    (polynomial_decay(1.0, 1000, power=3.0), 3.0),
    (cosine_decay(1.0, 1000, exponent=1.5), 3.0),
    (cosine_decay(1.0, 1000, exponent=2.0), 4.0),
    (wsd(1.0, 1000, cooldown_fraction=0.2), 1.0),
    (wsd(1.0, 1000, cooldown_fraction=0.2, cooldown_shape="cosine"), 2.0),
    (wsd(1.0, 1000, cooldown_fraction=0.2, cooldown_shape="1-sqrt"), 1.0),
    (warmup(cosine_decay(1.0, 900), 100), 2.0),
    (warmup_cosine_decay(1.0, 100, 1000), 2.0),
])
def test_tail_degree(sched, p):
    assert abs(tail_degree(sched) - p) <= 0.02
    assert robustness_exponent(tail_degree(sched)) == pytest.approx(1 / (2 * p + 1), abs=0.01)


def test_cosine_tail_constant():
    # h(1 - v) / v^2 -> pi^2 / 4
    T, v = 1000, 1e-3
    h = float(cosine_decay(1.0, T)(T * (1 - v)))
    assert abs(h / v**2 / (math.pi**2 / 4) - 1) < 1e-3


@pytest.mark.parametrize("sched,T", [
    (constant(1.0), 100),
    (inverse_sqrt(1.0), 100),
    (cosine_decay(1.0, 100, alpha=0.1), None),
    (linear_decay(1.0, 100, end_value=0.05), None),
])
def test_tail_degree_warns_without_annealing(sched, T):
    with pytest.warns(UserWarning, match="does not anneal to zero"):
        p = tail_degree(sched, T)
    assert p == 0.0
    assert robustness_exponent(p) == 1.0


def test_tail_degree_needs_horizon():
    with pytest.raises(ValueError, match="total_steps"):
        tail_degree(inverse_sqrt(1.0))


# ---------------------------------------------------------------------------------------------- JAX contracts

ALL = [
    constant(0.1),
    polynomial_decay(0.1, 50, power=2.0),
    linear_decay(0.1, 50),
    cosine_decay(0.1, 50),
    inverse_sqrt(0.1),
    wsd(0.1, 50, warmup_steps=5),
    warmup(cosine_decay(0.1, 40), 10),
    warmup_cosine_decay(0.1, 5, 50),
    join([constant(0.1), linear_decay(0.1, 20)], [10]),
]


@pytest.mark.parametrize("sched", ALL, ids=lambda s: type(s).__name__)
def test_jit_and_vmap(sched):
    counts = jnp.arange(60, dtype=jnp.int32)
    eager = np.asarray([np.asarray(sched(int(c))) for c in counts])
    np.testing.assert_allclose(jax.jit(sched)(counts), eager, rtol=8 * _eps())
    np.testing.assert_allclose(jax.vmap(sched)(counts), eager, rtol=8 * _eps())
    np.testing.assert_allclose(jax.jit(jax.vmap(sched))(counts), eager, rtol=8 * _eps())


@pytest.mark.x64
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dtype_preserved(dtype, x64):
    if dtype == "float64" and not x64:
        pytest.skip("float64 needs JAX_ENABLE_X64=1")
    init = jnp.asarray(0.1, dtype)
    for s in (polynomial_decay(init, 10, 2.0), cosine_decay(init, 10), wsd(init, 10), inverse_sqrt(init),
              constant(init), warmup(cosine_decay(init, 10), 3)):
        assert s(jnp.arange(12)).dtype == jnp.dtype(dtype)
        assert jax.jit(s)(jnp.int32(3)).dtype == jnp.dtype(dtype)


def test_compiles_once():
    s = cosine_decay(0.1, 100)
    f = jax.jit(s)
    f(jnp.int32(1))
    n = f._cache_size()
    for c in range(2, 20):
        f(jnp.int32(c))
    assert f._cache_size() == n


def _quadratic_grad(p):
    return 2.0 * p


def test_in_optax_sgd_against_manual():
    """Each optax SGD step uses lr = sched(count): checked against a float64 NumPy loop."""
    sched = wsd(0.1, 30, warmup_steps=5, cooldown_fraction=0.5)
    opt = optax.sgd(learning_rate=sched)
    p = jnp.array([1.0, -2.0])
    state = opt.init(p)
    ref = np.array([1.0, -2.0])
    for t in range(35):
        g = _quadratic_grad(p)
        upd, state = opt.update(g, state, p)
        p = optax.apply_updates(p, upd)
        ref = ref - float(sched(t)) * 2.0 * ref
    np.testing.assert_allclose(p, ref, rtol=1e-5)


def test_under_inject_hyperparams():
    """The LR logged by inject_hyperparams for update t is sched(t), and the update uses it."""
    sched = cosine_decay(0.2, 10)
    opt = optax.inject_hyperparams(optax.sgd)(learning_rate=sched)
    p = jnp.zeros(3)
    state = opt.init(p)
    step = jax.jit(opt.update)
    g = jnp.array([1.0, -2.0, 0.5])
    for t in range(12):
        upd, state = step(g, state, p)
        lr = float(sched(t))
        np.testing.assert_allclose(state.hyperparams["learning_rate"], lr, rtol=8 * _eps())
        np.testing.assert_allclose(upd, -lr * np.array([1.0, -2.0, 0.5]), rtol=8 * _eps())


# ------------------------------------------------------------------------------------------ validation errors


@pytest.mark.parametrize("make,match", [
    (lambda: polynomial_decay(1.0, 0), "decay_steps"),
    (lambda: polynomial_decay(1.0, -5), "decay_steps=-5"),
    (lambda: polynomial_decay(1.0, 10, power=-1.0), "power=-1.0"),
    (lambda: polynomial_decay(-1.0, 10), "init_value"),
    (lambda: linear_decay(1.0, 10, end_value=-0.1), "end_value"),
    (lambda: cosine_decay(1.0, 0), "decay_steps"),
    (lambda: cosine_decay(1.0, 10, alpha=1.5), "alpha=1.5"),
    (lambda: cosine_decay(1.0, 10, exponent=0.0), "exponent"),
    (lambda: inverse_sqrt(1.0, timescale=0.0), "timescale"),
    (lambda: wsd(1.0, 0), "total_steps"),
    (lambda: wsd(1.0, 100, cooldown_fraction=0.0), "cooldown_fraction=0.0"),
    (lambda: wsd(1.0, 100, cooldown_fraction=1.5), "cooldown_fraction=1.5"),
    (lambda: wsd(1.0, 100, warmup_steps=90, cooldown_fraction=0.2), "total_steps"),
    (lambda: wsd(1.0, 100, warmup_steps=-1), "warmup_steps=-1"),
    (lambda: wsd(1.0, 100, cooldown_shape="exp"), "cooldown_shape='exp'"),
    (lambda: warmup(constant(1.0), 0), "warmup_steps"),
    (lambda: warmup_cosine_decay(1.0, 100, 100), "warmup_steps"),
    (lambda: join([constant(1.0), constant(2.0)], []), "boundaries"),
    (lambda: join([constant(1.0)] * 3, [10, 5]), "strictly increasing"),
    (lambda: robustness_exponent(-1.0), "p=-1.0"),
])
def test_bad_config_raises_valueerror(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_non_int_steps_raise_typeerror():
    with pytest.raises(TypeError, match="decay_steps"):
        polynomial_decay(1.0, 10.5)


def test_public_exports():
    for name in ["constant", "polynomial_decay", "linear_decay", "cosine_decay", "inverse_sqrt", "wsd",
                 "warmup", "join", "tail_degree", "robustness_exponent"]:
        assert name in optim.__all__


def test_tail_degree_removed_kwargs():
    sched = cosine_decay(1.0, 1000)
    with pytest.raises(TypeError, match="'num'"):
        tail_degree(sched, num=8)
    with pytest.raises(TypeError, match="zero_tol"):
        tail_degree(sched, zero_tol=1e-3)
    floored = linear_decay(1.0, 100, end_value=1e-4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tail_degree(floored, rtol=1e-3) > 0.9  # 1e-4 of the peak counts as zero at rtol=1e-3


def test_no_warning_for_annealed():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tail_degree(linear_decay(1.0, 100))
