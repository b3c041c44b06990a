"""Bad-input fuzz cases for every public entry point of ``icmlx.stats`` (issue #22).

Each case calls one entry point the way a careful user would (eagerly, under ``jit``, under ``vmap`` for the
jit-safe functions) with a bad or extreme input, and asserts one of two outcomes: the right answer, checked against
an independent reference (SciPy/statsmodels in float64, a closed form), or an error that names the problem. Data
scaled by a huge or tiny factor (with ``sigma`` scaled alike) must give the same answer as unscaled data. The
default subset keeps the cheapest case of each family; the rest is ``slow`` (``python tests/fuzz/census.py
--only stats`` runs them all).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate
import scipy.optimize
import scipy.stats

import icmlx.stats as st
from _harness import Case, assert_good, params, status_of

F32 = jnp.float32
Z = np.array([0.1, -0.3, 5.0, 0.2, -6.0, 0.0, 1.0, 0.5, -0.4, 0.3, 2.5, -0.8])  # 12 z-scores, 2 clear signals
PV = np.array([0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205, 0.5, 0.9])
NAN, INF = float("nan"), float("inf")
Z_INF = np.r_[Z[:2], np.inf, Z[3:]]

CASES: list[Case] = []


# --- independent references (float64 NumPy / SciPy / statsmodels / closed forms) ---------------------------------


def close(a, b, rtol=2e-5, atol=1e-6):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return a.shape == np.broadcast(a, b).shape and bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=False))


def ref_log_rb(x, g2, s=1.0):
    """log N(x; 0, s^2) - log N(x; 0, s^2 + g2); -inf at |x| = inf (the limit)."""
    x = np.asarray(x, np.float64)
    xf = np.where(np.isinf(x), 0.0, x)
    out = scipy.stats.norm.logpdf(xf, scale=s) - scipy.stats.norm.logpdf(xf, scale=math.sqrt(s * s + g2))
    return np.where(np.isinf(x), -np.inf, out)


def ref_rb_c2(g2, k=1.0, s=1.0):
    g = g2 / s / s
    return (1.0 + 1.0 / g) * (math.log1p(g) - 2.0 * math.log(k))


def ref_strength(x, g2, s=1.0):
    g = g2 / s / s
    z = np.abs(np.asarray(x, np.float64) / s)
    return scipy.stats.norm.sf(z * math.sqrt(g / (1 + g))) + scipy.stats.norm.sf(z * (2 + g) / math.sqrt(g * (1 + g)))


@functools.cache
def ref_hs(z, tau):
    """E[1 - kappa | z, tau] by adaptive quadrature of the defining integral (float64).

    The posterior of kappa is proportional to (1 - kappa)^(-1/2) exp(-kappa z^2 / 2) / ((1 - kappa) + tau^2 kappa).
    On kappa in [0, 1/2] it is integrated in kappa, split at its scales 1/z^2 and 1/tau^2; on [1/2, 1] in
    s = sqrt(1 - kappa) (which removes the endpoint singularity: the density becomes
    2 exp(-(1 - s^2) z^2 / 2) / (s^2 + tau^2 (1 - s^2))), split at s = tau.
    """
    z2 = float(z) ** 2
    t2 = float(tau) ** 2

    def lower(k, m):
        return (1.0 - k) ** m * math.exp(-0.5 * k * z2) / ((1.0 - k) * math.sqrt(1.0 - k) + t2 * k * math.sqrt(1.0 - k))

    def upper(s, m):
        return s ** (2 * m) * 2.0 * math.exp(-0.5 * (1.0 - s * s) * z2) / (s * s + t2 * (1.0 - s * s))

    def pieces(f, lo, hi, pts, m):
        edges = [lo, *sorted({p for p in pts if lo < p < hi}), hi]
        return sum(scipy.integrate.quad(f, a, b, args=(m,), limit=400, epsabs=0, epsrel=1e-12)[0]
                   for a, b in zip(edges[:-1], edges[1:]))

    kz = 1.0 / max(z2, 1e-300)
    t = float(tau)
    # the 1/s^2 and 1/kappa stretches need geometric breakpoints, down to tau and 1/z^2
    lowest = min(math.log10(t), math.log10(kz), 0.0) - 2
    decades = [10.0 ** e for e in range(int(lowest), 1)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", scipy.integrate.IntegrationWarning)  # roundoff near 1e-12: still accurate
        out = []
        for m in (1, 0):
            v = pieces(lower, 0.0, 0.5, (kz, 10 * kz, 40 * kz, 1.0 / t2, 10.0 / t2, *decades), m)
            v += pieces(upper, 0.0, math.sqrt(0.5), (t / 10, t, 10 * t, *decades), m)
            out.append(v)
    return out[0] / out[1]


@functools.cache
def ref_hs_threshold(tau):
    if ref_hs(0.0, tau) > 0.5:
        return 0.0
    return scipy.optimize.brentq(lambda c: ref_hs(c, tau) - 0.5, 0.0, 80.0, xtol=1e-10)


def ref_bh(p, alpha):
    from statsmodels.stats.multitest import multipletests

    return multipletests(np.asarray(p, np.float64), alpha=alpha, method="fdr_bh")


def ref_bo_c2(p, tau2, s=1.0, d0=1.0, dA=1.0):
    u = tau2 / s / s
    return (1 + 1 / u) * (math.log1p(u) + 2 * math.log((1 - p) / p * d0 / dA))


def ref_risk(c2, p, tau2, s=1.0):
    u = tau2 / s / s
    c = math.sqrt(max(c2, 0.0))
    t1 = 2 * scipy.stats.norm.sf(c)
    t2 = 1 - 2 * scipy.stats.norm.sf(c / math.sqrt(1 + u))
    return t1, t2, (1 - p) * t1 + p * t2


def ref_mad(x):
    return scipy.stats.median_abs_deviation(np.asarray(x, np.float64), scale="normal", axis=-1)


def ref_em(x, s=1.0, steps=100):
    """The EM of the two-groups model in float64 NumPy (same start and constraints as documented)."""
    x = np.asarray(x, np.float64) / s
    n = x.size
    thr = math.sqrt(2 * math.log(n))
    big = np.abs(x) > thr
    p = min(max(big.sum() / n, 1 / n), 1 - 1 / n, 0.5)
    tau2 = max((x[big] ** 2).mean() - 1 if big.any() else 0.0, 1.0)
    for _ in range(steps):
        l0 = math.log1p(-p) + scipy.stats.norm.logpdf(x)
        l1 = math.log(p) + scipy.stats.norm.logpdf(x, scale=math.sqrt(1 + tau2))
        r = np.exp(l1 - np.logaddexp(l0, l1))
        p = min(max(r.mean(), 1 / n), 1 - 1 / n)
        tau2 = max((r * x * x).sum() / r.sum() - 1, 1e-6)
    return p, tau2 * s * s


# --- case builders ------------------------------------------------------------------------------------------------


def add(name, run, check=None, words=(), status=None, slow=False, timeout=60.0, marks=()):
    CASES.append(Case(name=f"stats.{name}", run=run, check=check, words=tuple(words), status=status, slow=slow,
                      timeout=timeout, marks=marks))


def _first(out, i):
    return jax.tree_util.tree_map(lambda a: a[i] if hasattr(a, "shape") and np.ndim(a) > 0 else a, out)


def modes(name, fn, args, check=None, words=(), status=None, jit=True, vmap=True, slow=False, fast_modes=("eager",)):
    """eager / jit / vmap variants of ``fn(*args)`` (``args`` are arrays; settings are closed over in ``fn``)."""
    add(f"{name}.eager", lambda: fn(*args), check, words, status, slow=slow or "eager" not in fast_modes)
    if jit:
        add(f"{name}.jit", lambda: jax.jit(fn)(*args), check, words, status, slow=slow or "jit" not in fast_modes)
    if vmap:
        stacked = [jnp.stack([jnp.asarray(a)] * 2) for a in args]
        vcheck = None if check is None else (lambda out: check(_first(out, 0)) and check(_first(out, 1)))
        add(f"{name}.vmap", lambda: jax.vmap(fn)(*stacked), vcheck, words, status,
            slow=slow or "vmap" not in fast_modes)


def x64(fn):
    """``fn`` run with float64 enabled (the reference is float64 too)."""
    def run():
        with jax.enable_x64(True):
            out = fn()
            return jax.tree_util.tree_map(lambda a: np.asarray(a) if hasattr(a, "dtype") else a, out)
    return run


NANW = ("nan", "finite", "infinite")
ZW = ("x", "nan", "finite", "infinite")


def bad_x_family(name, fn, *, jit=True, vmap=False, inf_is_data=False, inf_check=None, extra=False,
                 elementwise=False):
    """NaN / Inf / empty / complex data for an entry point ``fn(x)`` (``extra``: also a non-numeric list).

    ``elementwise``: an empty ``x`` has the empty answer; otherwise (a test along the last axis) it is an error.
    """
    xn = Z.copy()
    xn[3] = np.nan
    modes(f"{name}.nan_x", fn, [jnp.asarray(xn, F32)], None, ZW, jit=jit, vmap=vmap)
    modes(f"{name}.inf_x", fn, [jnp.asarray(Z_INF, F32)], inf_check if inf_is_data else None, ZW, jit=jit,
          vmap=False, fast_modes=())
    add(f"{name}.empty_x.eager", lambda: fn(jnp.zeros((0,), F32)),
        (lambda out: np.asarray(out).shape == (0,)) if elementwise else None, ("x", "empty", "shape", "axis", "tests"))
    if extra:
        add(f"{name}.complex_x.eager", lambda: fn(jnp.asarray(Z + 1j, jnp.complex64)), None, ("real", "complex"),
            slow=True)
        add(f"{name}.str_x.eager", lambda: fn(["a", "b", "c"]), None, ("number", "numeric", "x"), slow=True)


# ================================================== p-values ==================================================


def _pv_fn(sigma=1.0):
    return lambda x: st.two_sided_pvalues(x, sigma)


modes("two_sided_pvalues.basic", _pv_fn(), [jnp.asarray(Z, F32)],
      lambda out: close(out, 2 * scipy.stats.norm.sf(np.abs(Z))), jit=True, vmap=True)
bad_x_family("two_sided_pvalues", _pv_fn(), inf_is_data=True, extra=True, elementwise=True,
             inf_check=lambda out: close(out, 2 * scipy.stats.norm.sf(np.abs(Z_INF))))
for label, s in (("zero", 0.0), ("neg", -1.0), ("nan", NAN), ("inf", INF)):
    add(f"two_sided_pvalues.sigma_{label}.eager", lambda s=s: st.two_sided_pvalues(Z, s), None, ("sigma",))
for label, scale in (("1e30", 1e30), ("1e-30", 1e-30)):
    add(f"two_sided_pvalues.scaled_{label}.eager", lambda scale=scale: st.two_sided_pvalues(Z * scale, scale),
        lambda out: close(out, 2 * scipy.stats.norm.sf(np.abs(Z)), rtol=1e-4), ("sigma",))
add("two_sided_pvalues.int_x.eager", lambda: st.two_sided_pvalues(np.array([0, 1, 2, 3])),
    lambda out: close(out, 2 * scipy.stats.norm.sf([0, 1, 2, 3])))
add("two_sided_pvalues.mad_constant.eager", lambda: st.two_sided_pvalues(np.ones(12), "mad"), None,
    ("sigma", "equal"))


def _check_bh(p, alpha):
    rej = ref_bh(p, alpha)[0]
    return lambda out: bool(np.array_equal(np.asarray(out.reject), rej)) and int(out.num_rejected) == rej.sum()


for meth in ("bucket", "sort"):
    modes(f"benjamini_hochberg.{meth}.basic", lambda p, m=meth: st.benjamini_hochberg(p, 0.05, method=m),
          [jnp.asarray(PV, F32)], _check_bh(PV, 0.05), vmap=False)
    for label, a in (("zero", 0.0), ("one", 1.0), ("nan", NAN)):
        add(f"benjamini_hochberg.{meth}.alpha_{label}.eager",
            lambda a=a, m=meth: st.benjamini_hochberg(PV, a, method=m), None, ("alpha",), slow=meth == "sort")

for name, fn in (("benjamini_hochberg", lambda p: st.benjamini_hochberg(p, 0.05)),
                 ("bh_adjusted_pvalues", st.bh_adjusted_pvalues),
                 ("bonferroni", lambda p: st.bonferroni(p, 0.05))):
    pn = PV.copy()
    pn[2] = np.nan
    modes(f"{name}.nan_p", fn, [jnp.asarray(pn, F32)], None, ("nan", "pvalues"), vmap=name == "bonferroni")
    po = PV.copy()
    po[1] = 1.5
    modes(f"{name}.p_above_1", fn, [jnp.asarray(po, F32)], None, ("[0, 1]", "pvalues"), vmap=False)
    pneg = PV.copy()
    pneg[1] = -0.01
    add(f"{name}.p_negative.eager", lambda fn=fn, v=pneg: fn(v), None, ("[0, 1]", "pvalues"))
    pinf = PV.copy()
    pinf[0] = np.inf
    add(f"{name}.p_inf.eager", lambda fn=fn, v=pinf: fn(v), None, ("[0, 1]", "pvalues"), slow=True)
    add(f"{name}.empty.eager", lambda fn=fn: fn(jnp.zeros((0,), F32)), None, ("empty", "pvalues"))
    add(f"{name}.zscores.eager", lambda fn=fn: fn(Z), None, ("z-score", "[0, 1]"))
    add(f"{name}.scalar.eager", lambda fn=fn: fn(0.01), None, ("pvalues", "axis", "shape"), slow=True)
    # degenerate but valid: all p-values equal, all zero, all one
    for label, vals in (("all_zero", np.zeros(8)), ("ties", np.full(8, 0.01))):
        if name == "bh_adjusted_pvalues":
            ref = ref_bh(vals, 0.05)[1]
            chk = lambda out, ref=ref: close(out, ref)  # noqa: E731
        elif name == "bonferroni":
            chk = lambda out, vals=vals: bool(np.array_equal(np.asarray(out.reject), vals <= 0.05 / vals.size))  # noqa: E731
        else:
            chk = _check_bh(vals, 0.05)
        add(f"{name}.{label}.eager", lambda fn=fn, vals=vals: fn(jnp.asarray(vals, F32)), chk, slow=label != "ties")

add("bonferroni.alpha_nan.eager", lambda: st.bonferroni(PV, NAN), None, ("alpha",))
add("bonferroni.alpha_one.eager", lambda: st.bonferroni(PV, 1.0), None, ("alpha",))
add("bonferroni.bf16.eager", lambda: st.bonferroni(jnp.asarray(PV, jnp.bfloat16), 0.05),
    lambda out: bool(np.array_equal(np.asarray(out.reject), PV <= 0.005)), ("bfloat16", "dtype", "float"))

for label, n in (("zero", 0), ("half", 0.5), ("nan", NAN), ("inf", INF)):
    add(f"bonferroni_threshold.n_{label}.eager", lambda n=n: st.bonferroni_threshold(n, 0.05), None, ("n",))
for label, a in (("zero", 0.0), ("nan", NAN)):
    add(f"bonferroni_threshold.alpha_{label}.eager", lambda a=a: st.bonferroni_threshold(100, a), None, ("alpha",))
modes("bonferroni_threshold.basic", lambda n: st.bonferroni_threshold(n, 0.05), [jnp.asarray(1e4, F32)],
      lambda out: close(out, scipy.stats.norm.isf(0.05 / 2e4) ** 2, rtol=1e-5), vmap=True)
add("bonferroni_threshold.huge_n.eager", lambda: st.bonferroni_threshold(1e30, 0.05),
    lambda out: close(out, scipy.stats.norm.isf(0.025e-30) ** 2, rtol=1e-4), ("float64", "n"))

# ============================================== relative belief ==============================================

for fname, fn, ref in (
    ("log_relative_belief_ratio", st.log_relative_belief_ratio, ref_log_rb),
    ("relative_belief_ratio", st.relative_belief_ratio, lambda x, g2, s=1.0: np.exp(ref_log_rb(x, g2, s))),
    ("rb_strength", st.rb_strength, ref_strength),
):
    modes(f"{fname}.basic", lambda x, g, fn=fn: fn(x, g), [jnp.asarray(Z, F32), jnp.asarray(100.0, F32)],
          lambda out, ref=ref: close(out, ref(Z, 100.0), rtol=1e-4))
    xn = Z.copy()
    xn[0] = np.nan
    modes(f"{fname}.nan_x", lambda x, fn=fn: fn(x, 100.0), [jnp.asarray(xn, F32)], None, ZW, vmap=False)
    add(f"{fname}.inf_x.eager", lambda fn=fn: fn(Z_INF, 100.0),
        lambda out, ref=ref, fname=fname: close(out, ref(Z_INF, 100.0), rtol=1e-4)
        if fname != "log_relative_belief_ratio"
        else bool(np.isneginf(np.asarray(out)[2])) and close(np.delete(np.asarray(out), 2), ref(np.delete(Z, 2),
                                                                                              100.0), rtol=1e-4),
        ZW, slow=fname == "relative_belief_ratio")
    for label, g in (("zero", 0.0), ("nan", NAN), ("inf", INF)):
        add(f"{fname}.gamma2_{label}.eager", lambda g=g, fn=fn: fn(Z, g), None, ("gamma2",), slow=label == "nan")
    add(f"{fname}.gamma2_array_neg.jit", lambda fn=fn: jax.jit(fn)(jnp.asarray(Z, F32), jnp.asarray(-1.0, F32)),
        None, ("gamma2",), slow=True)
    for label, s in (("zero", 0.0), ("inf", INF)):
        add(f"{fname}.sigma_{label}.eager", lambda s=s, fn=fn: fn(Z, 10.0, s), None, ("sigma",), slow=label != "zero")
    add(f"{fname}.int_x.eager", lambda fn=fn, ref=ref: fn(np.arange(4), 10.0),
        lambda out, ref=ref: close(out, ref(np.arange(4.0), 10.0), rtol=1e-4))
    add(f"{fname}.bf16_x.eager", lambda fn=fn: fn(jnp.asarray(Z, jnp.bfloat16), 10.0),
        lambda out, ref=ref: out.dtype == jnp.bfloat16 and close(out, ref(np.asarray(jnp.asarray(Z, jnp.bfloat16),
                                                                                     np.float64), 10.0), rtol=3e-2,
                                                                 atol=3e-2), ("bfloat16", "dtype"), slow=True)
    for label, scale in (("1e30", 1e30), ("1e18", 1e18)):
        # gamma2 = (10 scale)^2 is not a float32 number for scale 1e+-30: a right answer or an error saying so
        add(f"{fname}.scaled_{label}.eager", lambda scale=scale, fn=fn: fn(Z * scale, (10.0 * scale) ** 2, scale),
            lambda out, ref=ref: close(out, ref(Z, 100.0), rtol=1e-3), ("gamma2", "float64", "float32"))
    # a huge prior variance: log RB -> 0.5 log(1+g) - z^2/2 stays finite; RB for inf x is 0 (log -inf), strength 0
    add(f"{fname}.gamma2_huge.eager", lambda fn=fn: fn(Z, 1e30),
        lambda out, ref=ref: close(out, ref(Z, 1e30), rtol=1e-4))
    add(f"{fname}.gamma2_tiny.eager", lambda fn=fn: fn(Z, 1e-30),
        lambda out, ref=ref: close(out, ref(Z, 1e-30), rtol=1e-4, atol=1e-6), slow=True)

for label, kwargs in (("gamma2_zero", dict(gamma2=0.0)), ("gamma2_nan", dict(gamma2=NAN)),
                      ("gamma2_inf", dict(gamma2=INF)), ("k_zero", dict(gamma2=10.0, k=0.0)),
                      ("k_neg", dict(gamma2=10.0, k=-1.0)), ("k_nan", dict(gamma2=10.0, k=NAN)),
                      ("sigma_zero", dict(gamma2=10.0, sigma=0.0)), ("sigma_inf", dict(gamma2=10.0, sigma=INF))):
    add(f"relative_belief_threshold.{label}.eager", lambda kw=kwargs: st.relative_belief_threshold(**kw), None,
        tuple(k for k in kwargs if k != "gamma2" or "gamma2" in label))
modes("relative_belief_threshold.basic", lambda g: st.relative_belief_threshold(g), [jnp.asarray(100.0, F32)],
      lambda out: close(out, ref_rb_c2(100.0)))
add("relative_belief_threshold.gamma2_huge.eager", lambda: st.relative_belief_threshold(1e30),
    lambda out: close(out, ref_rb_c2(1e30), rtol=1e-5))
add("relative_belief_threshold.gamma2_tiny.eager", lambda: st.relative_belief_threshold(1e-20),
    lambda out: close(out, ref_rb_c2(1e-20), rtol=1e-4))
add("relative_belief_threshold.gamma2_overflow.eager", lambda: st.relative_belief_threshold(1e40), None,
    ("gamma2", "float32", "float64", "overflow"))
add("relative_belief_threshold.gamma2_overflow.x64", x64(lambda: st.relative_belief_threshold(1e40)),
    lambda out: close(out, ref_rb_c2(1e40), rtol=1e-9), slow=True)


def _rbt(gamma2=None, **kw):
    return lambda x: st.relative_belief_test(x, gamma2=gamma2, **kw)


def _check_rb_reject(x, g2, s=1.0):
    x = np.asarray(x, np.float64)
    return lambda out: bool(np.array_equal(np.asarray(out.reject), (x / s) ** 2 > ref_rb_c2(g2, 1.0, s)))


modes("relative_belief_test.number", _rbt(100.0), [jnp.asarray(Z, F32)], _check_rb_reject(Z, 100.0))
bad_x_family("relative_belief_test", _rbt(100.0), vmap=True, extra=True)
bad_x_family("relative_belief_test.eb_mmle", _rbt(st.EBMMLEGamma2()))
add("relative_belief_test.eb_mmle.inf_x.vmap",
    lambda: jax.vmap(_rbt(st.EBMMLEGamma2()))(jnp.asarray(np.stack([Z, np.r_[np.inf, Z[1:]]]), F32)), None, ZW,
    slow=True)
for label, kw in (("k_zero", dict(k=0.0)), ("k_nan", dict(k=NAN)), ("sigma_neg", dict(sigma=-1.0)),
                  ("sigma_inf", dict(sigma=INF)),
                  ("gamma2_inf", dict(gamma2=INF)), ("gamma2_str", dict(gamma2="huge")),
                  ("sigma_str", dict(sigma="std"))):
    kw = {"gamma2": 10.0, **kw}
    add(f"relative_belief_test.{label}.eager", lambda kw=kw: st.relative_belief_test(Z, **kw), None,
        tuple(k for k in kw if k in label) + (("preset", "rule") if "gamma2_str" in label else ())
        + (("mad",) if "sigma_str" in label else ()))
add("relative_belief_test.one_test.eb_sparsity.eager", lambda: st.relative_belief_test(np.array([3.0])), None,
    ("2 tests", "at least 2"))
add("relative_belief_test.constant.mad.eager", lambda: st.relative_belief_test(np.ones(12), gamma2=10.0,
                                                                                    sigma="mad"), None, ("sigma",))
for label, scale in (("1e15", 1e15),):
    for rule in ("eb_sparsity", "eb_mmle"):
        add(f"relative_belief_test.{rule}.scaled_{label}.eager",
            lambda scale=scale, rule=rule: st.relative_belief_test(Z * scale, gamma2=rule, sigma=scale),
            lambda out, rule=rule: bool(np.array_equal(np.asarray(out.reject),
                                                       np.asarray(st.relative_belief_test(Z, gamma2=rule).reject))),
            ("sigma", "float64"), slow=rule == "eb_mmle")
        add(f"relative_belief_test.{rule}.mad_scaled_{label}.eager",
            lambda scale=scale, rule=rule: st.relative_belief_test(Z * scale, gamma2=rule, sigma="mad"),
            lambda out, rule=rule: bool(np.array_equal(np.asarray(out.reject), np.asarray(
                st.relative_belief_test(Z / ref_mad(Z), gamma2=rule).reject))), ("sigma", "float64"), slow=True)
add("relative_belief_test.pvalues_warning.eager", lambda: st.relative_belief_test(PV, gamma2=10.0),
    lambda out: bool(np.array_equal(np.asarray(out.reject), PV ** 2 > ref_rb_c2(10.0))), slow=True)

# gamma2 rules: settings out of range, degenerate data
for label, mk in (("p_zero", lambda: st.OracleGamma2(p=0.0, tau2=1.0)), ("p_one", lambda: st.OracleGamma2(1.0, 1.0)),
                  ("p_nan", lambda: st.OracleGamma2(NAN, 1.0)), ("tau2_neg", lambda: st.OracleGamma2(0.1, -1.0)),
                  ("tau2_inf", lambda: st.OracleGamma2(0.1, INF)), ("delta_zero", lambda: st.OracleGamma2(0.1, 1, 0)),
                  ("p_array", lambda: st.OracleGamma2(np.array([0.1, 0.2]), 1.0))):
    add(f"OracleGamma2.{label}.eager", mk, None, (label.split("_")[0],))
for label, p in (("zero", 0.0), ("one", 1.0), ("neg", -0.5), ("nan", NAN), ("str", "0.1"), ("bool", True)):
    add(f"SparsityGamma2.p_{label}.eager", lambda p=p: st.SparsityGamma2(p=p), None, ("p",))
for label, n in (("zero", 0), ("float", 2.5), ("neg", -1), ("bool", True)):
    add(f"EBMMLEGamma2.num_em_steps_{label}.eager", lambda n=n: st.EBMMLEGamma2(num_em_steps=n), None,
        ("num_em_steps",))
add("relative_belief_gamma2.oracle.eager", lambda: st.relative_belief_gamma2(st.OracleGamma2(p=0.01, tau2=11.645)),
    lambda out: close(out, 11.645 * 99.0 ** 2, rtol=1e-5))
add("relative_belief_gamma2.oracle_p_tiny.eager", lambda: st.relative_belief_gamma2(st.OracleGamma2(1e-30, 1.0)),
    None, ("p", "float32", "float64", "overflow"))
add("relative_belief_gamma2.oracle_p_tiny.x64", x64(lambda: st.relative_belief_gamma2(st.OracleGamma2(1e-30, 1.0))),
    lambda out: close(out, ((1 - 1e-30) / 1e-30) ** 2, rtol=1e-9), slow=True)
add("relative_belief_gamma2.eb_no_x.eager", lambda: st.relative_belief_gamma2(st.EBSparsityGamma2()), None, ("x",))
add("relative_belief_gamma2.unknown.eager", lambda: st.relative_belief_gamma2("bayes"), None, ("preset", "rule"))
add("relative_belief_gamma2.eb_sparsity_sigma_zero.eager",
    lambda: st.relative_belief_gamma2(st.EBSparsityGamma2(), x=Z, sigma=0.0), None, ("sigma",))
add("relative_belief_gamma2.eb_mmle_inf.eager",
    lambda: st.relative_belief_gamma2(st.EBMMLEGamma2(), x=np.r_[Z, np.inf]), None, ZW)
add("relative_belief_gamma2.eb_mmle_constant.eager",
    lambda: st.relative_belief_gamma2(st.EBMMLEGamma2(), x=np.zeros(12)),
    lambda out: bool(np.all(np.isfinite(np.asarray(out)))) and bool(np.all(np.asarray(out) > 0)), ("gamma2",))
add("relative_belief_gamma2.eb_sparsity_const.eager",
    lambda: st.relative_belief_gamma2(st.EBSparsityGamma2(), x=np.zeros(12)),
    lambda out: close(out, (11.0) ** 2, rtol=1e-5))

# ================================================= oracle ====================================================

PARAM_BAD = (("p_zero", dict(p=0.0)), ("p_one", dict(p=1.0)), ("p_nan", dict(p=NAN)), ("p_neg", dict(p=-0.1)),
             ("tau2_zero", dict(tau2=0.0)), ("tau2_nan", dict(tau2=NAN)), ("tau2_inf", dict(tau2=INF)),
             ("sigma_zero", dict(sigma=0.0)), ("sigma_inf", dict(sigma=INF)), ("delta0_neg", dict(delta0=-1.0)),
             ("deltaA_nan", dict(deltaA=NAN)), ("p_below_float32", dict(p=1e-40)),
             ("p_round_to_one", dict(p=1 - 1e-9)), ("tau2_overflow", dict(tau2=1e40)))
for fname, call in (
    ("bayes_oracle_threshold", lambda kw: st.bayes_oracle_threshold(**kw)),
    ("bayes_oracle_test", lambda kw: st.bayes_oracle_test(Z, **kw)),
    ("threshold_risk", lambda kw: st.threshold_risk(9.0, **kw)),
    ("abos_risk_ratio", lambda kw: st.abos_risk_ratio(9.0, **kw)),
):
    for label, bad in PARAM_BAD if fname == "bayes_oracle_threshold" else PARAM_BAD[-3:] + PARAM_BAD[:1]:
        kw = {"p": 0.05, "tau2": 9.0, **bad}
        add(f"{fname}.{label}.eager", lambda kw=kw, call=call: call(kw), None, (label.split("_")[0],),
            slow=label not in ("p_zero", "p_below_float32", "tau2_inf"))
    add(f"{fname}.p_traced_out_of_range.jit",
        lambda call=call: jax.jit(lambda p: call({"p": p, "tau2": 9.0}))(jnp.asarray(1.5, F32)), None, ("p",),
        slow=fname != "threshold_risk")

modes("bayes_oracle_threshold.basic", lambda p, t: st.bayes_oracle_threshold(p, t),
      [jnp.asarray(0.01, F32), jnp.asarray(11.645, F32)], lambda out: close(out, ref_bo_c2(0.01, 11.645)))
add("bayes_oracle_threshold.extreme_p.x64", x64(lambda: st.bayes_oracle_threshold(1e-200, 1e10)),
    lambda out: close(out, ref_bo_c2(1e-200, 1e10), rtol=1e-9))
add("bayes_oracle_threshold.p_tiny.eager", lambda: st.bayes_oracle_threshold(1e-30, 100.0),
    lambda out: close(out, ref_bo_c2(1e-30, 100.0), rtol=1e-4))


def _check_bo(x, p, tau2, s=1.0):
    x = np.asarray(x, np.float64) / s
    u = tau2 / s / s
    l0 = np.log1p(-p) + scipy.stats.norm.logpdf(x)
    l1 = np.log(p) + scipy.stats.norm.logpdf(x, scale=math.sqrt(1 + u))
    lfdr = np.exp(l0 - np.logaddexp(l0, l1))
    return lambda out: bool(np.array_equal(np.asarray(out.reject), l1 > l0)) and close(out.lfdr, lfdr, rtol=1e-4)


modes("bayes_oracle_test.basic", lambda x: st.bayes_oracle_test(x, p=0.05, tau2=9.0), [jnp.asarray(Z, F32)],
      _check_bo(Z, 0.05, 9.0))
bad_x_family("bayes_oracle_test", lambda x: st.bayes_oracle_test(x, p=0.05, tau2=9.0), jit=False)
add("bayes_oracle_test.huge_x.eager", lambda: st.bayes_oracle_test(np.r_[Z, 1e30], p=0.05, tau2=9.0),
    _check_bo(np.r_[Z, 1e30], 0.05, 9.0), slow=True)
add("bayes_oracle_test.scaled_sigma_1e15.eager",
    lambda: st.bayes_oracle_test(Z * 1e15, p=0.05, tau2=9e30, sigma=1e15), _check_bo(Z, 0.05, 9.0), ("sigma",))
add("bayes_oracle_test.scaled_sigma_1e20.eager",
    lambda: st.bayes_oracle_test(Z * 1e20, p=0.05, tau2=9e38, sigma=1e20), _check_bo(Z, 0.05, 9.0),
    ("sigma", "float32", "float64"), slow=True)

for label, c2 in (("nan", NAN),):
    add(f"threshold_risk.c2_{label}.eager", lambda c2=c2: st.threshold_risk(c2, 0.05, 9.0), None, ("c2",))
    add(f"abos_risk_ratio.c2_{label}.eager", lambda c2=c2: st.abos_risk_ratio(c2, 0.05, 9.0), None, ("c2",))
for label, c2 in (("inf", INF), ("neg", -4.0), ("big", 1e6)):
    add(f"threshold_risk.c2_{label}.eager", lambda c2=c2: st.threshold_risk(c2, 0.05, 9.0),
        lambda out, c2=c2: close([out.type1, out.type2, out.risk], ref_risk(c2, 0.05, 9.0), rtol=1e-4, atol=1e-7))
    bo_risk = ref_risk(ref_bo_c2(0.05, 9.0), 0.05, 9.0)[2]
    add(f"abos_risk_ratio.c2_{label}.eager", lambda c2=c2: st.abos_risk_ratio(c2, 0.05, 9.0),
        lambda out, c2=c2, b=bo_risk: close(out, ref_risk(c2, 0.05, 9.0)[2] / b, rtol=1e-4), slow=label == "zero")
modes("threshold_risk.basic", lambda c: st.threshold_risk(c, 0.05, 9.0).risk, [jnp.asarray(9.0, F32)],
      lambda out: close(out, ref_risk(9.0, 0.05, 9.0)[2], rtol=1e-5))
modes("abos_risk_ratio.basic", lambda c: st.abos_risk_ratio(c, 0.05, 9.0), [jnp.asarray(9.0, F32)],
      lambda out: close(out, ref_risk(9.0, 0.05, 9.0)[2] / ref_risk(ref_bo_c2(0.05, 9.0), 0.05, 9.0)[2], rtol=1e-4))
# the oracle's own threshold: ratio exactly 1 (a closed form)
add("abos_risk_ratio.at_oracle.eager", lambda: st.abos_risk_ratio(st.bayes_oracle_threshold(1e-3, 20.0), 1e-3, 20.0),
    lambda out: close(out, 1.0, rtol=1e-5))


def _ref_calibrate(p, C=1.0, delta=1.0):
    L = 2 * math.log((1 - p) / p * delta)
    f = lambda u: C * u - math.log(u) - L  # noqa: E731
    return scipy.optimize.brentq(f, 1.0 / C, 1e6 + 10 * abs(L) / C)


modes("calibrate_tau2.basic", lambda p: st.calibrate_tau2(p), [jnp.asarray(0.01, F32)],
      lambda out: close(out, _ref_calibrate(0.01), rtol=1e-4), vmap=True)
add("calibrate_tau2.no_root.eager", lambda: st.calibrate_tau2(0.4), None, ("no tau2", "root", "C"))
add("calibrate_tau2.no_root.jit", lambda: jax.jit(st.calibrate_tau2)(jnp.asarray(0.4, F32)), None,
    ("no tau2", "root"), slow=True)
add("calibrate_tau2.C_huge.eager", lambda: st.calibrate_tau2(0.01, C=1e6), None, ("no tau2", "root", "C"))
add("calibrate_tau2.C_tiny.eager", lambda: st.calibrate_tau2(0.01, C=1e-3),
    lambda out: close(out, _ref_calibrate(0.01, 1e-3), rtol=1e-4))
add("calibrate_tau2.p_tiny.eager", lambda: st.calibrate_tau2(1e-30), lambda out: close(out, _ref_calibrate(1e-30),
                                                                                       rtol=1e-4))
for label, kw in (("p_zero", dict(p=0.0)), ("p_nan", dict(p=NAN)), ("C_zero", dict(p=0.01, C=0.0)),
                  ("C_inf", dict(p=0.01, C=INF)), ("sigma_neg", dict(p=0.01, sigma=-1.0)),
                  ("delta_nan", dict(p=0.01, delta=NAN)), ("num_steps_zero", dict(p=0.01, num_steps=0)),
                  ("num_steps_float", dict(p=0.01, num_steps=2.5))):
    add(f"calibrate_tau2.{label}.eager", lambda kw=kw: st.calibrate_tau2(**kw), None, (label.rsplit("_", 1)[0],),
        slow=label in ("delta_nan", "sigma_neg"))


def _ref_bfdr(alpha, p, tau2):
    """The root of log BFDR odds = log(alpha / (1 - alpha)) in c, in log space (float64), squared."""
    from scipy.special import log_ndtr

    target = math.log(alpha) - math.log1p(-alpha)

    def f(c):
        return math.log1p(-p) - math.log(p) + log_ndtr(-c) - log_ndtr(-c / math.sqrt(1 + tau2)) - target

    if f(0.0) <= 0:
        return 0.0
    hi = 10.0
    while f(hi) > 0:
        hi *= 2
    return scipy.optimize.brentq(f, 0.0, hi, xtol=1e-12, rtol=1e-14) ** 2


modes("bfdr_threshold.basic", lambda a: st.bfdr_threshold(a, 0.01, 11.645), [jnp.asarray(0.05, F32)],
      lambda out: close(out, _ref_bfdr(0.05, 0.01, 11.645), rtol=1e-4), vmap=True)
add("bfdr_threshold.alpha_tiny.eager", lambda: st.bfdr_threshold(1e-30, 0.1, 1.0),
    lambda out: close(out, _ref_bfdr(1e-30, 0.1, 1.0), rtol=1e-3), ("alpha", "float64"))
add("bfdr_threshold.reject_all.eager", lambda: st.bfdr_threshold(0.95, 0.1, 1.0), lambda out: close(out, 0.0))
add("bfdr_threshold.weak_slab.eager", lambda: st.bfdr_threshold(1e-6, 0.5, 1e-4),
    lambda out: close(out, _ref_bfdr(1e-6, 0.5, 1e-4), rtol=1e-3), ("alpha", "bfdr", "reach", "no threshold"))
for label, kw in (("alpha_zero", dict(alpha=0.0)), ("alpha_one", dict(alpha=1.0)), ("alpha_nan", dict(alpha=NAN)),
                  ("p_one", dict(p=1.0)), ("tau2_neg", dict(tau2=-1.0)), ("sigma_inf", dict(sigma=INF)),
                  ("num_steps_zero", dict(num_steps=0))):
    kw = {"alpha": 0.05, "p": 0.01, "tau2": 9.0, **kw}
    add(f"bfdr_threshold.{label}.eager", lambda kw=kw: st.bfdr_threshold(**kw), None, (label.rsplit("_", 1)[0],),
        slow=label in ("alpha_one", "tau2_neg"))

# ================================================ horseshoe ==================================================

HS_X = np.array([0.0, 1.0, 3.0, 4.0, 6.0, -10.0])

modes("horseshoe_shrinkage.basic", lambda x: st.horseshoe_shrinkage(x, 0.01), [jnp.asarray(HS_X, F32)],
      lambda out: close(out, [ref_hs(v, 0.01) for v in HS_X], rtol=1e-4, atol=1e-6), vmap=True)
for label, (xs, tau) in {
    "big_x": (np.array([30.0, 1e3, 1e5]), 0.1),
    "huge_x": (np.array([1e10, 1e19, 1e20, 1e30]), 0.1),
    "big_tau": (np.array([0.0, 1.0, 3.0]), 10.0),
    "huge_tau": (np.array([0.0, 1.0, 3.0]), 1e6),
    "tau_one": (np.array([0.0, 2.0, 5.0]), 1.0),
    "tiny_tau": (np.array([0.0, 3.0, 8.0]), 1e-10),
    "tiny_tau_big_x": (np.array([10.0, 50.0]), 1e-20),
}.items():
    add(f"horseshoe_shrinkage.{label}.eager", lambda xs=xs, tau=tau: st.horseshoe_shrinkage(jnp.asarray(xs, F32), tau),
        lambda out, xs=xs, tau=tau: close(out, [ref_hs(min(x, 1e8), tau) if x < 1e8 else 1.0 for x in xs],
                                          rtol=1e-4, atol=1e-6), ("tau",))
add("horseshoe_shrinkage.huge_x.x64", x64(lambda: st.horseshoe_shrinkage(jnp.array([1e200, 40.0, -1e6]), 0.01)),
    lambda out: close(out, [1.0, ref_hs(40.0, 0.01), ref_hs(1e6, 0.01)], rtol=1e-8), slow=True)
add("horseshoe_shrinkage.huge_tau.x64", x64(lambda: st.horseshoe_shrinkage(jnp.array([0.0, 2.0, 30.0]), 1e12)),
    lambda out: close(out, [ref_hs(v, 1e12) for v in (0.0, 2.0, 30.0)], rtol=1e-8), slow=True)
add("horseshoe_shrinkage.inf_limits.eager", lambda: st.horseshoe_shrinkage(jnp.array([INF, -INF], F32), 0.1),
    lambda out: close(out, [1.0, 1.0]), ZW)
bad_x_family("horseshoe_shrinkage", lambda x: st.horseshoe_shrinkage(x, 0.1), inf_is_data=True, elementwise=True,
             inf_check=lambda out: close(out, [ref_hs(v, 0.1) if np.isfinite(v) else 1.0 for v in Z_INF],
                                         rtol=1e-4, atol=1e-6))
for label, tau in (("zero", 0.0), ("neg", -1.0), ("nan", NAN), ("inf", INF)):
    add(f"horseshoe_shrinkage.tau_{label}.eager", lambda tau=tau: st.horseshoe_shrinkage(HS_X, tau), None, ("tau",))
    add(f"horseshoe_threshold.tau_{label}.eager", lambda tau=tau: st.horseshoe_threshold(tau), None, ("tau",))
add("horseshoe_shrinkage.sigma_zero.eager", lambda: st.horseshoe_shrinkage(HS_X, 0.1, 0.0), None, ("sigma",))
add("horseshoe_shrinkage.tau_array_neg.jit", lambda: jax.jit(st.horseshoe_shrinkage)(jnp.asarray(HS_X, F32),
                                                                                    jnp.asarray(-0.1, F32)),
    None, ("tau",), slow=True)
add("horseshoe_shrinkage.scaled_1e30.eager", lambda: st.horseshoe_shrinkage(HS_X * 1e30, 0.01, 1e30),
    lambda out: close(out, [ref_hs(v, 0.01) for v in HS_X], rtol=1e-4, atol=1e-6))
add("horseshoe_shrinkage.batch_size_zero.eager", lambda: st.horseshoe_shrinkage(HS_X, 0.1, batch_size=0), None,
    ("batch_size",))

modes("horseshoe_threshold.basic", lambda t: st.horseshoe_threshold(t), [jnp.asarray(0.01, F32)],
      lambda out: close(out, ref_hs_threshold(0.01), rtol=1e-4), vmap=True)
for label, tau in (("1e6", 1e6), ("1", 1.0), ("10", 10.0), ("1e-10", 1e-10), ("1e-30", 1e-30), ("0.3", 0.3)):
    add(f"horseshoe_threshold.tau_{label}.eager", lambda tau=tau: st.horseshoe_threshold(tau),
        lambda out, tau=tau: close(out, 0.0 if ref_hs(0.0, tau) > 0.5 else ref_hs_threshold(tau), rtol=1e-4,
                                   atol=1e-5), ("tau",), slow=label in ("10", "0.3"))
add("horseshoe_threshold.tau_tiny.x64", x64(lambda: st.horseshoe_threshold(1e-38)),
    lambda out: close(out, ref_hs_threshold(1e-38), rtol=1e-7), ("tau",), slow=True)
add("horseshoe_threshold.tau_below_range.x64", x64(lambda: st.horseshoe_threshold(1e-150)),
    lambda out: close(out, ref_hs_threshold(1e-150), rtol=1e-6), ("tau",), slow=True)
add("horseshoe_threshold.num_steps_zero.eager", lambda: st.horseshoe_threshold(0.1, num_steps=0), None,
    ("num_steps",))
add("horseshoe_threshold.num_steps_float.eager", lambda: st.horseshoe_threshold(0.1, num_steps=2.5), None,
    ("num_steps",), slow=True)


def _check_hs_test(x, tau, s=1.0):
    x = np.asarray(x, np.float64) / s

    def check(out):
        thr = ref_hs_threshold(tau)
        return bool(np.array_equal(np.asarray(out.reject), np.abs(x) > thr)) and close(out.threshold, thr,
                                                                                       rtol=1e-4, atol=1e-5)
    return check


modes("horseshoe_test.basic", lambda x: st.horseshoe_test(x, tau=0.01), [jnp.asarray(Z, F32)],
      _check_hs_test(Z, 0.01), vmap=True)
bad_x_family("horseshoe_test", lambda x: st.horseshoe_test(x, tau=0.1), vmap=True)
add("horseshoe_test.huge_x.eager", lambda: st.horseshoe_test(np.r_[Z, 1e30], tau=0.01),
    _check_hs_test(np.r_[Z, 1e30], 0.01))
add("horseshoe_test.tau_huge.eager", lambda: st.horseshoe_test(Z, tau=1e6), _check_hs_test(Z, 1e6))
add("horseshoe_test.scaled_1e30.eager", lambda: st.horseshoe_test(Z * 1e30, tau=0.01, sigma=1e30),
    _check_hs_test(Z, 0.01), slow=True)
add("horseshoe_test.tau_str.eager", lambda: st.horseshoe_test(Z, tau="mle"), None, ("tau",))
add("horseshoe_test.tau_neg.eager", lambda: st.horseshoe_test(Z, tau=-0.1), None, ("tau",))
add("horseshoe_test.tau_nan.eager", lambda: st.horseshoe_test(Z, tau=NAN), None, ("tau",), slow=True)
add("horseshoe_test.sigma_mad_constant.eager", lambda: st.horseshoe_test(np.ones(12), tau=0.1, sigma="mad"), None,
    ("sigma",))
add("horseshoe_test.eb_one_test.eager", lambda: st.horseshoe_test(np.array([3.0])), None, ("2 tests", "at least 2"))

_NUTS_X = np.array([0.0, 8.0, -0.5])
for label, kw in (("num_samples_zero", dict(num_samples=0)), ("num_samples_neg", dict(num_samples=-5)),
                  ("num_samples_few", dict(num_samples=10)), ("num_samples_float", dict(num_samples=50.5)),
                  ("num_warmup_neg", dict(num_warmup=-1)), ("num_warmup_float", dict(num_warmup=2.5)),
                  ("tau_zero", dict(tau=0.0)), ("tau_scale_nan", dict(tau_scale=NAN)), ("sigma_inf", dict(sigma=INF))):
    kw = {"tau": 0.1, "num_warmup": 20, "num_samples": 40, **kw}
    add(f"horseshoe_nuts.{label}.eager", lambda kw=kw: st.horseshoe_nuts(jax.random.key(0), _NUTS_X, **kw), None,
        (label.rsplit("_", 1)[0],), slow=label not in ("num_samples_zero", "tau_zero"), timeout=120)
add("horseshoe_nuts.nan_x.eager", lambda: st.horseshoe_nuts(jax.random.key(0), np.r_[_NUTS_X, np.nan], tau=0.1,
                                                            num_warmup=20, num_samples=40), None, ZW)
add("horseshoe_nuts.inf_x.eager", lambda: st.horseshoe_nuts(jax.random.key(0), np.r_[_NUTS_X, np.inf], tau=0.1,
                                                            num_warmup=20, num_samples=40), None, ZW, slow=True)
add("horseshoe_nuts.2d_x.eager", lambda: st.horseshoe_nuts(jax.random.key(0), np.zeros((2, 3)), tau=0.1,
                                                           num_warmup=20, num_samples=40), None, ("1-d", "x"))
add("horseshoe_nuts.empty_x.eager", lambda: st.horseshoe_nuts(jax.random.key(0), np.zeros(0), tau=0.1,
                                                              num_warmup=20, num_samples=40), None, ("x", "empty"))

# ========================================= empirical Bayes, sigma ============================================

modes("estimate_sparsity.basic", lambda x: st.estimate_sparsity(x), [jnp.asarray(Z, F32)],
      lambda out: close(out, max((np.abs(Z) > math.sqrt(2 * math.log(12))).sum() / 12, 1 / 12)), vmap=True)
bad_x_family("estimate_sparsity", lambda x: st.estimate_sparsity(x), jit=False)
for label, kw in (("c1_zero", dict(c1=0.0)), ("c1_nan", dict(c1=NAN)), ("c2_inf", dict(c2=INF)),
                  ("sigma_zero", dict(sigma=0.0)), ("sigma_inf", dict(sigma=INF))):
    add(f"estimate_sparsity.{label}.eager", lambda kw=kw: st.estimate_sparsity(Z, **kw), None,
        (label.split("_")[0],), slow=label in ("c2_neg", "sigma_nan"))
add("estimate_sparsity.one_test.eager", lambda: st.estimate_sparsity(np.array([3.0])), None, ("2 tests", "least 2"))
add("estimate_sparsity.constant.eager", lambda: st.estimate_sparsity(np.zeros(12)), lambda out: close(out, 1 / 12))
add("estimate_sparsity.constant_mad.eager", lambda: st.estimate_sparsity(np.ones(12), "mad"), None, ("sigma",))
add("estimate_sparsity.scaled_1e30.eager", lambda: st.estimate_sparsity(Z * 1e30, 1e30),
    lambda out: close(out, (np.abs(Z) > math.sqrt(2 * math.log(12))).sum() / 12))
add("estimate_sparsity.int_x.eager", lambda: st.estimate_sparsity(np.array([0, 1, 5, 0, 0, 0, 1, 0, 0, 0])),
    lambda out: close(out, 0.1))

modes("estimate_sigma.basic", lambda x: st.estimate_sigma(x), [jnp.asarray(Z, F32)],
      lambda out: close(out, ref_mad(Z), rtol=1e-5), vmap=True)
bad_x_family("estimate_sigma", lambda x: st.estimate_sigma(x), jit=False)
add("estimate_sigma.constant.eager", lambda: st.estimate_sigma(np.ones(10)), None, ("sigma", "equal"))
add("estimate_sigma.constant.jit", lambda: jax.jit(st.estimate_sigma)(jnp.ones(10, F32)), None, ("sigma", "equal"),
    slow=True)
add("estimate_sigma.one_value.eager", lambda: st.estimate_sigma(np.array([2.0])), None, ("2 values", "least 2"))
add("estimate_sigma.scaled_1e30.eager", lambda: st.estimate_sigma(Z * 1e30),
    lambda out: close(out, ref_mad(Z) * 1e30, rtol=1e-5))
add("estimate_sigma.scaled_1e-30.eager", lambda: st.estimate_sigma(Z * 1e-30),
    lambda out: close(out, ref_mad(Z) * 1e-30, rtol=1e-5))
add("estimate_sigma.huge_finite.eager", lambda: st.estimate_sigma(np.r_[Z, 3e38]),
    lambda out: close(out, ref_mad(np.r_[Z, 3e38]), rtol=1e-5))
add("estimate_sigma.bad_method.eager", lambda: st.estimate_sigma(Z, "std"), None, ("method", "mad", "sigma"))
add("estimate_sigma.int_x.eager", lambda: st.estimate_sigma(np.arange(10)),
    lambda out: close(out, ref_mad(np.arange(10.0)), rtol=1e-5))


def _em_status_check(ref_x, s=1.0):
    p, t2 = ref_em(ref_x, s)
    return lambda out: close(out.p, p, rtol=2e-3) and close(out.tau2, t2, rtol=2e-3)


_EMX = np.r_[np.linspace(-1.5, 1.5, 40), [6.0, -7.0, 5.0, 8.0]]
modes("two_groups_em.basic", lambda x: st.two_groups_em(x, throw=False), [jnp.asarray(_EMX, F32)],
      _em_status_check(_EMX), status=status_of, words=("nonfinite",), vmap=True, fast_modes=("eager",))
bad_x_family("two_groups_em", lambda x: st.two_groups_em(x))
add("two_groups_em.inf_x.throw_false.jit",
    lambda: jax.jit(lambda v: st.two_groups_em(v, throw=False))(jnp.asarray(np.r_[_EMX, np.inf], F32)), None,
    ZW, status=status_of, slow=True)
for label, scale in (("1e15", 1e15), ("1e-15", 1e-15)):
    add(f"two_groups_em.scaled_{label}.eager", lambda scale=scale: st.two_groups_em(_EMX * scale, scale),
        _em_status_check(_EMX * scale, scale), ("sigma", "nonfinite", "float64"), status=status_of)
add("two_groups_em.huge_finite.eager", lambda: st.two_groups_em(np.r_[_EMX, 1e30]), None,
    ("nonfinite", "overflow", "finite", "float64", "x"), status=status_of)
add("two_groups_em.huge_finite.x64", x64(lambda: st.two_groups_em(np.r_[_EMX, 1e30])),
    _em_status_check(np.r_[_EMX, 1e30]), ("nonfinite",), status=status_of, slow=True)
add("two_groups_em.constant.eager", lambda: st.two_groups_em(np.zeros(20)),
    _em_status_check(np.zeros(20)), ("nonfinite",), status=status_of)
add("two_groups_em.constant_mad.eager", lambda: st.two_groups_em(np.ones(20), "mad"), None, ("sigma",))
for label, kw in (("num_steps_zero", dict(num_steps=0)), ("p_init_one", dict(p_init=1.0)),
                  ("tau2_init_zero", dict(tau2_init=0.0)), ("tau2_init_inf", dict(tau2_init=INF)),
                  ("sigma_inf", dict(sigma=INF))):
    add(f"two_groups_em.{label}.eager", lambda kw=kw: st.two_groups_em(_EMX, **kw), None,
        (label.rsplit("_", 1)[0],), slow=label in ("num_steps_float", "p_init_nan", "tau2_init_zero"))
add("two_groups_em.one_test.eager", lambda: st.two_groups_em(np.array([3.0])), None, ("2 tests", "least 2"))

# =============================================== simulation ==================================================

K = jax.random.key(0)
for label, kw in (("n_zero", dict(n=0)), ("n_float", dict(n=10.0)), ("n_bool", dict(n=True)),
                  ("num_replicates_zero", dict(num_replicates=0)),
                  ("num_replicates_bool", dict(num_replicates=True)), ("p_zero", dict(p=0.0)),
                  ("tau2_inf", dict(tau2=INF)),
                  ("sigma_nan", dict(sigma=NAN)), ("dtype_int", dict(dtype=jnp.int32)),
                  ("n_huge", dict(n=2**40))):
    kw = {"n": 20, "p": 0.1, "tau2": 9.0, **kw}
    add(f"simulate_two_groups.{label}.eager", lambda kw=kw: st.simulate_two_groups(K, **kw), None,
        (label.rsplit("_", 1)[0],) + (("memory", "large") if label == "n_huge" else ())
        + (("float", "floating") if label == "dtype_int" else ()),
        slow=label not in ("n_zero", "n_bool", "p_zero"))
add("simulate_two_groups.basic.eager", lambda: st.simulate_two_groups(K, 1000, 0.1, 9.0, 2),
    lambda out: out.x.shape == (2, 1000) and abs(float(np.mean(np.asarray(out.nonnull))) - 0.1) < 0.04
    and bool(np.all(np.asarray(out.mu)[~np.asarray(out.nonnull)] == 0)))
add("simulate_two_groups.bad_key.eager", lambda: st.simulate_two_groups(0, 20, 0.1, 9.0), None, ("key",), slow=True)

_RULES = {"bonf": lambda x: st.bonferroni(st.two_sided_pvalues(x), 0.05).reject}
for label, kw in (("num_replicates_one", dict(num_replicates=1)), ("n_zero", dict(n=0)),
                  ("p_one", dict(p=1.0)), ("tau2_nan", dict(tau2=NAN)), ("delta0_zero", dict(delta0=0.0))):
    kw = {"n": 50, "p": 0.1, "tau2": 9.0, "num_replicates": 4, **kw}
    add(f"simulate_risk_ratios.{label}.eager", lambda kw=kw: st.simulate_risk_ratios(K, _RULES, **kw), None,
        (label.rsplit("_", 1)[0],), slow=label != "n_zero")
add("simulate_risk_ratios.oracle_name.eager",
    lambda: st.simulate_risk_ratios(K, {"oracle": _RULES["bonf"]}, n=50, p=0.1, tau2=9.0, num_replicates=4), None,
    ("oracle",))
add("simulate_risk_ratios.bad_rule_shape.eager",
    lambda: st.simulate_risk_ratios(K, {"r": lambda x: x[:, :3] > 0}, n=50, p=0.1, tau2=9.0, num_replicates=4), None,
    ("shape", "rule"), slow=True)

# ================================================= plotting ==================================================


def _plot(result_fn, x):
    def run():
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        ax = st.plot_rejections(result_fn(), x=x)
        plt.close(ax.figure)
        return ax
    return run


add("plot_rejections.wrong_result.eager", _plot(lambda: st.benjamini_hochberg(PV), PV), None,
    ("relative_belief_test", "takes"), slow=True)
add("plot_rejections.length_mismatch.eager", _plot(lambda: st.relative_belief_test(Z, gamma2=10.0), Z[:5]), None,
    ("x has", "tests"), slow=True)
add("plot_rejections.batch.eager", _plot(lambda: st.relative_belief_test(np.stack([Z, Z]), gamma2=10.0), Z), None,
    ("one row",), slow=True)
add("plot_rejections.nan_x.eager", _plot(lambda: st.relative_belief_test(Z, gamma2=10.0), np.r_[Z[:-1], np.nan]),
    None, ("x", "nan"), slow=True)


# The default subset: per entry point, the first case of each kind of bad input (the name's first word after the
# entry point) eagerly, and one jit and one vmap case; plus the regressions of issue #22 named here. The rest runs
# with -m slow and in the census.
_ALWAYS = {"stats.horseshoe_shrinkage.huge_tau.eager", "stats.horseshoe_threshold.tau_1e6.eager",
           "stats.relative_belief_test.eb_mmle.inf_x.eager", "stats.two_groups_em.inf_x.eager",
           "stats.horseshoe_shrinkage.tiny_tau.eager", "stats.relative_belief_test.number.jit",
           "stats.relative_belief_test.nan_x.jit",
           "stats.benjamini_hochberg.nan_p.jit", "stats.bonferroni.nan_p.vmap", "stats.horseshoe_test.nan_x.jit",
           "stats.bayes_oracle_threshold.basic.vmap", "stats.calibrate_tau2.basic.jit"}


_SLOW = {"stats.horseshoe_shrinkage.tiny_tau_big_x.eager", "stats.horseshoe_shrinkage.big_x.eager",
         "stats.two_groups_em.constant.eager", "stats.two_groups_em.huge_finite.eager"}


def _default_subset(cases):
    seen = set()
    out = []
    for c in cases:
        parts = c.name.split(".")
        mode = parts[-1]
        key = (parts[1], parts[2].split("_")[0] if mode == "eager" else mode)
        if c.name in _ALWAYS:
            out.append(dataclasses.replace(c, slow=False))
            continue
        slow = c.slow or mode == "x64" or key in seen or c.name in _SLOW
        if not slow:
            seen.add(key)
        out.append(dataclasses.replace(c, slow=slow))
    return out


CASES = _default_subset(CASES)


@pytest.mark.parametrize("case", params(CASES))
def test_fuzz(case):
    assert_good(case)
