r"""Relative belief ratio, Evans's strength of evidence, and the relative-belief multiple test.

For $X_i\mid\mu_i\sim N(\mu_i,\sigma^2)$ and the one-group prior $\mu_i\sim N(0,\gamma^2)$, write
$g=\gamma^2/\sigma^2$ and $z_i=x_i/\sigma$. The posterior is
$\mu_i\mid x_i\sim N(g x_i/(1+g),\ \sigma^2 g/(1+g))$, so the relative belief ratio of $\mu_i=0$,
$RB(0\mid x_i)=\pi(0\mid x_i)/\pi(0)=f(x_i\mid0)/m(x_i)$, is the ratio of the $N(0,\sigma^2)$ and
$N(0,\sigma^2+\gamma^2)$ densities at $x_i$:

$$
RB(0\mid x_i)=\sqrt{1+g}\;\exp\!\Big(-\frac{z_i^2\,g}{2(1+g)}\Big).
$$
"""

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.scipy.special import ndtr
from jaxtyping import Array, ArrayLike, Bool, Float

from .._checks import check_values
from .._types import RealScalarLike
from ._checks import Labels, as_input_array, check_no_nan, float_dtype, positive, prepare_scores, warn_if_pvalues
from ._gamma2 import AbstractGamma2, EBSparsityGamma2, OracleGamma2, SparsityGamma2, resolve_rule
from ._records import TestDecisions
from ._sigma import AbstractSigma, resolve_sigma

__all__ = [
    "log_relative_belief_ratio",
    "relative_belief_ratio",
    "rb_strength",
    "relative_belief_threshold",
    "RelativeBeliefResult",
    "relative_belief_test",
]

ScalarOrBatch = RealScalarLike | Float[Array, "..."]


def _prep(x, gamma2, sigma):
    x = check_no_nan(as_input_array(x, "x")[0], "x")
    dt = x.dtype
    return x, positive("gamma2", gamma2, dt), positive("sigma", sigma, dt)


@jax.jit
def _log_rb(x, g2, s):
    g = g2 / s / s  # not g2 / s^2, which overflows for large s
    z = x / s
    return 0.5 * jnp.log1p(g) - 0.5 * (z * z) * (g / (1.0 + g))


@jax.jit
def _strength(x, g2, s):
    g = g2 / s / s  # not g2 / s^2, which overflows for large s
    az = jnp.abs(x / s)
    sq1 = jnp.sqrt(1.0 + g)
    a = az * jnp.sqrt(g / (1.0 + g))
    b = az * (sq1 + 1.0 / sq1) / jnp.sqrt(g)  # = |z| (2+g)/sqrt(g(1+g)), overflow-free
    return ndtr(-a) + ndtr(-b)


@jax.jit
def _rb_c2(g2, kk, s):
    g = g2 / s / s  # not g2 / s^2, which overflows for large s
    return (1.0 + 1.0 / g) * (jnp.log1p(g) - 2.0 * jnp.log(kk))


@jax.jit
def _rb_test_core(x, g2, s, kk):
    c2 = _rb_c2(g2, kk, s)
    z = x / s
    return z * z > c2, _log_rb(x, g2, s), _strength(x, g2, s), c2


def log_relative_belief_ratio(
    x: ArrayLike, gamma2: ScalarOrBatch, sigma: RealScalarLike = 1.0
) -> Float[Array, "*shape"]:
    r"""Log relative belief ratio of $\mu_i = 0$ under the one-group prior $\mu_i\sim N(0,\gamma^2)$.

    With $X_i\mid\mu_i\sim N(\mu_i,\sigma^2)$, $g=\gamma^2/\sigma^2$, $z=x/\sigma$:

    $$
    \log RB(0\mid x) = \log\frac{\pi(0\mid x)}{\pi(0)} = \tfrac12\log(1+g) - \frac{z^2 g}{2(1+g)}.
    $$

    By Bayes' theorem $\pi(0\mid x)/\pi(0)=f(x\mid0)/m(x)$ with the marginal $m=N(0,\sigma^2+\gamma^2)$,
    which gives the display; it equals the Savage–Dickey Bayes factor $BF_{01}$. $RB<1$ is evidence
    against $H_0:\mu=0$, $RB>1$ evidence for it (Evans's principle of evidence).

    Args:
      x: observations, any shape, floating (float64 for extreme thresholds).
      gamma2: prior variance $\gamma^2>0$; a scalar or an array broadcastable against ``x``.
      sigma: known noise standard deviation (> 0).

    Returns:
      $\log RB(0\mid x)$, same shape and dtype as ``x``.

    Raises:
      ValueError: non-positive ``gamma2``/``sigma`` (eagerly for Python numbers, at run time for arrays); NaN in
        ``x``.

    References:
      Evans (2015), *Measuring Statistical Evidence Using Relative Belief*, CRC. Al-Labadi, Alzaatreh & Evans
      (2023), arXiv:2301.08994. "An Evidential Route to Asymptotic Bayes Optimality under Sparsity", ICML 2026.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.stats import log_relative_belief_ratio
      >>> lrb = log_relative_belief_ratio(jnp.array([2.5, 0.0]), 100.0)
      >>> [round(v, 5) for v in jnp.exp(lrb).tolist()]
      [0.45544, 10.04988]
    """
    return _log_rb(*_prep(x, gamma2, sigma))


def relative_belief_ratio(
    x: ArrayLike, gamma2: ScalarOrBatch, sigma: RealScalarLike = 1.0
) -> Float[Array, "*shape"]:
    r"""Relative belief ratio $RB(0\mid x)=\sqrt{1+g}\,\exp(-z^2 g/(2(1+g)))$.

    See `log_relative_belief_ratio` (prefer the log for large $g$ or $|z|$).

    Args:
      x: observations, any shape.
      gamma2: prior variance $\gamma^2>0$ (scalar or broadcastable).
      sigma: noise standard deviation (> 0).

    Returns:
      $RB(0\mid x)$, same shape and dtype as ``x``.

    Raises:
      ValueError: as `log_relative_belief_ratio`.

    References:
      Evans (2015), *Measuring Statistical Evidence Using Relative Belief*, CRC.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.stats import relative_belief_ratio
      >>> rb = relative_belief_ratio(jnp.array([3.0, -2.0]), jnp.array([1e4, 1e6]))
      >>> [round(v, 3) for v in rb.tolist()]
      [1.111, 135.336]
    """
    return jnp.exp(log_relative_belief_ratio(x, gamma2, sigma))


def rb_strength(
    x: ArrayLike, gamma2: ScalarOrBatch, sigma: RealScalarLike = 1.0
) -> Float[Array, "*shape"]:
    r"""Evans's strength of the evidence about $\mu=0$: $\Pi(RB(\mu\mid x)\le RB(0\mid x)\mid x)$.

    Under the normal model $RB(\mu\mid x)\propto$ likelihood, so the set is $|\mu-x|\ge|x|$; under the
    posterior $N(gx/(1+g),\sigma^2g/(1+g))$ its two tails give

    $$
    Str(0) = \Phi\!\Big(-|z|\sqrt{\tfrac{g}{1+g}}\Big) +
    \Phi\!\Big(-|z|\,\tfrac{2+g}{\sqrt{g(1+g)}}\Big),
    $$

    which tends to the two-sided p-value $2\bar\Phi(|z|)$ as $g\to\infty$. A small strength with
    $RB<1$ is strong evidence against $H_0$; a large strength with $RB>1$, strong evidence for.

    Args:
      x: observations, any shape.
      gamma2: prior variance (scalar or broadcastable).
      sigma: noise standard deviation (> 0).

    Returns:
      The strength in $[0, 1]$, same shape and dtype as ``x``.

    Raises:
      ValueError: as `log_relative_belief_ratio`.

    References:
      Evans (2015), CRC, ch. 4. Al-Labadi, Alzaatreh & Evans (2023), arXiv:2301.08994.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.stats import rb_strength
      >>> st = rb_strength(jnp.array([2.5, 3.0]), jnp.array([100.0, 1e4]))
      >>> [round(v, 5) for v in st.tolist()]
      [0.01202, 0.0027]
    """
    return _strength(*_prep(x, gamma2, sigma))


def relative_belief_threshold(
    gamma2: ScalarOrBatch, k: ScalarOrBatch = 1.0, sigma: RealScalarLike = 1.0
) -> Float[Array, "..."]:
    r"""The threshold on $z^2=(x/\sigma)^2$ equivalent to the rule $RB(0\mid x)<k$.

    $$
    RB(0\mid x) < k \iff z^2 > c^2_{RB} = (1 + 1/g)\,(\log(1+g) - 2\log k),\qquad g=\gamma^2/\sigma^2,
    $$

    from $\tfrac12\log(1+g)-\tfrac12 z^2 g/(1+g)<\log k$. A negative value means every test is rejected.

    Args:
      gamma2: prior variance (> 0), scalar or array.
      k: evidence cutoff (> 0); ``k=1`` is the principle of evidence.
      sigma: noise standard deviation (> 0).

    Returns:
      $c^2_{RB}$, the broadcast shape of the arguments.

    Raises:
      ValueError: non-positive arguments.

    References:
      Evans (2015), CRC. Bogdan et al. (2011), arXiv:1002.3501 (fixed-threshold rules).

    Examples:
      >>> from icmlx.stats import relative_belief_threshold
      >>> round(float(relative_belief_threshold(100.0)), 4)  # (1.01) log(101)
      4.6613
    """
    dt = float_dtype(gamma2, k, sigma)
    g2 = positive("gamma2", gamma2, dt)
    kk = positive("k", k, dt)
    s = positive("sigma", sigma, dt)
    return _rb_c2(g2, kk, s)



class RelativeBeliefResult(TestDecisions):
    r"""Result of `relative_belief_test`.

    Prints as ``RelativeBeliefResult(num_tests=..., num_rejected=..., gamma2=..., threshold=..., k=..., sigma=...)``.

    Attributes:
      reject: ``RB(0|x_i) < k``, shape of ``x``.
      log_rb: $\log RB(0\mid x_i)$, shape of ``x``.
      strength: Evans's strength $Str(0)$, shape of ``x``.
      threshold: the equivalent cutoff $c^2_{RB}$ on $(x/\sigma)^2$ (broadcastable to ``x``).
      gamma2: the $\gamma^2$ used, in the units of ``x`` (broadcastable to ``x``).
      k: the evidence cutoff.
      sigma: the noise standard deviation used: the number given, or the estimate per row, shape ``(*batch, 1)``,
        for ``sigma="mad"``.
      labels: the index of the pandas Series passed as ``x`` (``None`` otherwise); `rejected_labels` reads
        the rejected ones.
    """

    reject: Bool[Array, "*shape"]
    log_rb: Float[Array, "*shape"]
    strength: Float[Array, "*shape"]
    threshold: Float[Array, "..."]
    gamma2: Float[Array, "..."]
    k: Float[Array, ""]
    sigma: Float[Array, "..."] | None = None
    _labels: Labels | None = eqx.field(static=True, default=None)

    @property
    def rb(self) -> Float[Array, "*shape"]:
        r"""$RB(0\mid x_i)$."""
        return jnp.exp(self.log_rb)

    @property
    def num_rejected(self) -> Array:
        """Number of rejections along the last axis."""
        return jnp.sum(self.reject, axis=-1)

    _repr_fields = ("gamma2", "threshold", "k", "sigma",)



def relative_belief_test(
    x: Any,
    *,
    gamma2: ScalarOrBatch | AbstractGamma2 | str | None = None,
    k: RealScalarLike = 1.0,
    sigma: RealScalarLike | AbstractSigma | str = 1.0,
) -> RelativeBeliefResult:
    r"""Relative-belief multiple test: reject $H_{0i}:\mu_i=0$ iff $RB(0\mid x_i) < k$.

    One-group prior $\mu_i\sim N(0,\gamma^2)$ with a single hyperparameter. The rule is the fixed threshold

    $$
    z_i^2 > c^2_{RB}=(1+1/g)\big(\log(1+g)-2\log k\big),\qquad g=\gamma^2/\sigma^2
    $$

    (`relative_belief_threshold`), so `threshold_risk` gives its exact two-groups risk. With
    ``gamma2=tau2`` and ``k = p/((1-p) delta)`` it *is* the Bayes oracle. With ``k=1`` the multiplicity penalty is
    carried by $\gamma^2$ instead (the Occam factor $\sqrt{1+g}$), and the rule is asymptotically Bayes
    optimal under sparsity (ABOS) when $\log g_n=\log v_n+o(\log v_n)$ with the conditions of
    `relative_belief_gamma2`: `OracleGamma2` (H1) and `SparsityGamma2` (H2) are ABOS,
    `EBSparsityGamma2` (H3) is as good as H1 when the effects are large, `EBStoreyGamma2` (H5)
    is the plug-in normal-slab oracle and `EBLocalFDRGamma2` (H6) the plug-in nonparametric two-groups rule.

    **Default** ``gamma2``: `EBLocalFDRGamma2` (it needs the data only: the two-groups local fdr, with Storey's
    $\hat\pi_0$ and the alternative by grid NPMLE, gives the $|z|$ cutoff of least estimated misclassification
    risk, and $\gamma^2$ is set so that the test rejects past it). Measured with
    ``benchmarks/stats_default_gamma2.py`` (results in ``benchmarks/results/stats_default_gamma2.json``) on two
    kinds of design. (1) Expression-study t designs: 10,000 two-sample t-tests with 10 observations per group,
    converted to z-scores, 1%, 5% and 10% signals, standardised effects N(0, 1) or fixed ±1.5, 50 replicates: its
    misclassification risk was 1.000–1.007 times the exact Bayes rule's with random effects and 1.002–1.013 times
    with fixed effects, and 0.88–0.997 times that of BH at level 0.1 in each of the six designs (BH(0.1): 1.01–1.04
    and 1.12–1.15 times the Bayes rule's; the previous default `EBStoreyGamma2`, whose normal slab misplaces the
    cutoff for fixed effects, 1.007–1.015 and 1.04–1.14). (2) Normal two-groups data (`simulate_two_groups`,
    $p\in\{0.001, 0.005, 0.01, 0.05, 0.1, 0.2\}$, $\tau^2\in\{4, 9, 25\}$ and the $C=1$ value of
    `calibrate_tau2`, $n=10^4$, 100 replicates): median 1.004 times the oracle's risk, at most 1.094 (at
    $p=0.001$, ten signals per row; `EBStoreyGamma2` median 1.016, at most 1.128; BH(0.1) median 1.006, at most
    1.041), FDR 0.06–0.19, the Bayes rule's own trade of false positives for power. `EBMMLEGamma2` had the FDR up
    to 0.35 and up to 3.8 times the oracle's risk.

    The test minimises the number of misclassified hypotheses (false positives plus false negatives), like the
    Bayes oracle; it does **not** control the FDR at a chosen level. For that, use
    ``benjamini_hochberg(two_sided_pvalues(x), alpha)``.

    Args:
      x: observations (z-scores when ``sigma=1``), shape ``(*batch, n)``: a list, NumPy or JAX array, or a pandas
        Series (its index comes back as ``result.labels``); tests along the last axis, the data-driven rules per
        row. All values must be finite. Values that all lie in ``[0, 1]`` look like p-values and give a warning.
      gamma2: $\gamma^2$: a number or array (> 0, broadcastable against ``x``), a rule object
        (`OracleGamma2`, `SparsityGamma2`, `EBSparsityGamma2`, `EBMMLEGamma2`,
        `EBStoreyGamma2`, `EBLocalFDRGamma2`), the shorthand ``"eb_sparsity"``/``"eb_mmle"``/``"eb_storey"``/
        ``"eb_lfdr"``, or ``None`` for the default ``EBLocalFDRGamma2()``. Rule objects and strings are static
        under ``jax.jit``.
      k: evidence cutoff (> 0), default 1 (Evans's principle of evidence).
      sigma: noise standard deviation: a known number (> 0), or ``"mad"``/`MADSigma` to estimate it per row
        (``"empirical"``/`EmpiricalNullSigma`: the empirical null's centre and scale; ``x`` is centred first)
        from the data (`estimate_sigma`).

    Returns:
      `RelativeBeliefResult` (``reject``, ``log_rb``, ``strength``, ``threshold``, ``gamma2``, ``k``,
      ``sigma``, ``labels``).

    Raises:
      ValueError: an unknown preset or out-of-range values; NaN or infinite values in ``x`` (a concrete ``x`` at
        once; under ``jit`` at run time); a data-driven rule that gave a non-finite $\gamma^2$.

    References:
      "An Evidential Route to Asymptotic Bayes Optimality under Sparsity", ICML 2026. Evans & Tomal (2018),
      arXiv:1609.06418. Bogdan, Chakrabarti, Frommlet & Ghosh (2011), arXiv:1002.3501.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.stats import SparsityGamma2, relative_belief_test
      >>> res = relative_belief_test(jnp.array([0.5, 2.0, 4.5, -5.0]), gamma2=SparsityGamma2(p=0.01))
      >>> print(res.reject, round(float(res.threshold), 3), int(res.num_rejected))
      [False False  True  True] 9.191 2
      >>> import jax
      >>> from icmlx.stats import simulate_two_groups
      >>> z = simulate_two_groups(jax.random.key(0), 10_000, p=0.01, tau2=16.0).x[0]
      >>> relative_belief_test(z)   # the default gamma2: EBLocalFDRGamma2()
      RelativeBeliefResult(num_tests=10000, num_rejected=52, gamma2=[1.134e+05], threshold=[11.64], k=1, sigma=1)
    """
    rule = resolve_rule(gamma2, "relative_belief_test")
    x, labels = prepare_scores(x, "relative_belief_test")
    dt = x.dtype
    kk = positive("k", k, dt)
    x, s, estimated = resolve_sigma(sigma, x, "relative_belief_test")
    warn_if_pvalues(x, None if estimated else s, "relative_belief_test", stacklevel=2)
    if estimated:
        z = x / s
        if rule is not None:
            g2_z = rule._gamma2_standardised(z, s).astype(dt)
        else:
            g2_z = positive("gamma2", gamma2, dt) / s / s
        reject, log_rb, strength, c2 = _rb_test_core(z, g2_z, jnp.ones((), dt), kk)
        g2 = g2_z * s * s
    else:
        if rule is not None:
            g2 = rule._gamma2(x, sigma).astype(dt)
        else:
            g2 = positive("gamma2", gamma2, dt)
        reject, log_rb, strength, c2 = _rb_test_core(x, g2, s, kk)
    if rule is not None and not isinstance(rule, (OracleGamma2, SparsityGamma2, EBSparsityGamma2)):
        g2 = check_values(
            g2, lambda xp, v: ~xp.isfinite(v),
            f"relative_belief_test: {type(rule).__name__}() gave a non-finite gamma2 (its fit to x failed); "
            "pass gamma2 as a number or use EBSparsityGamma2()",
        )
    return RelativeBeliefResult(reject=reject, log_rb=log_rb, strength=strength, threshold=c2, gamma2=g2, k=kk,
                                sigma=s, _labels=labels)
