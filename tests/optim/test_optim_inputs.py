"""Issue #17 for icmlx.optim: defaults that run, errors that name the argument, results that print and plot.

Every check compares against something independent of the code under test: optax's Adam, a NumPy float64 run of
the sweep, closed forms of the schedules and exponents, ``np.polyfit``.
"""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from icmlx.optim import (
    DASH_STATIC_ARGS,
    SweepResult,
    _dash,
    constant,
    cosine_decay,
    dash,
    fit_slopes,
    join,
    linear_decay,
    matrix_inverse_root,
    misspecification_sweep,
    plot_risk_curve,
    plot_schedule,
    polynomial_decay,
    scale_by_dash,
    schedule_table,
    warmup_cosine_decay,
    wsd,
)

# ------------------------------------------------------------------------------------ block_size by backend


def _factor_shapes(tx, params):
    state = tx.init(params)
    inner = state[0] if isinstance(state, tuple) and not hasattr(state, "factors") else state
    return sorted(tuple(f.shape) for f in inner.factors)


def test_default_block_size_is_small_on_cpu():
    assert jax.default_backend() == "cpu"
    params = jnp.ones((2048, 128))
    # 2048 x 128 in 128-blocks: 16 left and 16 right 128 x 128 factors, one stack of 32.
    assert _factor_shapes(scale_by_dash(), params) == [(32, 128, 128)]
    assert _factor_shapes(dash(1e-2), params) == [(32, 128, 128)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the default never warns
        dash(1e-2).init(params)


def test_default_block_size_on_an_accelerator_is_the_papers(monkeypatch):
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    tx = scale_by_dash()  # block size fixed when the transformation is built
    monkeypatch.undo()
    # 2048 x 128 in 1024-blocks: two 1024 x 1024 left factors and two 128 x 128 right factors.
    assert _factor_shapes(tx, jnp.ones((2048, 128))) == [(2, 128, 128), (2, 1024, 1024)]


def test_explicit_large_block_warns_once_on_cpu(monkeypatch):
    monkeypatch.setattr(_dash, "_warned_sides", set())
    params = jnp.ones((2048, 128))
    with pytest.warns(UserWarning, match=r"block_size=1024 gives 1024x1024 .* slow on the CPU backend") as rec:
        dash(1e-2, block_size=1024).init(params)
    assert rec[0].filename == __file__  # points at the user's init call
    assert "block_size=None" in str(rec[0].message) and len(str(rec[0].message).splitlines()) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dash(1e-2, block_size=1024).init(params)  # once per factor side
        dash(1e-2, block_size=256).init(params)  # 256 x 256 factors: fine
        dash(1e-2, block_size=1024).init(jnp.ones((300, 300)))  # factors are 300 x 300: fine


# -------------------------------------------------------------------------------- optax.inject_hyperparams


@pytest.mark.parametrize("factory,name", [(dash, "dash"), (scale_by_dash, "scale_by_dash")])
def test_inject_hyperparams_without_static_args_says_what_to_do(factory, name):
    args = (1e-2,) if factory is dash else ()
    for kwargs in ({"block_size": 4}, {}):  # an explicit block size, and the defaults' integers
        opt = optax.inject_hyperparams(factory)(*args, **kwargs)
        with pytest.raises(ValueError) as err:
            opt.init(jnp.ones((8, 8)))
        msg = str(err.value)
        assert len(msg.splitlines()) == 2
        assert f"optax.inject_hyperparams({name}, static_args=DASH_STATIC_ARGS)" in msg


def test_inject_hyperparams_with_static_args_matches_optax_adam():
    """Before the first preconditioned step DASH's direction is Adam's: compare with optax.adam, lr injected."""
    params = jnp.linspace(-1.0, 1.0, 48).reshape(8, 6)
    grads = [jnp.cos(params * (k + 1.0)) for k in range(4)]
    opt = optax.inject_hyperparams(dash, static_args=DASH_STATIC_ARGS)(
        learning_rate=1e-2, start_preconditioning_step=100, b1=0.9, b2=0.95, grafting="adam",
        graft_bias_correction=True, momentum=0.0)
    s = opt.init(params)
    update = jax.jit(opt.update)
    lr, m, v = 1e-2, 0.0, 0.0
    for k, g in enumerate(grads):
        if k == 2:  # change the injected step size between steps: the same compiled update serves it
            lr = 3e-3
            s.hyperparams["learning_rate"] = jnp.asarray(lr)
        u, s = update(g, s, params)
        # Adam in float64 NumPy (b1 = 0.9, b2 = 0.95, eps = 1e-8)
        gn = np.asarray(g, np.float64)
        m, v = 0.9 * m + 0.1 * gn, 0.95 * v + 0.05 * gn**2
        ref = -lr * (m / (1 - 0.9 ** (k + 1))) / (np.sqrt(v / (1 - 0.95 ** (k + 1))) + 1e-8)
        np.testing.assert_allclose(np.asarray(u), ref, rtol=2e-5, atol=1e-9)


# ----------------------------------------------------------------------------- errors that name the setting


@pytest.mark.parametrize("kwargs,name", [
    ({"learning_rate": -1e-2}, "learning_rate"),
    ({"learning_rate": float("nan")}, "learning_rate"),
    ({"learning_rate": 1e-2, "eps": float("nan")}, "eps"),
    ({"learning_rate": 1e-2, "weight_decay": float("nan")}, "weight_decay"),
    ({"learning_rate": 1e-2, "weight_decay": -0.1}, "weight_decay"),
    ({"learning_rate": 1e-2, "root_epsilon": -1e-6}, "root_epsilon"),
    ({"learning_rate": 1e-2, "root_epsilon": float("nan")}, "root_epsilon"),
    ({"learning_rate": 1e-2, "b1": float("nan")}, "b1"),
    ({"learning_rate": 1e-2, "momentum": float("nan")}, "momentum"),
    ({"learning_rate": 1e-2, "block_size": 0}, "block_size"),
])
def test_dash_misconfiguration_names_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=rf"^(matrix_inverse_root: )?{name} must"):
        dash(**kwargs)


def test_negative_learning_rate_says_dash_descends():
    with pytest.raises(ValueError, match="already descends"):
        dash(-1e-3)


@pytest.mark.parametrize("build,name", [
    (lambda: constant(float("nan")), "value"),
    (lambda: linear_decay(float("nan"), 10), "init_value"),
    (lambda: cosine_decay(1.0, 10, alpha=float("nan")), "alpha"),
    (lambda: warmup_cosine_decay(1.0, 2, 10, exponent=float("nan")), "exponent"),
    (lambda: matrix_inverse_root(np.eye(2, dtype=np.float32), 2, epsilon=-1.0), "epsilon"),
])
def test_schedule_and_root_misconfiguration_names_the_parameter(build, name):
    with pytest.raises(ValueError, match=rf"^(matrix_inverse_root: )?{name} must"):
        build()


# ------------------------------------------------------------------------------------------ floor warnings


@pytest.mark.parametrize("build,match", [
    (lambda: cosine_decay(1.0, 100, alpha=0.1), r"alpha=0.1 keeps a floor of 10% .* past ~32x"),
    (lambda: linear_decay(1.0, 100, end_value=0.05), r"floor of 5% .* past ~89x"),
    (lambda: wsd(1.0, 100, end_value=0.2), r"wsd: end_value=0.2 keeps a floor of 20%"),
    (lambda: warmup_cosine_decay(1.0, 10, 100, end_value=0.1), r"warmup_cosine_decay: end_value=0.1"),
    (lambda: join([cosine_decay(1.0, 50), constant(0.1)], [50]), r"join: its last schedule keeps a floor"),
    (lambda: linear_decay(0.1, 100, end_value=1.0), r"end_value=1.0 is not below init_value=0.1"),
    (lambda: cosine_decay(1.0, 100, alpha=1.0), r"does not anneal"),
])
def test_floor_schedules_warn_at_construction(build, match):
    # The crossover rho ~ f^(-3/2) in the message: 0.1 -> 32, 0.05 -> 89 (closed form).
    with pytest.warns(UserWarning, match=match) as rec:
        build()
    assert rec[0].filename == __file__


def test_annealed_and_tiny_floor_schedules_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cosine_decay(1.0, 100)
        cosine_decay(1.0, 100, alpha=0.01)  # floor below 5%: its effect starts past rho ~ 1000
        linear_decay(1.0, 100, end_value=1e-4)
        polynomial_decay(1.0, 10, power=0.0)  # documented constant
        wsd(1.0, 100, warmup_steps=10)
        warmup_cosine_decay(1.0, 10, 100)
        join([constant(1.0), linear_decay(1.0, 2)], [2])


# ------------------------------------------------------------- the sweep: inputs, checks, progress, printing


def _numpy_sweep(key, table, rhos, eps, R, diameter=1.0, noise=1.0):
    """Projected SGD in float64 NumPy on the sweep's noise sequence (xi_t = normal(fold_in(key, t), (R,)))."""
    table = np.asarray(table, np.float64)
    S, T = table.shape
    xi = np.stack([np.asarray(jax.random.normal(jax.random.fold_in(key, t), (R,)), np.float64) for t in range(T)])
    out = np.empty((S, len(rhos), len(eps), R))
    for s in range(S):
        for k, rho in enumerate(rhos):
            for e, ep in enumerate(eps):
                x = np.full(R, diameter)
                for t in range(T):
                    x = np.clip(x - rho * table[s, t] * (ep * np.sign(x) + noise * xi[t]), -diameter, diameter)
                out[s, k, e] = ep * np.abs(x)
    return out


def test_sweep_progress_bar_and_same_result(capsys):
    T, R = 41, 5  # 41 steps: 14 pieces of 3, the last one padded
    table = schedule_table([constant(0.2), linear_decay(0.3, T)], T)
    key, rhos, eps = jax.random.key(2), [1.0, 3.0], [0.1, 0.7]
    res = misspecification_sweep(key, np.asarray(table), rhos, eps=np.array(eps), num_replicates=R, progress=True)
    err = capsys.readouterr().err
    assert "misspecification_sweep" in err and "41/41" in err
    ref = _numpy_sweep(key, table, rhos, eps, R)
    tol = 50 * float(np.finfo(np.float32).eps)
    np.testing.assert_allclose(res.errors, ref, rtol=tol, atol=tol)
    misspecification_sweep(key, table, rhos, eps=np.array(eps), num_replicates=R, progress=False)
    assert capsys.readouterr().err == ""
    with pytest.raises(TypeError, match="progress"):
        misspecification_sweep(key, table, rhos, num_replicates=R, progress="yes")


def test_sweep_takes_named_schedules_and_prints_them():
    T, R = 32, 4
    eta = T**-0.5
    scheds = {"linear": linear_decay(eta, T), "cosine": cosine_decay(eta, T), "constant": constant(eta)}
    res = misspecification_sweep(jax.random.key(0), scheds, jnp.array([1.0, 4.0, 16.0]), num_replicates=R,
                                 total_steps=T)
    t = np.arange(T)
    ref_table = np.stack([eta * (1 - t / T), eta * np.sin(np.pi / 2 * (1 - t / T)) ** 2, np.full(T, eta)])
    ref = _numpy_sweep(jax.random.key(0), ref_table, [1.0, 4.0, 16.0], np.asarray(res.eps), R)
    np.testing.assert_allclose(res.errors, ref, rtol=1e-4, atol=1e-6)
    assert res.labels == ("linear", "cosine", "constant")
    np.testing.assert_allclose(res.tail_degrees, [1.0, 2.0, 0.0], atol=0.02)  # closed-form tail degrees
    text = repr(res)
    lines = text.splitlines()
    assert lines[0].startswith("SweepResult: worst case W(rho)") and "3 schedules x 3 rhos" in lines[0]
    assert lines[1].split() == ["rho", "1", "4", "16"]
    assert lines[2].split()[0] == "linear" and lines[4].split()[0] == "constant"
    np.testing.assert_allclose([float(v) for v in lines[4].split()[1:]], ref.mean(-1).max(-1)[2], rtol=2e-3)


def test_slope_fit_prints_labels_slopes_intervals_and_predictions():
    """Errors exactly c * rho^b: the printed slopes are b, next to the closed-form 1/(2p+1)."""
    rhos = jnp.array([1.0, 2.0, 4.0, 8.0, 16.0])
    eps = jnp.array([0.5, 1.0])
    b = jnp.array([1 / 3, 0.2, 1.0])
    errors = jnp.broadcast_to(rhos[None, :, None, None] ** b[:, None, None, None] * eps[None, None, :, None],
                              (3, 5, 2, 6))
    res = SweepResult(errors=errors, rhos=rhos, eps=eps, worst=errors.mean(-1).max(-1),
                      worst_eps_index=jnp.ones((3, 5), jnp.int32), labels=("linear", "cosine", "constant"),
                      tail_degrees=(1.0, 2.0, 0.0))
    fit = fit_slopes(jax.random.key(0), res, fit_range=(2.0, 16.0), num_resamples=10)
    lines = repr(fit).splitlines()
    assert "rho in [2, 16]" in lines[0] and "95%" in lines[0] and "10 resamples" in lines[0]
    assert lines[1].split()[:2] == ["schedule", "slope"] and "predicted" in lines[1]
    rows = {ln.split()[0]: ln.split() for ln in lines[2:]}
    assert set(rows) == {"linear", "cosine", "constant"}
    assert rows["linear"][1] == "0.333" and rows["linear"][2:4] == ["[0.333,", "0.333]"]
    assert rows["cosine"][1] == "0.200" and rows["cosine"][-1] == "0.200"  # 1/(2*2+1)
    assert rows["constant"][1] == "1.000" and rows["constant"][-1] == "1.000"
    # A sweep built from a table has no names: rows are numbered.
    plain = SweepResult(errors=errors, rhos=rhos, eps=eps, worst=res.worst, worst_eps_index=res.worst_eps_index)
    assert "schedule 2" in repr(fit_slopes(jax.random.key(0), plain, fit_range=(2.0, 16.0), num_resamples=10))


def test_sweep_value_checks_run_on_the_host_and_under_jit():
    table = schedule_table([constant(0.1)], 10)
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="every entry of rhos must be finite and > 0"):
        misspecification_sweep(key, table, np.array([1.0, -2.0]), num_replicates=2)
    with pytest.raises(ValueError, match="every entry of eps must be finite"):
        misspecification_sweep(key, table, [1.0], eps=[0.1, float("nan")], num_replicates=2)
    with pytest.raises(ValueError, match="table must be finite and >= 0"):
        misspecification_sweep(key, -table, [1.0], num_replicates=2)
    run = jax.jit(lambda r: misspecification_sweep(key, table, r, num_replicates=2).worst)
    with pytest.raises(Exception, match="rhos must be finite and > 0"):
        jax.block_until_ready(run(jnp.array([1.0, -2.0])))
    with pytest.raises(ValueError, match="labels must name the 1 schedules"):
        misspecification_sweep(key, table, [1.0], num_replicates=2, labels=("a", "b"))
    # Defaults that run on the schedules alone: rhos 1..64 cover fit_slopes' default fit_range (4, 64).
    fit = fit_slopes(jax.random.key(1), misspecification_sweep(key, [linear_decay(0.1, 16)], num_replicates=2),
                     num_resamples=4)
    np.testing.assert_allclose(
        misspecification_sweep(key, [linear_decay(0.1, 16)], num_replicates=2).rhos, 2.0 ** np.arange(7))
    assert np.isfinite(np.asarray(fit.slope)).all()
    with pytest.raises(ValueError, match="no horizon"):
        misspecification_sweep(key, [constant(0.1)], [1.0], num_replicates=2)


def test_matrix_inverse_root_nan_is_a_value_error_on_the_host():
    a = np.eye(3, dtype=np.float32)
    a[0, 1] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        matrix_inverse_root(a, 2)
    with pytest.raises(Exception, match="non-finite"):
        jax.block_until_ready(jax.jit(lambda m: matrix_inverse_root(m, 2).value)(jnp.asarray(a)))


# ---------------------------------------------------------------------------------------------------- plots


@pytest.fixture
def plt():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield plt
    plt.close("all")


def test_plot_schedule_draws_the_closed_form(plt):
    T = 50
    ax = plot_schedule(linear_decay(2.0, T), T)
    (line,) = ax.get_lines()
    np.testing.assert_array_equal(line.get_xdata(), np.arange(T))
    np.testing.assert_allclose(line.get_ydata(), 2.0 * (1 - np.arange(T) / T), rtol=1e-6)
    _, given = plt.subplots()
    assert plot_schedule(optax.constant_schedule(0.5), 3, ax=given) is given
    np.testing.assert_allclose(given.get_lines()[0].get_ydata(), 0.5)
    with pytest.raises(ValueError, match="num_steps"):
        plot_schedule(linear_decay(1.0, 5), 0)


@pytest.mark.slow  # runs a misspecification sweep to draw it; the sweep's numbers are checked by the default tests
def test_plot_risk_curve_draws_worst_and_fitted_lines(plt):
    T = 64
    scheds = {"linear": linear_decay(T**-0.5, T), "constant": constant(T**-0.5)}
    rhos = jnp.array([1.0, 2.0, 4.0, 8.0, 16.0])
    res = misspecification_sweep(jax.random.key(0), scheds, rhos, num_replicates=16, total_steps=T)
    ax = plot_risk_curve(res)
    lines = ax.get_lines()
    assert [ln.get_label() for ln in lines] == ["linear", "constant"]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    for s, ln in enumerate(lines):
        np.testing.assert_allclose(ln.get_xdata(), np.asarray(rhos))
        np.testing.assert_allclose(ln.get_ydata(), np.asarray(res.worst[s]))
    fit = fit_slopes(jax.random.key(1), res, fit_range=(2.0, 16.0), num_resamples=20)
    ax = plot_risk_curve(res, fit=fit)
    data, fitted = ax.get_lines()[0::2], ax.get_lines()[1::2]
    assert len(data) == len(fitted) == 2
    x = np.log(np.asarray(rhos)[1:])
    for s in range(2):
        b, a = np.polyfit(x, np.log(np.asarray(res.worst[s], np.float64)[1:]), 1)  # independent OLS
        assert f"slope {b:.2f}" in data[s].get_label()
        np.testing.assert_allclose(fitted[s].get_xdata(), [2.0, 16.0])
        np.testing.assert_allclose(fitted[s].get_ydata(), np.exp(a) * np.array([2.0, 16.0]) ** b, rtol=1e-4)
        assert fitted[s].get_linestyle() == "--"
    with pytest.raises(ValueError, match="fit has 1 schedules"):
        plot_risk_curve(res, fit=fit_slopes(jax.random.key(1), misspecification_sweep(
            jax.random.key(0), [linear_decay(0.1, T)], rhos, num_replicates=4), fit_range=(2.0, 16.0),
            num_resamples=5))
