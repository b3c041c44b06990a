"""Relative belief ratio, Evans's strength of evidence, and the relative-belief multiple test."""

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.scipy.special import ndtr
from jaxtyping import Array, Bool, Float

from .._types import RealScalarLike
from ._checks import as_float_array, check_no_nan, check_scalar, positive
from ._empirical_bayes import estimate_sparsity, two_groups_em

__all__ = [
    "PRESETS",
    "log_relative_belief_ratio",
    "relative_belief_ratio",
    "rb_strength",
    "relative_belief_threshold",
    "relative_belief_gamma2",
    "RelativeBeliefResult",
    "relative_belief_test",
]

#: Named choices of the one hyperparameter gamma^2 (derived in the research notes, not quoted from
#: the paper): "oracle" (H1), "sparsity" (H2), "eb_sparsity" (H3), "eb_mmle" (H4).
PRESETS = ("oracle", "sparsity", "eb_sparsity", "eb_mmle")

ScalarOrBatch = RealScalarLike | Float[Array, "..."]


def _prep(x, gamma2, sigma):
    x = check_no_nan(as_float_array(x, "x"), "x")
    dt = x.dtype
    return x, positive("gamma2", gamma2, dt), positive("sigma", sigma, dt)


@jax.jit
def _log_rb(x, g2, s):
    g = g2 / (s * s)
    z = x / s
    return 0.5 * jnp.log1p(g) - 0.5 * (z * z) * (g / (1.0 + g))


@jax.jit
def _strength(x, g2, s):
    g = g2 / (s * s)
    az = jnp.abs(x / s)
    sq1 = jnp.sqrt(1.0 + g)
    a = az * jnp.sqrt(g / (1.0 + g))
    b = az * (sq1 + 1.0 / sq1) / jnp.sqrt(g)  # = |z| (2+g)/sqrt(g(1+g)), overflow-free
    return ndtr(-a) + ndtr(-b)


@jax.jit
def _rb_c2(g2, kk, s):
    g = g2 / (s * s)
    return (1.0 + 1.0 / g) * (jnp.log1p(g) - 2.0 * jnp.log(kk))


@jax.jit
def _rb_test_core(x, g2, s, kk):
    c2 = _rb_c2(g2, kk, s)
    z = x / s
    return z * z > c2, _log_rb(x, g2, s), _strength(x, g2, s), c2


def log_relative_belief_ratio(
    x: Float[Array, "*shape"], gamma2: ScalarOrBatch, sigma: RealScalarLike = 1.0
) -> Float[Array, "*shape"]:
    r"""Log relative belief ratio of :math:`\mu_i = 0` under the one-group prior :math:`\mu_i\sim
    N(0,\gamma^2)`.

    With :math:`X_i\mid\mu_i\sim N(\mu_i,\sigma^2)`, :math:`g=\gamma^2/\sigma^2`,
    :math:`z=x/\sigma`:

    .. math::

        \log RB(0\mid x) = \log\frac{\pi(0\mid x)}{\pi(0)} = \tfrac12\log(1+g) - \frac{z^2
        g}{2(1+g)}.

    It equals the Savage–Dickey Bayes factor :math:`BF_{01}`. :math:`RB<1` is evidence against
    :math:`H_0:\mu=0`, :math:`RB>1` evidence for it (Evans's principle of evidence).

    Args:
      x: observations, any shape, floating (float64 for extreme thresholds).
      gamma2: prior variance :math:`\gamma^2>0`; a scalar or an array broadcastable against ``x``.
      sigma: known noise standard deviation (> 0).

    Returns:
      :math:`\log RB(0\mid x)`, same shape and dtype as ``x``.

    Raises:
      ValueError: non-positive ``gamma2``/``sigma`` (eagerly for Python numbers, at run time for
        arrays);
        NaN in ``x``.

    References:
      Evans (2015), *Measuring Statistical Evidence Using Relative Belief*, CRC. Al-Labadi,
      Alzaatreh &
      Evans (2023), arXiv:2301.08994. "An Evidential Route to Asymptotic Bayes Optimality under
      Sparsity",
      ICML 2026.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.stats import log_relative_belief_ratio
      >>> lrb = log_relative_belief_ratio(jnp.array([2.5, 0.0]), 100.0)
      >>> [round(v, 5) for v in jnp.exp(lrb).tolist()]
      [0.45544, 10.04988]
    """
    return _log_rb(*_prep(x, gamma2, sigma))


def relative_belief_ratio(
    x: Float[Array, "*shape"], gamma2: ScalarOrBatch, sigma: RealScalarLike = 1.0
) -> Float[Array, "*shape"]:
    r"""Relative belief ratio :math:`RB(0\mid x)=\sqrt{1+g}\,\exp(-z^2 g/(2(1+g)))`.

    See :func:`log_relative_belief_ratio` (prefer the log for large :math:`g` or :math:`|z|`).

    Args:
      x: observations, any shape.
      gamma2: prior variance :math:`\gamma^2>0` (scalar or broadcastable).
      sigma: noise standard deviation (> 0).

    Returns:
      :math:`RB(0\mid x)`, same shape and dtype as ``x``.

    Raises:
      ValueError: as :func:`log_relative_belief_ratio`.

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
    x: Float[Array, "*shape"], gamma2: ScalarOrBatch, sigma: RealScalarLike = 1.0
) -> Float[Array, "*shape"]:
    r"""Evans's strength of the evidence about :math:`\mu=0`: :math:`\Pi(RB(\mu\mid x)\le RB(0\mid
    x)\mid x)`.

    Under the normal model :math:`RB(\mu\mid x)\propto` likelihood, so the set is
    :math:`|\mu-x|\ge|x|` and

    .. math::

        Str(0) = \Phi\!\Big(-|z|\sqrt{\tfrac{g}{1+g}}\Big) +
        \Phi\!\Big(-|z|\,\tfrac{2+g}{\sqrt{g(1+g)}}\Big),

    which tends to the two-sided p-value :math:`2\bar\Phi(|z|)` as :math:`g\to\infty`. A small
    strength with
    :math:`RB<1` is strong evidence against :math:`H_0`; a large strength with :math:`RB>1`, strong
    evidence for.

    Args:
      x: observations, any shape.
      gamma2: prior variance (scalar or broadcastable).
      sigma: noise standard deviation (> 0).

    Returns:
      The strength in :math:`[0, 1]`, same shape and dtype as ``x``.

    Raises:
      ValueError: as :func:`log_relative_belief_ratio`.

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
    r"""The threshold on :math:`z^2=(x/\sigma)^2` equivalent to the rule :math:`RB(0\mid x)<k`.

    .. math:: RB(0\mid x) < k \iff z^2 > c^2_{RB} = (1 + 1/g)\,(\log(1+g) - 2\log k),\qquad
       g=\gamma^2/\sigma^2.

    A negative value means every test is rejected.

    Args:
      gamma2: prior variance (> 0), scalar or array.
      k: evidence cutoff (> 0); ``k=1`` is the principle of evidence.
      sigma: noise standard deviation (> 0).

    Returns:
      :math:`c^2_{RB}`, the broadcast shape of the arguments.

    Raises:
      ValueError: non-positive arguments.

    References:
      Evans (2015), CRC. Bogdan et al. (2011), arXiv:1002.3501 (fixed-threshold rules).

    Examples:
      >>> from icmlx.stats import relative_belief_threshold
      >>> round(float(relative_belief_threshold(100.0)), 4)  # (1.01) log(101)
      4.6613
    """
    from ._checks import float_dtype

    dt = float_dtype(gamma2, k, sigma)
    g2 = positive("gamma2", gamma2, dt)
    kk = positive("k", k, dt)
    s = positive("sigma", sigma, dt)
    return _rb_c2(g2, kk, s)


def relative_belief_gamma2(
    preset: str,
    *,
    x: Float[Array, "*batch n"] | None = None,
    p: ScalarOrBatch | None = None,
    tau2: ScalarOrBatch | None = None,
    sigma: RealScalarLike = 1.0,
    delta: RealScalarLike = 1.0,
    em_steps: int = 40,
) -> Float[Array, "..."]:
    r"""The hyperparameter :math:`\gamma^2` of a named preset (all derived in the research notes).

    With :math:`f=(1-p)/p` and :math:`\delta=\delta_0/\delta_A`:

    - ``"oracle"`` (H1): :math:`\gamma^2=\tau^2 (f\delta)^2`, i.e. :math:`g=v=u f^2\delta^2`; needs
    ``p``,
      ``tau2``. ABOS, fastest convergence.
    - ``"sparsity"`` (H2): :math:`\gamma^2=\sigma^2 f^2`; needs ``p``. ABOS at a log-log rate.
    - ``"eb_sparsity"`` (H3): :math:`\gamma^2=\sigma^2 \hat f^2` with :math:`\hat p` from
      :func:`estimate_sparsity`; needs ``x``. Per row of ``x``.
    - ``"eb_mmle"`` (H4): :math:`\gamma^2=\hat\tau^2 \hat f^2` with :math:`(\hat p,\hat\tau^2)` from
      :func:`two_groups_em` (``em_steps`` steps); needs ``x``. Per row of ``x``.

    The paper's own prescription is not public; these are named, documented options.

    Args:
      preset: one of ``"oracle"``, ``"sparsity"``, ``"eb_sparsity"``, ``"eb_mmle"``.
      x: data, shape ``(*batch, n)`` (EB presets).
      p: non-null proportion in (0, 1) (H1, H2).
      tau2: slab variance > 0 (H1).
      sigma: noise standard deviation (> 0).
      delta: loss ratio :math:`\delta_0/\delta_A` (> 0; H1 only).
      em_steps: EM steps for ``"eb_mmle"``.

    Returns:
      :math:`\gamma^2`: the broadcast shape of ``p``/``tau2`` for H1/H2, or ``(*batch, 1)`` for the
      EB
      presets (ready to broadcast against ``x``).

    Raises:
      ValueError: unknown preset, or a parameter the preset needs is missing or out of range.

    References:
      Bogdan, Chakrabarti, Frommlet & Ghosh (2011), arXiv:1002.3501. van der Pas, Kleijn & van der
      Vaart
      (2014), arXiv:1404.0202.

    Examples:
      >>> from icmlx.stats import relative_belief_gamma2
      >>> float(relative_belief_gamma2("sparsity", p=0.01))
      9801.0
    """
    if preset not in PRESETS:
        raise ValueError(f"unknown gamma2 preset {preset!r}; use one of {PRESETS} or a number")
    if preset in ("oracle", "sparsity"):
        if p is None or (preset == "oracle" and tau2 is None):
            need = "p and tau2" if preset == "oracle" else "p"
            raise ValueError(f"gamma2 preset {preset!r} needs {need}")
        from ._checks import float_dtype

        dt = float_dtype(*(v for v in (x, p, tau2, sigma) if v is not None))
        pp = check_scalar("p", p, dt, lo=0.0, hi=1.0)
        f = (1.0 - pp) / pp
        if preset == "oracle":
            t2 = positive("tau2", tau2, dt)
            d = positive("delta", delta, dt)
            return t2 * (f * d) ** 2
        s = positive("sigma", sigma, dt)
        return (s * f) ** 2
    if x is None:
        raise ValueError(f"gamma2 preset {preset!r} needs the data x")
    x = as_float_array(x, "x")
    s = positive("sigma", sigma, x.dtype)
    if preset == "eb_sparsity":
        ph = estimate_sparsity(x, s)
        return ((s * (1.0 - ph) / ph) ** 2)[..., None]
    fit = two_groups_em(x, s, num_steps=em_steps)
    return (fit.tau2 * ((1.0 - fit.p) / fit.p) ** 2)[..., None]


class RelativeBeliefResult(eqx.Module):
    """Result of :func:`relative_belief_test`.

    Attributes:
      reject: ``RB(0|x_i) < k``, shape of ``x``.
      log_rb: :math:`\\log RB(0\\mid x_i)`, shape of ``x``.
      strength: Evans's strength :math:`Str(0)`, shape of ``x``.
      threshold: the equivalent cutoff :math:`c^2_{RB}` on :math:`(x/\\sigma)^2` (broadcastable to
        ``x``).
      gamma2: the :math:`\\gamma^2` used (broadcastable to ``x``).
      k: the evidence cutoff.
    """

    reject: Bool[Array, "*shape"]
    log_rb: Float[Array, "*shape"]
    strength: Float[Array, "*shape"]
    threshold: Float[Array, "..."]
    gamma2: Float[Array, "..."]
    k: Float[Array, ""]

    @property
    def rb(self) -> Float[Array, "*shape"]:
        """:math:`RB(0\\mid x_i)`."""
        return jnp.exp(self.log_rb)

    @property
    def n_rejected(self) -> Array:
        """Number of rejections along the last axis."""
        return jnp.sum(self.reject, axis=-1)


def relative_belief_test(
    x: Float[Array, "*batch n"],
    *,
    gamma2: ScalarOrBatch | str = "sparsity",
    k: RealScalarLike = 1.0,
    sigma: RealScalarLike = 1.0,
    p: ScalarOrBatch | None = None,
    tau2: ScalarOrBatch | None = None,
    delta: RealScalarLike = 1.0,
    em_steps: int = 40,
) -> RelativeBeliefResult:
    r"""Relative-belief multiple test: reject :math:`H_{0i}:\mu_i=0` iff :math:`RB(0\mid x_i) < k`.

    One-group prior :math:`\mu_i\sim N(0,\gamma^2)` with a single hyperparameter; the rule is the
    fixed
    threshold :math:`z_i^2 > c^2_{RB}=(1+1/g)(\log(1+g)-2\log k)` (see
    :func:`relative_belief_threshold`),
    so :func:`threshold_risk` gives its exact two-groups risk. With ``gamma2=tau2`` and
    ``k = p/((1-p) delta)`` it *is* the Bayes oracle; with ``k=1`` the multiplicity penalty is
    carried by
    :math:`\gamma^2` (presets in :func:`relative_belief_gamma2`), which makes the rule
    asymptotically Bayes
    optimal under sparsity (ABOS) for "oracle", "sparsity" and (in practice) "eb_sparsity".

    Args:
      x: observations, shape ``(*batch, n)``; tests along the last axis, EB presets per row.
      gamma2: a number/array (> 0) or a preset name (``"oracle"``, ``"sparsity"``,
        ``"eb_sparsity"``,
        ``"eb_mmle"``). Strings must be static under ``jax.jit`` (close over them).
      k: evidence cutoff (> 0), default 1.
      sigma: known noise standard deviation (> 0).
      p, tau2, delta: two-groups parameters the "oracle"/"sparsity" presets need.
      em_steps: EM steps of the "eb_mmle" preset.

    Returns:
      :class:`RelativeBeliefResult` (``reject``, ``log_rb``, ``strength``, ``threshold``,
      ``gamma2``, ``k``).

    Raises:
      ValueError: unknown preset / missing preset parameters / out-of-range values; NaN in ``x``.

    References:
      "An Evidential Route to Asymptotic Bayes Optimality under Sparsity", ICML 2026. Evans & Tomal
      (2018),
      arXiv:1609.06418. Bogdan, Chakrabarti, Frommlet & Ghosh (2011), arXiv:1002.3501.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.stats import relative_belief_test
      >>> res = relative_belief_test(jnp.array([0.5, 2.0, 4.5, -5.0]), gamma2="sparsity", p=0.01)
      >>> print(res.reject, round(float(res.threshold), 3))
      [False False  True  True] 9.191
    """
    x = check_no_nan(as_float_array(x, "x"), "x")
    if x.ndim < 1:
        raise ValueError(f"x must have a tests axis, got {x.shape=}")
    dt = x.dtype
    if isinstance(gamma2, str):
        g2 = relative_belief_gamma2(
            gamma2, x=x, p=p, tau2=tau2, sigma=sigma, delta=delta, em_steps=em_steps
        ).astype(dt)
    else:
        g2 = positive("gamma2", gamma2, dt)
    s = positive("sigma", sigma, dt)
    kk = positive("k", k, dt)
    reject, log_rb, strength, c2 = _rb_test_core(x, g2, s, kk)
    return RelativeBeliefResult(
        reject=reject, log_rb=log_rb, strength=strength, threshold=c2, gamma2=g2, k=kk
    )

