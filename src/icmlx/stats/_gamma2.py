
r"""Rules for the one hyperparameter $\gamma^2$ of the relative-belief test, as strategy objects.

The relative-belief rule "reject iff $RB(0\mid x_i)<1$" under the one-group prior $\mu_i\sim
N(0,\gamma^2)$ is the fixed threshold $z_i^2 > c^2_{RB}=(1+1/g)\log(1+g)$ with $g=\gamma^2/\sigma^2$, so
$c^2_{RB}=\log g+o(1)$ for large $g$. In the two-groups model ($u=\tau^2/\sigma^2$,
$f=(1-p)/p$, $\delta=\delta_0/\delta_A$, $v=uf^2\delta^2$) a fixed threshold $c_n^2$ is
asymptotically Bayes optimal under sparsity (ABOS) iff $c_n^2=\log v_n+z_n$ with $z_n=o(\log v_n)$ and
$z_n+2\log\log v_n\to\infty$ (Bogdan et al. 2011). Hence the RB rule is ABOS iff $\log g_n=\log v_n+z_n$
with the same two conditions: $\gamma^2$ must carry the multiplicity penalty $f^2$, which makes it much
larger than $\tau^2$ (with $\gamma^2=\tau^2$, $c^2\approx\log u\ll\log v$: never ABOS). Each rule
below is one way to meet this; they are derived from those conditions, not quoted from the ICML 2026 paper, whose own
prescription is not public.
"""

import abc
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._checks import check_int, check_values
from .._types import RealScalarLike
from ._checks import as_input_array, check_finite, check_scalar, float_dtype, positive, static_bool
from ._empirical_bayes import _sparsity_core, fit_two_groups

__all__ = [
    "PRESETS",
    "AbstractGamma2",
    "OracleGamma2",
    "SparsityGamma2",
    "EBSparsityGamma2",
    "EBMMLEGamma2",
    "EBStoreyGamma2",
    "EBLocalFDRGamma2",
    "relative_belief_gamma2",
]

#: The strings accepted for ``gamma2``: shorthands of the rules without settings, `EBSparsityGamma2`,
#: `EBMMLEGamma2`, `EBStoreyGamma2` and `EBLocalFDRGamma2` (the rules with settings are passed as objects).
PRESETS = ("eb_sparsity", "eb_mmle", "eb_storey", "eb_lfdr")

ScalarOrBatch = RealScalarLike | Float[Array, "..."]


def _static_float(owner: str, name: str, value: Any, *, lo: float, hi: float | None = None) -> float:
    """``value`` as a Python float in ``(lo, hi)``, or a ``ValueError``/``TypeError`` naming ``owner`` and ``name``."""
    if isinstance(value, jax.core.Tracer):
        raise TypeError(
            f"{owner}: {name} must be a real number (a static setting: pass a Python float), got {name}=a traced "
            "value; for a traced or per-row value compute gamma2 as an array and pass "
            "relative_belief_test(x, gamma2=array)"
        )
    arr = None if isinstance(value, bool | str) or value is None else np.asarray(value)
    if arr is None or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise TypeError(f"{owner}: {name} must be a real number, got {name}={value!r}")
    if arr.ndim != 0:
        raise ValueError(
            f"{owner}: {name} must be a scalar (a static setting), got shape {arr.shape}; for per-row values compute "
            "gamma2 as an array and pass relative_belief_test(x, gamma2=array)"
        )
    v = float(arr)
    if not (v > lo and (hi is None or v < hi) and np.isfinite(v)):
        raise ValueError(f"{owner}: {name} must lie in ({lo}, {'inf' if hi is None else hi}) and be finite, "
                         f"got {name}={value!r}")
    return v


def _finite_gamma2(g2: Any, rule: str) -> Any:
    """Refuse a gamma^2 that overflowed the working dtype (a tiny ``p`` makes ``((1 - p) / p)^2`` huge)."""
    dt = np.dtype(g2.dtype).name
    return check_values(
        g2, lambda xp, v: ~xp.isfinite(v),
        f"{rule}: gamma2 = ((1-p)/p)^2 * ... overflows {dt} for so small a p; pass float64 inputs with "
        "jax_enable_x64, or give gamma2 as a number",
    )


class AbstractGamma2(eqx.Module):
    """Base class of the rules that choose $\\gamma^2$ for `relative_belief_test`.

    A rule is an ``eqx.Module`` with static, hashable fields only (the settings of that rule and nothing else); it
    is not callable. `relative_belief_gamma2` evaluates it.
    """

    @abc.abstractmethod
    def _gamma2(self, x: Any, sigma: Any) -> Float[Array, "..."]:
        """gamma^2 for z-scores ``x`` with noise ``sigma`` (each rule implements it)."""

    def _gamma2_standardised(self, z: Any, scale: Any) -> Float[Array, "..."]:
        """gamma^2 / scale^2 for the standardised data ``z = x / scale`` (``scale`` estimated per row)."""
        return self._gamma2(z, 1.0)


class OracleGamma2(AbstractGamma2):
    r"""Rule H1, "oracle": $\gamma^2=\tau^2\,(f\delta)^2$, i.e. $g=v$, from the known two-groups parameters.

    Then $\log g_n=\log v_n$ exactly ($z_n=0$), the fastest route to ABOS: the exact risk ratio to the
    Bayes oracle is 1.0168 at $n=10^2$ and 1.0091 at $n=10^4$ (design $p=n^{-1/2}$, $C=1$).

    Attributes:
      p: non-null proportion in (0, 1) (a Python number).
      tau2: slab variance $\tau^2>0$.
      delta: loss ratio $\delta_0/\delta_A>0$.

    Raises:
      ValueError: a setting out of range (the message names it).
      TypeError: a traced or non-numeric setting.

    Examples:
      >>> from icmlx.stats import OracleGamma2, relative_belief_gamma2
      >>> round(float(relative_belief_gamma2(OracleGamma2(p=0.01, tau2=11.645))), 1)
      114132.6
    """

    p: float = eqx.field(static=True)
    tau2: float = eqx.field(static=True)
    delta: float = eqx.field(static=True, default=1.0)

    def __init__(self, p: RealScalarLike, tau2: RealScalarLike, delta: RealScalarLike = 1.0):
        self.p = _static_float("OracleGamma2", "p", p, lo=0.0, hi=1.0)
        self.tau2 = _static_float("OracleGamma2", "tau2", tau2, lo=0.0)
        self.delta = _static_float("OracleGamma2", "delta", delta, lo=0.0)

    def _gamma2(self, x, sigma):
        return _oracle(x, self.p, self.tau2, sigma, self.delta)

    def _gamma2_standardised(self, z, scale):
        return _oracle(z, self.p, self.tau2, 1.0, self.delta) / (scale * scale)  # tau2 is in the units of x


class SparsityGamma2(AbstractGamma2):
    r"""Rule H2, "sparsity": $\gamma^2=\sigma^2 f^2$ with $f=(1-p)/p$; needs only $p$.

    Here $z_n\approx-\log u_n$ and $z_n+2\log\log v_n\approx\log\log v_n+\log C\to\infty$, so the rule is
    ABOS, but only at a log-log rate (exact risk ratio about 1.18 for $n\le10^8$).

    Attributes:
      p: non-null proportion in (0, 1) (a Python number).

    Raises:
      ValueError: ``p`` out of range.
      TypeError: a traced or non-numeric ``p``.

    Examples:
      >>> from icmlx.stats import SparsityGamma2, relative_belief_gamma2
      >>> float(relative_belief_gamma2(SparsityGamma2(p=0.01)))
      9801.0
    """

    p: float = eqx.field(static=True)

    def __init__(self, p: RealScalarLike):
        self.p = _static_float("SparsityGamma2", "p", p, lo=0.0, hi=1.0)

    def _gamma2(self, x, sigma):
        return _sparsity(x, self.p, sigma)


class EBSparsityGamma2(AbstractGamma2):
    r"""Rule H3, "eb_sparsity": $\gamma^2=\sigma^2\hat f^2$ with $\hat p$ from `estimate_sparsity`.

    The default of `relative_belief_test` before `EBStoreyGamma2` and `EBLocalFDRGamma2` (see their docstrings).
    Data-driven, per row of ``x``. The estimate $\hat p=\max(1/n,\#\{|x_i|>\sigma\sqrt{2\log n}\}/n)$ is about
    $pP$ with $P=2\bar\Phi(\sqrt{2\log n/(1+u)})$, so $g\approx f^2/P^2$, and $1/P^2$ is close
    to $u$ for $n\le10^8$: in practice the rule behaves like H1 (Monte Carlo risk ratio 1.013 at
    $n=10^2$, 1.003 at $n=10^4$). In the limit $1/P^2$ stays bounded while $u\to\infty$, so
    asymptotically it is like H2 (ABOS at a log-log rate). It has no settings.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.stats import EBSparsityGamma2, relative_belief_gamma2
      >>> x = jnp.concatenate([jnp.zeros(990), jnp.full((10,), 10.0)])
      >>> float(relative_belief_gamma2(EBSparsityGamma2(), x=x)[0])   # p_hat = 0.01
      9801.0
    """

    def _gamma2(self, x, sigma):
        return _eb_sparsity(x, sigma)


class EBStoreyGamma2(AbstractGamma2):
    r"""Rule H5, "eb_storey": the plug-in Bayes oracle's threshold, from Storey's $\hat\pi_0$ and a moment
    $\hat\tau^2$, expressed as $\gamma^2$.

    Per row: $\hat p=1-\hat\pi_0$ with $\hat\pi_0$ Storey's estimate from the two-sided p-values
    (`estimate_pi0`, ``method="bootstrap"``), kept in $[1/n, 1-1/n]$;
    $\hat u=\max(\overline{z^2}-1, 10^{-3})/\hat p$ (the slab variance from
    $E z^2=1+p u$); then $g$ solves $(1+1/g)\log(1+g)=c^2$ with
    $c^2=(1+1/\hat u)(\log(1+\hat u)+2\log\hat f)$ the Bayes oracle's threshold
    (`bayes_oracle_threshold`) at $(\hat p,\hat u)$, so the RB test at $k=1$ rejects exactly
    where the plug-in oracle does. `EBSparsityGamma2`'s $\hat p$ counts the tests past
    $\sqrt{2\log n}$ and so estimates $p\,P(|x|>\sqrt{2\log n}\mid\text{signal})$, far below
    $p$ when the effects are moderate (0.0027 for $p=0.05$ on the t-statistic designs of
    ``benchmarks/stats_default_gamma2.py``); Storey's estimate targets $p$ itself. The default before
    `EBLocalFDRGamma2`: on those designs (10,000 two-sample t-tests with 10 per group, converted to z-scores,
    1/5/10% signals with random or fixed effects, 50 replicates) its risk was 1.01–1.02 times the exact Bayes
    rule's with random effects but 1.04–1.14 times with fixed ±1.5 effects, where the normal slab misplaces the
    cutoff; the numbers are in ``benchmarks/results/stats_default_gamma2.json``. It has no settings.

    References:
      Storey, Taylor & Siegmund (2004), J. R. Stat. Soc. B 66(1). Bogdan et al. (2011), arXiv:1002.3501.

    Examples:
      >>> import jax
      >>> from icmlx.stats import EBStoreyGamma2, relative_belief_gamma2, simulate_two_groups
      >>> z = simulate_two_groups(jax.random.key(0), 10_000, p=0.05, tau2=9.0).x
      >>> g2 = relative_belief_gamma2(EBStoreyGamma2(), x=z)
      >>> g2.shape
      (1, 1)
    """

    def _gamma2(self, x, sigma):
        return _eb_storey(x, sigma)


class EBLocalFDRGamma2(AbstractGamma2):
    r"""Rule H6, "eb_lfdr" (the default): the threshold that minimises the misclassification risk estimated by the
    two-groups local fdr, expressed as $\gamma^2$.

    Per row, in the two-groups model $f=\pi_0\varphi+(1-\pi_0)f_1$ with $f_1=\int\varphi(\cdot-\mu)\,dG(\mu)$:
    $\hat\pi_0$ is Storey's bootstrap estimate (`estimate_pi0` on the two-sided p-values) and $\hat G$ the
    nonparametric maximum likelihood estimate on a grid of 51 points over $[-\max|z|,\max|z|]$ (200 EM steps with
    $\hat\pi_0$ held fixed; by default on a 512-bin histogram of $z$, each bin at the mean of its values), so
    $\mathrm{fdr}(z)=\hat\pi_0\varphi(z)/\hat f(z)$. For unit losses the Bayes rule
    rejects iff $\mathrm{fdr}<1/2$; among the threshold rules $|z|>c$ the cutoff $\hat c$ minimises the estimated
    risk $\sum_{|z_i|>c}\mathrm{fdr}(z_i)+\sum_{|z_i|\le c}(1-\mathrm{fdr}(z_i))$; then $g$ solves
    $(1+1/g)\log(1+g)=\hat c^2$, so the RB test at $k=1$ rejects exactly the tests past $\hat c$ (a
    $\hat c<1$, below the smallest cutoff of the RB test at $k=1$, becomes 1). Unlike
    `EBStoreyGamma2` it assumes no shape for the alternative: a normal slab fitted by moments to fixed effects
    (±1.5 standard deviations on $t_{18}$ statistics, 5% signals) put the plug-in oracle's cutoff near 3.0 where the
    exact Bayes rule's was 2.65. The NPMLE keeps $f_1$'s tails as light as the normal's, so pure noise gives
    almost no rejections (a spline density estimate, as in `local_fdr`, has log-linear tails and rejects the largest
    few $|z|$ of pure noise).

    Binned (the default), each test's estimated risk is summed into up to $2^{15}$ cells of $|z|$ and minimised over
    their edges, so past a few passes over the tests the cost does not depend on $n$: `relative_belief_test` took
    0.37 s at $n=10^7$, 0.16 times `multipletests`' BH in the same process (``benchmarks/stats_scale.py``), where
    the unbinned EM costs $O(51n)$ per step. On the designs of ``benchmarks/stats_default_gamma2.py`` (10,000 tests
    per replicate) the binned and unbinned rules made the same decisions in 289 of 300 t-design replicates and
    2,289 of 2,400 normal ones; the 318 decisions that differ (of 27 million) left the risk ratios unchanged to the
    third decimal. The error bound is in ``icmlx.stats._risk_threshold``, and a test holds the binned rule's
    estimated risk within $10^{-4}$ of the unbinned least risk
    (``tests/stats/test_stats_empirical_bayes_binned.py``).

    Attributes:
      binned: the empirical-Bayes fit and the risk on a histogram (default ``True``), or on every test
        (``False``: $O(51n)$ time and memory per EM step).

    Measured by ``benchmarks/stats_default_gamma2.py`` on its t designs (10,000 two-sample t-tests with 10 per
    group, as z-scores; 1, 5 and 10% signals with random N(0, 1) or fixed ±1.5 standardised effects; 50
    replicates) and on `simulate_two_groups` designs; the numbers are in `relative_belief_test`'s docstring and
    ``benchmarks/results/stats_default_gamma2.json``.

    References:
      Efron, Tibshirani, Storey & Tusher (2001), J. Amer. Statist. Assoc. 96 (the two-groups model, the local fdr).
      Kiefer & Wolfowitz (1956), Ann. Math. Statist. 27 (the NPMLE). Jiang & Zhang (2009), Ann. Statist. 37,
      arXiv:0908.1712 (the grid NPMLE by EM). Storey, Taylor & Siegmund (2004), J. R. Stat. Soc. B 66(1).

    Examples:
      >>> import jax
      >>> from icmlx.stats import EBLocalFDRGamma2, relative_belief_gamma2, simulate_two_groups
      >>> z = simulate_two_groups(jax.random.key(0), 10_000, p=0.05, tau2=9.0).x
      >>> relative_belief_gamma2(EBLocalFDRGamma2(), x=z).shape
      (1, 1)
    """

    binned: bool = eqx.field(static=True, default=True)

    def __check_init__(self):
        static_bool("EBLocalFDRGamma2", "binned", self.binned)

    def _gamma2(self, x, sigma):
        return _eb_lfdr(x, sigma, self.binned)


class EBMMLEGamma2(AbstractGamma2):
    r"""Rule H4, "eb_mmle": $\gamma^2=\hat\tau^2\hat f^2$, $(\hat p,\hat\tau^2)$ from `two_groups_em`.

    The two-groups maximum marginal likelihood plug-in of H1, per row of ``x``; $\hat\tau^2$ is noisy for small
    $n$ (Monte Carlo risk ratio 1.26 at $n=10^2$, 1.02 at $n=10^4$).

    **It does not control the false discovery rate.** On two-groups data (`simulate_two_groups`,
    $p$ from 0.001 to 0.2, $\tau^2\in\{4,9,25\}$ and the $C=1$ calibration; the study in
    `relative_belief_test`) its FDR was 0.08–0.35 at $n=10^4$ (0.33 at $p=0.01,\tau^2=4$) and up
    to 0.61 at $n=10^3$, worst when the effects are weak ($\tau^2\le9$), where $\hat\tau^2$ is
    small and $\gamma^2$ with it; Benjamini–Hochberg at 0.05 stayed at 0.04–0.06 on the same data. The
    default `EBSparsityGamma2` stayed at 0.06–0.15 (0.09–0.18 at $n=10^3$). For FDR control use
    `benjamini_hochberg`.

    Attributes:
      num_em_steps: the number of EM steps (a Python int >= 1).
      binned: run the EM on `two_groups_em`'s binned summary (default) or on every test (``False``).

    Raises:
      ValueError: ``num_em_steps`` not a positive int.
      TypeError: ``binned`` not a bool.

    Examples:
      >>> from icmlx.stats import EBMMLEGamma2
      >>> EBMMLEGamma2(num_em_steps=40) == EBMMLEGamma2()
      True
    """

    num_em_steps: int = eqx.field(static=True, default=40)
    binned: bool = eqx.field(static=True, default=True)

    def __check_init__(self):
        check_int(self.num_em_steps, "num_em_steps", where="EBMMLEGamma2", minimum=1)
        static_bool("EBMMLEGamma2", "binned", self.binned)

    def _gamma2(self, x, sigma):
        return _eb_mmle(x, sigma, self.num_em_steps, self.binned)


def _oracle(x, p, tau2, sigma, delta):
    dt = float_dtype(*(v for v in (x, p, tau2, sigma) if v is not None))
    pp = check_scalar("p", p, dt, lo=0.0, hi=1.0)
    f = (1.0 - pp) / pp
    t2 = positive("tau2", tau2, dt)
    d = positive("delta", delta, dt)
    return _finite_gamma2(t2 * (f * d) ** 2, "OracleGamma2")


def _sparsity(x, p, sigma):
    dt = float_dtype(*(v for v in (x, p, sigma) if v is not None))
    pp = check_scalar("p", p, dt, lo=0.0, hi=1.0)
    f = (1.0 - pp) / pp
    s = positive("sigma", sigma, dt)
    return _finite_gamma2((s * f) ** 2, "SparsityGamma2")


def _need_x(x, name):
    if x is None:
        raise ValueError(f"gamma2 rule {name} needs the data x: relative_belief_gamma2({name}(), x=...)")
    x, labels = as_input_array(x, "x")
    if x.ndim < 1 or x.shape[-1] < 2:
        raise ValueError(f"gamma2 rule {name} needs at least 2 tests along the last axis of x, got {x.shape=}")
    return check_finite(x, "x", labels)


def _eb_sparsity(x, sigma):
    x = _need_x(x, "EBSparsityGamma2")
    s = positive("sigma", sigma, x.dtype)
    ph = _sparsity_core(x, s, 2.0, 1.0)
    return ((s * (1.0 - ph) / ph) ** 2)[..., None]


def _eb_mmle(x, sigma, num_em_steps, binned):
    x = _need_x(x, "EBMMLEGamma2")
    s = positive("sigma", sigma, x.dtype)
    fit = fit_two_groups(x, s, num_em_steps, None, None, throw=False, binned=binned)
    return (fit.tau2 * ((1.0 - fit.p) / fit.p) ** 2)[..., None]


def _eb_storey(x, sigma):
    x = _need_x(x, "EBStoreyGamma2")
    s = positive("sigma", sigma, x.dtype)
    return _eb_storey_core(x, s)


@jax.jit
def _eb_storey_core(x, s):
    from ._qvalues import storey_pi0_of_scores

    n = x.shape[-1]
    z = x / s
    pi0 = storey_pi0_of_scores(z)
    p = jnp.clip(1.0 - pi0, 1.0 / n, 1.0 - 1.0 / n)
    u = jnp.maximum(jnp.mean(z * z, axis=-1) - 1.0, 1e-3) / p
    c2 = (1.0 + 1.0 / u) * (jnp.log1p(u) + 2.0 * jnp.log((1.0 - p) / p))
    return _gamma2_from_c2(c2, s, x.dtype)


def _gamma2_from_c2(c2, s, dtype):
    """gamma^2 = s^2 g with g solving (1 + 1/g) log(1 + g) = c2 (the RB test at k = 1 thresholds z^2 at c2)."""
    # (1 + 1/g) log(1 + g) rises from 1 (g -> 0) like log g: bisection on log g; a c2 below 1 takes the smallest g
    # the largest g the dtype holds (with s^2): a c2 past it means "reject almost nothing" and is capped there
    top = float(np.log(np.finfo(np.dtype(dtype)).max)) - 2.0 - 2.0 * jnp.log(jnp.maximum(s, 1.0))
    lo = jnp.full_like(c2, -30.0)
    hi = jnp.minimum(jnp.maximum(c2, 1.0) + 5.0, top)

    def body(_, lohi):
        lo, hi = lohi
        mid = 0.5 * (lo + hi)
        g = jnp.exp(mid)
        above = (1.0 + 1.0 / g) * jnp.log1p(g) > c2
        return jnp.where(above, lo, mid), jnp.where(above, mid, hi)

    lo, hi = jax.lax.fori_loop(0, 80, body, (lo, hi))
    return (s * s * jnp.exp(0.5 * (lo + hi)))[..., None]


def _eb_lfdr(x, sigma, binned):
    x = _need_x(x, "EBLocalFDRGamma2")
    s = positive("sigma", sigma, x.dtype)
    from ._risk_threshold import risk_cutoff

    c = risk_cutoff(x / s, binned)
    return _gamma2_from_c2_jit(c * c, s)


@jax.jit
def _gamma2_from_c2_jit(c2, s):
    return _gamma2_from_c2(c2, s, c2.dtype)


def resolve_rule(gamma2: Any, where: str) -> AbstractGamma2 | None:
    """Map the public ``gamma2`` argument to a rule object (``None`` for a number or array).

    ``None`` is the default rule; the strings of `PRESETS` are shorthands for the parameter-free rules.
    """
    if gamma2 is None:
        return EBLocalFDRGamma2()  # the default rule: it needs the data only
    if isinstance(gamma2, AbstractGamma2):
        return gamma2
    if isinstance(gamma2, str):
        if gamma2 == "eb_sparsity":
            return EBSparsityGamma2()
        if gamma2 == "eb_mmle":
            return EBMMLEGamma2()
        if gamma2 == "eb_storey":
            return EBStoreyGamma2()
        if gamma2 == "eb_lfdr":
            return EBLocalFDRGamma2()
        raise ValueError(
            f"{where}(): unknown gamma2 {gamma2!r}; use one of {PRESETS}, a rule object (OracleGamma2(p=..., "
            "tau2=...), SparsityGamma2(p=...), EBSparsityGamma2(), EBMMLEGamma2(), EBStoreyGamma2(), "
            "EBLocalFDRGamma2()) or a number"
        )
    return None


def relative_belief_gamma2(
    rule: AbstractGamma2 | str,
    *,
    x: Any = None,
    sigma: RealScalarLike = 1.0,
) -> Float[Array, "..."]:
    r"""The hyperparameter $\gamma^2$ that a rule (`AbstractGamma2`) gives, for data ``x`` if it needs it.

    With $f=(1-p)/p$ and $\delta=\delta_0/\delta_A$:

    - `OracleGamma2` (H1): $\gamma^2=\tau^2 (f\delta)^2$, i.e. $g=v=u f^2\delta^2$.
    - `SparsityGamma2` (H2): $\gamma^2=\sigma^2 f^2$.
    - `EBSparsityGamma2` (H3): $\gamma^2=\sigma^2 \hat f^2$ with $\hat p$ from
      `estimate_sparsity`; per row of ``x``.
    - `EBMMLEGamma2` (H4): $\gamma^2=\hat\tau^2 \hat f^2$ with $(\hat p,\hat\tau^2)$ from
      `two_groups_em`; per row of ``x``.

    Why these: the RB rule $RB(0\mid x)<1$ thresholds $z^2$ at
    $c^2_{RB}=(1+1/g)\log(1+g)\approx\log g$, and a threshold $c_n^2$ is ABOS iff
    $c_n^2=\log v_n+z_n$ with $z_n=o(\log v_n)$ and $z_n+2\log\log v_n\to\infty$. H1 sets
    $g=v$ ($z_n=0$); H2 has $z_n\approx-\log u_n$, still ABOS but slowly; H3 and H4 estimate H2's
    and H1's unknowns; `EBStoreyGamma2` (H5) sets $g$ so that the threshold is the plug-in oracle's at
    Storey's $\hat p$; `EBLocalFDRGamma2` (H6) sets it at the cutoff that minimises the risk estimated by the
    two-groups local fdr. The strings ``"eb_sparsity"``, ``"eb_mmle"``, ``"eb_storey"`` and ``"eb_lfdr"`` are
    shorthands for those rule objects. `relative_belief_test` uses ``EBLocalFDRGamma2()`` when ``gamma2`` is
    omitted (its docstring gives the measured FDR, power and risk behind that choice).

    For a per-row or traced $p$, compute $\gamma^2$ as an array (e.g.
    ``tau2 * ((1 - p) / p * delta) ** 2``) and pass it to `relative_belief_test`.

    Args:
      rule: an `AbstractGamma2` (or the string shorthand ``"eb_sparsity"``/``"eb_mmle"``).
      x: data, shape ``(*batch, n)`` (list, NumPy, JAX or pandas Series; finite), for the data-driven rules H3, H4.
      sigma: noise standard deviation (> 0).

    Returns:
      $\gamma^2$: a scalar for H1/H2 (the broadcast shape of the old array flags), or ``(*batch, 1)`` for the
      data-driven rules (ready to broadcast against ``x``).

    Raises:
      ValueError: an unknown string, a missing ``x``, or a parameter out of range.

    References:
      Bogdan, Chakrabarti, Frommlet & Ghosh (2011), Ann. Statist. 39(3), arXiv:1002.3501 (the ABOS characterisation
      of fixed thresholds). van der Pas, Kleijn & van der Vaart (2014), arXiv:1404.0202 (the sparsity estimate).
      Evans (2015), *Measuring Statistical Evidence Using Relative Belief*, CRC. "An Evidential Route to Asymptotic
      Bayes Optimality under Sparsity", ICML 2026.

    Examples:
      >>> from icmlx.stats import OracleGamma2, SparsityGamma2, relative_belief_gamma2, relative_belief_threshold
      >>> float(relative_belief_gamma2(SparsityGamma2(p=0.01)))
      9801.0
      >>> g2 = relative_belief_gamma2(OracleGamma2(p=0.01, tau2=11.645))
      >>> round(float(relative_belief_threshold(g2)), 3)   # ~ log v, the ABOS threshold
      11.645
    """
    r = resolve_rule(rule, "relative_belief_gamma2") if isinstance(rule, (str, AbstractGamma2)) else None
    if r is None:
        raise ValueError(f"relative_belief_gamma2(): rule must be a gamma2 rule object or one of {PRESETS}, got "
                         f"{rule!r}")
    return r._gamma2(x, sigma)
