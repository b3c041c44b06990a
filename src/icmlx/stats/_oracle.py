"""Two-groups framework of Bogdan, Chakrabarti, Frommlet & Ghosh (2011): Bayes oracle and exact risks."""

import functools
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr
from jaxtyping import Array, Bool, Float

from .._checks import is_traced
from .._types import RealScalarLike
from ._checks import Labels, check_scalar, float_dtype, positive, prepare_scores, static_int, warn_if_pvalues
from ._records import TestDecisions

__all__ = [
    "bayes_oracle_threshold",
    "OracleResult",
    "bayes_oracle_test",
    "ThresholdRisk",
    "threshold_risk",
    "abos_risk_ratio",
    "calibrate_tau2",
    "bfdr_threshold",
]

ScalarOrBatch = RealScalarLike | Float[Array, "..."]


@jax.jit
def _bo_c2(pp, u, d0, dA):
    return (1.0 + 1.0 / u) * (jnp.log1p(u) + 2.0 * (jnp.log1p(-pp) - jnp.log(pp) + jnp.log(d0 / dA)))


@jax.jit
def _risk(cc, pp, u, d0, dA):
    c = jnp.sqrt(jnp.maximum(cc, 0.0))
    t1 = 2.0 * ndtr(-c)
    t2 = 1.0 - 2.0 * ndtr(-c / jnp.sqrt(1.0 + u))
    return t1, t2, (1.0 - pp) * d0 * t1 + pp * dA * t2


@jax.jit
def _ratio(cc, pp, u, d0, dA):
    return _risk(cc, pp, u, d0, dA)[2] / _risk(_bo_c2(pp, u, d0, dA), pp, u, d0, dA)[2]


@jax.jit
def _bo_test(x, pp, u, s, d0, dA):
    z2 = (x / s) ** 2
    c2 = _bo_c2(pp, u, d0, dA)
    # log posterior odds of the null: log((1-p)/p) + 0.5 log(1+u) - 0.5 z^2 u/(1+u)
    log_odds0 = jnp.log1p(-pp) - jnp.log(pp) + 0.5 * jnp.log1p(u) - 0.5 * z2 * (u / (1.0 + u))
    return z2 > c2, jax.nn.sigmoid(log_odds0), c2


def _params(p, tau2, sigma, delta0, deltaA, extra=()):
    dt = float_dtype(p, tau2, sigma, delta0, deltaA, *extra)
    pp = check_scalar("p", p, dt, lo=0.0, hi=1.0)
    t2 = positive("tau2", tau2, dt)
    s = positive("sigma", sigma, dt)
    d0 = positive("delta0", delta0, dt)
    dA = positive("deltaA", deltaA, dt)
    return dt, pp, t2 / s / s, s, d0, dA  # not t2 / s^2: s^2 overflows first


def bayes_oracle_threshold(
    p: ScalarOrBatch,
    tau2: ScalarOrBatch,
    sigma: RealScalarLike = 1.0,
    delta0: RealScalarLike = 1.0,
    deltaA: RealScalarLike = 1.0,
) -> Float[Array, "..."]:
    r"""Threshold $c^2$ of the Bayes oracle: reject $H_{0i}$ iff $X_i^2/\sigma^2 > c^2$.

    Two-groups model $\mu_i\sim(1-p)\delta_0+pN(0,\tau^2)$, $X_i\mid\mu_i\sim N(\mu_i,\sigma^2)$, loss
    $\delta_0$ per false rejection and $\delta_A$ per false acceptance. With $u=\tau^2/\sigma^2$,
    $f=(1-p)/p$, $\delta=\delta_0/\delta_A$:

    $$
    c^2 = (1 + 1/u)\,\big(\log(1+u) + 2\log(f\delta)\big).
    $$

    It is the rule that minimises the Bayes risk: reject iff
    $p\,\delta_A\,\phi(x;0,\sigma^2+\tau^2) > (1-p)\,\delta_0\,\phi(x;0,\sigma^2)$; taking logs,
    $\tfrac12 z^2\,u/(1+u) > \tfrac12\log(1+u) + \log(f\delta)$ with $z=x/\sigma$, which is the display.
    A negative value means the oracle rejects every test.

    Args:
      p: non-null proportion in (0, 1); scalar or array (broadcast elementwise).
      tau2: slab variance $\tau^2 > 0$.
      sigma: noise standard deviation (> 0).
      delta0: loss of a type I error (> 0).
      deltaA: loss of a type II error (> 0).

    Returns:
      $c^2$, the broadcast shape of the arguments.

    Raises:
      ValueError: ``p`` outside (0, 1) or non-positive variances/losses.

    References:
      Bogdan, Chakrabarti, Frommlet & Ghosh (2011), Ann. Statist. 39(3), arXiv:1002.3501.

    Examples:
      >>> from icmlx.stats import bayes_oracle_threshold
      >>> round(float(bayes_oracle_threshold(0.01, 11.645)), 3)
      12.735
    """
    _, pp, u, _, d0, dA = _params(p, tau2, sigma, delta0, deltaA)
    return _bo_c2(pp, u, d0, dA)


class OracleResult(TestDecisions):
    """Result of `bayes_oracle_test`.

    Attributes:
      reject: oracle decisions, shape of ``x``.
      lfdr: local false discovery rate $P(\\mu_i=0\\mid x_i)$, shape of ``x``.
      threshold: $c^2$ on $(x/\\sigma)^2$ (broadcastable to ``x``).
      labels: the index of the pandas Series passed as ``x`` (``None`` otherwise).
    """

    reject: Bool[Array, "*shape"]
    lfdr: Float[Array, "*shape"]
    threshold: Float[Array, "..."]
    _labels: Labels | None = eqx.field(static=True, default=None)

    @property
    def num_rejected(self) -> Array:
        """Number of rejections along the last axis."""
        return jnp.sum(self.reject, axis=-1)

    _repr_fields = ("threshold",)



def bayes_oracle_test(
    x: Any,
    *,
    p: ScalarOrBatch,
    tau2: ScalarOrBatch,
    sigma: RealScalarLike = 1.0,
    delta0: RealScalarLike = 1.0,
    deltaA: RealScalarLike = 1.0,
) -> OracleResult:
    r"""The Bayes oracle (known $p,\tau^2$): reject iff $p\delta_A\phi_{1+u} > (1-p)\delta_0\phi_1$.

    Equivalently $z_i^2 > c^2$ (`bayes_oracle_threshold`), or
    $\mathrm{lfdr}_i < \delta_A/(\delta_0+\delta_A)$ where

    $$
    \mathrm{lfdr}_i = \frac{(1-p)\phi(z_i)}{(1-p)\phi(z_i) +
    p\,\phi(z_i/\sqrt{1+u})/\sqrt{1+u}}.
    $$

    Args:
      x: observations, shape ``(*batch, n)``: list, NumPy, JAX or pandas Series (its index comes back as
        ``result.labels``); all finite.
      p: as in `bayes_oracle_threshold`.
      tau2: as in `bayes_oracle_threshold`.
      sigma: as in `bayes_oracle_threshold`.
      delta0: as in `bayes_oracle_threshold`.
      deltaA: as in `bayes_oracle_threshold`.

    Returns:
      `OracleResult` (``reject``, ``lfdr``, ``threshold``, ``labels``).

    Raises:
      ValueError: as `bayes_oracle_threshold`; NaN or infinite values in ``x``.

    References:
      Bogdan, Chakrabarti, Frommlet & Ghosh (2011), arXiv:1002.3501.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.stats import bayes_oracle_test
      >>> bayes_oracle_test(jnp.array([1.0, 3.5, 3.6]), p=0.01, tau2=11.645).reject
      Array([False, False,  True], dtype=bool)
    """
    x, labels = prepare_scores(x, "bayes_oracle_test")
    dt, pp, u, s, d0, dA = _params(p, tau2, sigma, delta0, deltaA, extra=(x,))
    warn_if_pvalues(x, s, "bayes_oracle_test", stacklevel=2)
    reject, lfdr, c2 = _bo_test(x, pp, u, s, d0, dA)
    return OracleResult(reject=reject, lfdr=lfdr, threshold=c2, _labels=labels)


class ThresholdRisk(eqx.Module):
    """Exact per-test error rates and Bayes risk of the rule "reject iff $z^2>c^2$" (`threshold_risk`).

    Attributes:
      type1: $t_1=P(\\text{reject}\\mid\\mu=0)=2\\bar\\Phi(c)$.
      type2: $t_2=P(\\text{accept}\\mid\\mu\\ne0)=2\\Phi(c/\\sqrt{1+u})-1$.
      risk: per-test Bayes risk $(1-p)\\delta_0 t_1 + p\\,\\delta_A t_2$ (multiply by ``n`` for the total).
    """

    type1: Float[Array, "..."]
    type2: Float[Array, "..."]
    risk: Float[Array, "..."]


def threshold_risk(
    c2: ScalarOrBatch,
    p: ScalarOrBatch,
    tau2: ScalarOrBatch,
    sigma: RealScalarLike = 1.0,
    delta0: RealScalarLike = 1.0,
    deltaA: RealScalarLike = 1.0,
) -> ThresholdRisk:
    r"""Exact per-test type I/II errors and Bayes risk of any fixed threshold rule $z^2 > c^2$.

    $$
    t_1 = 2(1-\Phi(c)),\qquad t_2 = 2\Phi\big(c/\sqrt{1+u}\big) - 1,\qquad
    R/n = (1-p)\,\delta_0\, t_1 + p\,\delta_A\, t_2,
    $$

    with $c=\sqrt{\max(c^2,0)}$ and $u=\tau^2/\sigma^2$: under the null $z\sim N(0,1)$ and under the
    alternative $z\sim N(0,1+u)$, so $t_1=P(|z|>c\mid H_0)$ and $t_2=P(|z|\le c\mid H_A)$. Computed
    with $\bar\Phi$ directly (no $1-\Phi$ cancellation); float64 is still advised for $n\ge10^8$.

    Args:
      c2: threshold(s) on $(x/\sigma)^2$; any shape, broadcast with the other arguments.
      p: as in `bayes_oracle_threshold`.
      tau2: as in `bayes_oracle_threshold`.
      sigma: as in `bayes_oracle_threshold`.
      delta0: as in `bayes_oracle_threshold`.
      deltaA: as in `bayes_oracle_threshold`.

    Returns:
      `ThresholdRisk` with ``type1``, ``type2`` and per-test ``risk``.

    Raises:
      ValueError: ``p`` outside (0, 1), non-positive variances/losses, NaN threshold.

    References:
      Bogdan, Chakrabarti, Frommlet & Ghosh (2011), Ann. Statist. 39(3), arXiv:1002.3501, section 3.

    Examples:
      >>> from icmlx.stats import threshold_risk
      >>> from icmlx.stats import bayes_oracle_threshold, calibrate_tau2
      >>> tau2 = calibrate_tau2(0.01)       # C = 1 regime, n = 1e4 with p = n^-1/2
      >>> r = threshold_risk(bayes_oracle_threshold(0.01, tau2), p=0.01, tau2=tau2)
      >>> print(f"{float(r.type1):.3e} {float(r.type2):.4f} {float(r.risk) / 0.01:.4f}")
      3.590e-04 0.6844 0.7199
    """
    dt, pp, u, _, d0, dA = _params(p, tau2, sigma, delta0, deltaA, extra=(c2,))
    t1, t2, risk = _risk(check_scalar("c2", c2, dt, allow_inf=True), pp, u, d0, dA)
    return ThresholdRisk(type1=t1, type2=t2, risk=risk)


def abos_risk_ratio(
    c2: ScalarOrBatch,
    p: ScalarOrBatch,
    tau2: ScalarOrBatch,
    sigma: RealScalarLike = 1.0,
    delta0: RealScalarLike = 1.0,
    deltaA: RealScalarLike = 1.0,
) -> Float[Array, "..."]:
    r"""Exact ratio $R_\text{rule}/R_\text{BO}$ of a fixed threshold rule to the Bayes oracle.

    A sequence of rules is asymptotically Bayes optimal under sparsity (ABOS) iff this ratio tends to 1 under the
    asymptotic regime $p\to0$, $u\to\infty$, $\log(v)/u\to C\in(0,\infty)$ ($v=uf^2\delta^2$;
    see `calibrate_tau2`). There $R_\text{BO}=np\,\delta_A(2\Phi(\sqrt C)-1)(1+o(1))$, but the
    $o(1)$ term decays slowly (about 5% at $n=10^4$), so finite-n claims must use this exact ratio, not
    the limit constant $2\Phi(\sqrt C)-1$. A fixed threshold $c_n^2$ is ABOS iff
    $c_n^2=\log v_n+z_n$ with $z_n=o(\log v_n)$ and $z_n+2\log\log v_n\to\infty$: the first keeps
    the type II error at $2\Phi(\sqrt C)-1$, the second makes the type I risk negligible.

    Args:
      c2: threshold(s) $c^2$ of the rule on $(x/\sigma)^2$ (e.g. from `relative_belief_threshold`,
        `bonferroni_threshold`, `bfdr_threshold`, or the square of `horseshoe_threshold`).
      p: as in `bayes_oracle_threshold`.
      tau2: as in `bayes_oracle_threshold`.
      sigma: as in `bayes_oracle_threshold`.
      delta0: as in `bayes_oracle_threshold`.
      deltaA: as in `bayes_oracle_threshold`.

    Returns:
      The risk ratio (>= 1), broadcast shape of the arguments.

    Raises:
      ValueError: as `threshold_risk`.

    References:
      Bogdan, Chakrabarti, Frommlet & Ghosh (2011), arXiv:1002.3501.

    Examples:
      >>> from icmlx.stats import abos_risk_ratio, relative_belief_threshold
      >>> c2 = relative_belief_threshold(11.645 * 99.0**2)   # RB, preset "oracle" (H1), n = 1e4
      >>> round(float(abos_risk_ratio(c2, p=0.01, tau2=11.645)), 4)
      1.0091
    """
    dt, pp, u, s, d0, dA = _params(p, tau2, sigma, delta0, deltaA, extra=(c2,))
    return _ratio(check_scalar("c2", c2, dt, allow_inf=True), pp, u, d0, dA)


def calibrate_tau2(
    p: ScalarOrBatch,
    C: RealScalarLike = 1.0,
    sigma: RealScalarLike = 1.0,
    delta: RealScalarLike = 1.0,
    *,
    num_steps: int = 60,
) -> Float[Array, "..."]:
    r"""Slab variance $\tau^2$ that puts $(p,\tau^2)$ on the asymptotic regime $\log v/u = C$.

    Solves $C u = \log u + 2\log(f\delta)$ for its larger root ($u=\tau^2/\sigma^2$, $f=(1-p)/p$)
    by Newton's method from the right (monotone convergence; ``lax.fori_loop``), and returns
    $\tau^2=\sigma^2 u$. No root exists when $2\log(f\delta) < 1 + \log C$; that is refused (a
    ``ValueError`` for concrete inputs, an ``eqx.error_if`` under ``jit``), as is a root that ``num_steps`` Newton
    steps did not reach.

    Args:
      p: non-null proportion in (0, 1); scalar or array.
      C: the constant $C>0$ of the regime (Bogdan et al.'s assumption (A)).
      sigma: noise standard deviation (> 0).
      delta: loss ratio $\delta_0/\delta_A$ (> 0).
      num_steps: Newton steps (static).

    Returns:
      $\tau^2$, the broadcast shape of ``p``/``C``.

    Raises:
      ValueError: out-of-range arguments; ``num_steps`` not a positive int; no root.

    References:
      Bogdan, Chakrabarti, Frommlet & Ghosh (2011), arXiv:1002.3501, assumption (A).

    Examples:
      >>> from icmlx.stats import calibrate_tau2
      >>> round(float(calibrate_tau2(0.01)), 3)
      11.645
    """
    num_steps = static_int("calibrate_tau2", "num_steps", num_steps)
    dt = float_dtype(p, C, sigma, delta)
    pp = check_scalar("p", p, dt, lo=0.0, hi=1.0)
    cc = positive("C", C, dt)
    s = positive("sigma", sigma, dt)
    d = positive("delta", delta, dt)
    u, ok = _calibrate(pp, cc, d, num_steps)
    msg = ("calibrate_tau2: no tau2 solves C*u = log(u) + 2 log((1-p) delta / p) (a root needs "
           "2 log((1-p) delta / p) >= 1 + log C): lower C or p")
    if is_traced(u) or is_traced(ok):
        u = eqx.error_if(u, jnp.any(~ok), msg)
    elif not bool(np.all(np.asarray(ok))):
        raise ValueError(msg)
    return s * s * u


@functools.partial(jax.jit, static_argnums=3)
def _calibrate(pp, cc, d, num_steps):
    L = 2.0 * (jnp.log1p(-pp) - jnp.log(pp) + jnp.log(d))
    L, cc = jnp.broadcast_arrays(L, cc)
    u0 = 2.0 * (jnp.abs(L) + 1.0) / cc + 1.0 / cc + 1.0

    def body(_, u):
        h = cc * u - jnp.log(u) - L
        dh = cc - 1.0 / u
        return jnp.maximum(u - h / dh, 1.0 / cc)

    u = jax.lax.fori_loop(0, num_steps, body, u0)
    resid = jnp.abs(cc * u - jnp.log(u) - L)
    ok = resid <= 1e-3 * jnp.maximum(1.0, jnp.abs(L))
    return u, ok


def bfdr_threshold(
    alpha: ScalarOrBatch,
    p: ScalarOrBatch,
    tau2: ScalarOrBatch,
    sigma: RealScalarLike = 1.0,
    *,
    num_steps: int = 80,
) -> Float[Array, "..."]:
    r"""Fixed threshold $c^2$ with Bayesian FDR equal to ``alpha`` (the large-n limit of BH at level alpha).

    $$
    \mathrm{BFDR}(c)=\frac{(1-p)t_1(c)}{(1-p)t_1(c)+p(1-t_2(c))} = \alpha,
    $$

    solved by bisection (BFDR decreases in $c$) on $[0, c_{\max}]$, with
    $c_{\max}=40+\sqrt{2(1+u)/u\,(|\log\frac{1-p}{p}|+|\log\frac{\alpha}{1-\alpha}|+\log(1+u)+1)}$, past
    which the log BFDR odds, about $\log\frac{1-p}{p}+\tfrac12\log(1+u)-\tfrac{c^2u}{2(1+u)}$, are below
    the target. If $\mathrm{BFDR}(0)=1-p\le\alpha$, the result is 0 (reject all). A target that the
    bracket does not reach in the working precision is refused.

    Args:
      alpha: target level in (0, 1).
      p: two-groups parameters.
      tau2: two-groups parameters.
      sigma: two-groups parameters.
      num_steps: bisection steps (static).

    Returns:
      $c^2$ on $(x/\sigma)^2$, broadcast shape.

    Raises:
      ValueError: out-of-range arguments; ``num_steps`` not a positive int; a level no threshold reaches.

    References:
      Bogdan, Chakrabarti, Frommlet & Ghosh (2011), arXiv:1002.3501, section 5 (BH as a threshold rule).
      Efron & Tibshirani (2002), Genet. Epidemiol. 23 (Bayesian FDR).

    Examples:
      >>> from icmlx.stats import bfdr_threshold, abos_risk_ratio, calibrate_tau2
      >>> tau2 = calibrate_tau2(0.01)
      >>> c2 = bfdr_threshold(0.05, p=0.01, tau2=tau2)
      >>> round(float(abos_risk_ratio(c2, p=0.01, tau2=tau2)), 3)
      1.011
    """
    num_steps = static_int("bfdr_threshold", "num_steps", num_steps)
    dt = float_dtype(alpha, p, tau2, sigma)
    a = check_scalar("alpha", alpha, dt, lo=0.0, hi=1.0)
    pp = check_scalar("p", p, dt, lo=0.0, hi=1.0)
    s = positive("sigma", sigma, dt)
    u = positive("tau2", tau2, dt) / s / s
    c2, ok = _bfdr(a, pp, u, num_steps)
    msg = ("bfdr_threshold: no threshold reaches BFDR = alpha in this precision (the slab u = tau2/sigma^2 is too "
           "weak for so small an alpha); raise alpha or tau2, or use float64")
    if is_traced(c2) or is_traced(ok):
        return eqx.error_if(c2, jnp.any(~ok), msg)
    if not bool(np.all(np.asarray(ok))):
        raise ValueError(msg)
    return c2


@functools.partial(jax.jit, static_argnums=3)
def _bfdr(a, pp, u, num_steps):
    a, pp, u = jnp.broadcast_arrays(a, pp, u)
    log_target = jnp.log(a) - jnp.log1p(-a)  # log odds alpha/(1-alpha)

    def log_odds(c):
        # log[(1-p) t1 / (p (1 - t2))] = log(1-p) - log p + log ndtr(-c) - log ndtr(-c/sqrt(1+u))
        from jax.scipy.special import log_ndtr

        return jnp.log1p(-pp) - jnp.log(pp) + log_ndtr(-c) - log_ndtr(-c / jnp.sqrt(1.0 + u))

    def body(_, lohi):
        lo, hi = lohi
        mid = 0.5 * (lo + hi)
        too_liberal = log_odds(mid) > log_target
        return jnp.where(too_liberal, mid, lo), jnp.where(too_liberal, hi, mid)

    lo0 = jnp.zeros_like(u)
    spread = jnp.abs(jnp.log1p(-pp) - jnp.log(pp)) + jnp.abs(log_target) + jnp.log1p(u) + 1.0
    hi0 = 40.0 + jnp.sqrt(2.0 * (1.0 + u) / u * spread)
    lo, hi = jax.lax.fori_loop(0, num_steps, body, (lo0, hi0))
    at0 = log_odds(lo0) <= log_target
    ok = at0 | (log_odds(hi) <= log_target) & jnp.isfinite(hi)
    c = jnp.where(at0, 0.0, hi)
    return c * c, ok
