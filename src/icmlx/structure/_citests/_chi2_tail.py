r"""Upper tail of the χ² distribution for integer degrees of freedom, from short series of positive terms.

For ``k`` degrees of freedom, $s = k/2$ and $t = x/2$, the survival function is the regularised
upper incomplete gamma function $Q(s, t)$. With the Poisson-like terms $w(a) = e^{-t} t^a/\Gamma(a+1)$:

- **tail** ($t \ge s$): for integer ``k`` the sum is finite,

  $$
  Q(s, t) = \sum_{a = s-1,\, s-2,\, \dots \ge 0} w(a) + [k \text{ odd}]\,\operatorname{erfc}\sqrt t
  $$

  (even ``k``: ``a = s-1, ..., 1, 0``; odd ``k``: ``a = s-1, ..., 3/2, 1/2``), summed downwards by the ratio
  ``w(a-1)/w(a) = a/t < 1``;
- **bulk** ($t < s$): $Q = 1 - P$ with the lower series
  $P(s, t) = w(s) \sum_{j \ge 0} t^j / ((s+1)(s+2)\cdots(s+j))$, whose ratio ``t/(s+j+1) < 1``.

Every term is positive, so neither sum cancels, and each stops when the geometric bound on its rest falls below
the working precision: a test takes at most about ``min(k/2, 9 sqrt(k/2) + 40)`` steps of one multiply-add (no
transcendental function inside the loop). The logarithm of the leading term is exact for ``a < 16`` (``a`` is a
multiple of 1/2, so $\log\Gamma(a+1)$ comes from a table) and, above, uses Stirling's series in the
deviance form $\log w(a) = -a\,(u - \log(1 + u)) - \tfrac12\log(2\pi a) - \epsilon(a)$,
$u = (t - a)/a$ (with $\log t - \log a$ in place of $\log(1+u)$ when ``t < a/2``), so its
rounding error is about ``eps * |t - a|``, which is the conditioning of the tail itself, rather than
``eps * lgamma(a)``.

One implementation serves two array modules: `chi2_sf` (JAX, jit/vmap-safe, one ``while_loop`` of
multiply-adds: a small program beside `jax.scipy.special.gammaincc`) and `chi2_sf_host` (NumPy in
float64 on the host, which compiles nothing: PC's tester and `icmlx.structure.chi_square` read the
statistics back anyway). Accuracy against ``scipy.stats.chi2.sf`` is tested in
``tests/structure/test_structure_chi2_tail.py`` (float32: within 32 eps times the tail's condition number
``1 + |x - k|/2``; float64: 1e-13 of the exact sum, 2e-11 of SciPy).

References:
  Abramowitz & Stegun, *Handbook of Mathematical Functions* (1964), 26.4.4-26.4.5 (the finite sums) and 6.5.29
  (the lower series); Loader, "Fast and accurate computation of binomial probabilities" (2000), for the
  deviance form of the leading term.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.scipy.special import erfc

__all__: list[str] = []

_TABLE_BELOW = 16.0  # log Γ(a + 1) of a = 0, 1/2, ..., 31/2 from a table; Stirling's series above
_LGAMMA_HALF = np.array([math.lgamma(j / 2.0 + 1.0) for j in range(int(2 * _TABLE_BELOW))])


def _log_term(xp, a, t, log_t):
    """``log w(a) = -t + a log t - lgamma(a + 1)`` for ``a`` a multiple of 1/2 (exact table below 16, the
    deviance form of Stirling's series to the a^-7 term above: within ~1/(1188 a^9) <= 1.3e-14 of lgamma)."""
    small = a < _TABLE_BELOW
    idx = xp.clip(xp.round(2.0 * a), 0, _LGAMMA_HALF.size - 1).astype(np.int32)
    direct = -t + a * log_t - xp.asarray(_LGAMMA_HALF, dtype=t.dtype)[idx]
    ab = xp.where(small, _TABLE_BELOW, a)
    u = (t - ab) / ab
    near = u > -0.5  # log1p(u) is exact to eps unless 1 + u = t/a is small (then u's own rounding shows)
    log_r = xp.where(near, xp.log1p(xp.where(near, u, 0.0)), log_t - xp.log(ab))  # log(t / a)
    inv = 1.0 / ab
    inv2 = inv * inv
    stirl = inv * (1.0 / 12 - inv2 * (1.0 / 360 - inv2 * (1.0 / 1260 - inv2 / 1680)))
    dev = -ab * (u - log_r) - 0.5 * xp.log(2.0 * math.pi * ab) - stirl
    return xp.where(small, direct, dev)


def _sf(xp, x, dof, loop, erfc_fn):
    eps = float(np.finfo(x.dtype).eps)
    s = dof.astype(x.dtype) / 2.0
    t = xp.maximum(x, 0.0) / 2.0
    pos = t > 0
    ts = xp.where(pos, t, 1.0)
    log_t = xp.log(ts)
    upper = ts >= s
    odd = (dof % 2) == 1
    h = xp.where(odd, 0.5, 0.0)  # the smallest index of the finite sum
    a0 = xp.where(upper, s - 1.0, s)  # the index of the leading term
    has_terms = a0 >= 0.0  # k = 1 in the tail: the erfc part only
    log_w0 = _log_term(xp, xp.where(has_terms, a0, 1.0), ts, log_t)
    tol = eps / 8

    def body(state):
        term, total, a, live = state
        # tail: next index a - 1, ratio a/t, rest after `term` <= term * a / (t - a);
        # bulk: next index a + 1, ratio t/(a + 1), rest after `term` <= term * t / (a + 1 - t)
        nxt = xp.where(upper, term * a / ts, term * ts / (a + 1.0))
        rest = xp.where(upper, term * a, term * ts) < tol * total * xp.where(upper, ts - a, a + 1.0 - ts)
        na = xp.where(upper, a - 1.0, a + 1.0)
        more = live & ~rest & (~upper | (na >= h - 0.25))
        return xp.where(more, nxt, term), xp.where(more, total + nxt, total), na, more

    one = xp.ones_like(ts)
    live0 = pos & has_terms & (~upper | (a0 - 1.0 >= h - 0.25))
    total = loop(body, (one, one, a0, live0))[1]
    series = xp.where(has_terms, xp.exp(log_w0 + xp.log(total)), 0.0)
    tail = series + xp.where(odd, erfc_fn(xp.sqrt(ts)), 0.0)
    q = xp.clip(xp.where(upper, tail, 1.0 - series), 0.0, 1.0)
    q = xp.where(pos, xp.where(xp.isinf(t), 0.0, q), 1.0)
    return xp.where((dof >= 1) & ~xp.isnan(x), q, np.nan).astype(x.dtype)


@jax.jit
def chi2_sf(x, dof):
    r"""Upper tail $P(\chi^2_k > x)$ for integer ``k = dof >= 1`` (JAX, elementwise, broadcasting).

    ``x <= 0`` gives 1, ``x = inf`` 0 and NaN gives NaN; ``dof <= 0`` is not a χ² law and gives NaN (callers that follow
    causal-learn's rule of p = 1 at dof 0 apply it themselves). Works in the dtype of ``x`` (float32 or float64;
    an integer ``x`` uses the default float dtype).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.structure._citests._chi2_tail import chi2_sf
      >>> [round(float(p), 6) for p in chi2_sf(jnp.array([3.841459, 0.0, 200.0]), jnp.array([1, 4, 150]))]
      [0.05, 1.0, 0.003973]
    """
    x = jnp.asarray(x)
    dtype = x.dtype if jnp.issubdtype(x.dtype, jnp.floating) else jax.dtypes.canonicalize_dtype(np.float64)
    x, dof = jnp.broadcast_arrays(x.astype(dtype), jnp.asarray(dof))
    return _sf(jnp, x, dof, lambda body, init: lax.while_loop(lambda st: jnp.any(st[3]), body, init), erfc)


_erfc_host = np.frompyfunc(math.erfc, 1, 1)


def chi2_sf_host(x, dof) -> np.ndarray:
    """`chi2_sf` in float64 NumPy on the host (no device program); returns a float64 array.

    Examples:
      >>> from icmlx.structure._citests._chi2_tail import chi2_sf_host
      >>> float(chi2_sf_host(18.307038, 10).round(6))
      0.05
    """
    x, dof = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(dof, np.int64))

    def loop(body, state):
        while np.any(state[3]):
            state = body(state)
        return state

    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return _sf(np, x, dof, loop, lambda v: np.asarray(_erfc_host(v), np.float64))
