"""Sequential Monte Carlo diffusion bridges with an optional geodesic path cost.

For one interval ``[0, tau]`` from ``a`` to ``b`` with ``K`` steps of ``h = tau / K`` the proposal is the
modified diffusion bridge (Durham & Gallant 2002)

$$
x' = x + \\frac{b - x}{\\tau - t} h + \\sigma \\sqrt{\\frac{h(\\tau - t - h)}{\\tau - t}}\\,\\xi ,
$$

and the incremental log-weight is

$$
\\log \\mathcal N(x'; x + \\hat f(x) h, \\sigma^2 h) - \\log q(x' \\mid x)
- \\beta h \\lVert x' - \\gamma(t + h) \\rVert
+ \\log\\frac{\\tilde p(b \\mid x', \\tau - t - h)}{\\tilde p(b \\mid x, \\tau - t)} ,
$$

where the last term (``lookahead=True``; ``p~`` the Brownian transition density) is an optional twist
that makes the weights constant when ``f = 0``; ``gamma`` is the geodesic target and ``beta`` the guidance
strength per unit time (``beta = 0``: plain bridges). The last step lands on ``b`` and is weighted by the
model transition into ``b``. Particles are resampled (systematic) when the effective sample size drops
below ``N / 2``; lineages are kept as ancestor indices and traced back at the end. Everything is
fixed-shape: a ``lax.scan`` over steps, ``vmap`` over intervals, one ``jit`` around both.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float

from .._checks import check_values
from .._repr import record_repr
from .._types import PRNGKey, RealScalarLike
from ._data import as_real, as_sigma, check_count, check_finite, check_real

__all__ = ["BridgeSamples", "smc_bridges"]


class BridgeSamples(eqx.Module):
    """Bridge paths for a batch of intervals.

    Attributes:
      paths: ``num_paths`` paths per interval drawn by final weight, shape ``(B, num_paths, K + 1, d)``;
        ``[:, :, 0]`` is the start and ``[:, :, -1]`` the end observation.
      ess: effective sample size of the final weights, shape ``(B,)``.
      min_ess: smallest ESS seen before any resampling step, shape ``(B,)``.
      log_evidence: SMC estimate of ``log p(b | a)`` under the (tilted) bridge target, shape ``(B,)``.
      degenerate: ``True`` where every final weight collapsed (non-finite normaliser), shape ``(B,)``.
    """

    paths: Float[Array, "B R K1 d"]
    ess: Float[Array, " B"]
    min_ess: Float[Array, " B"]
    log_evidence: Float[Array, " B"]
    degenerate: Bool[Array, " B"]

    def __repr__(self) -> str:
        return record_repr(self)


def _systematic(key, logw, n):
    w = jax.nn.softmax(logw)
    u = (jax.random.uniform(key, (), logw.dtype) + jnp.arange(n, dtype=logw.dtype)) / n
    return jnp.clip(jnp.searchsorted(jnp.cumsum(w), u), 0, n - 1).astype(jnp.int32)


def _ess(logw):
    w = jax.nn.softmax(logw)
    return 1.0 / jnp.sum(w * w)


def _one_bridge(key, drift, sigma, a, b, tau, targets, strength, num_particles, num_time_steps, num_paths,
                lookahead):
    twist = 1.0 if lookahead else 0.0
    d = a.shape[0]
    dtype = a.dtype
    N, K = num_particles, num_time_steps
    h = tau / K
    s2 = sigma**2
    log2pi = jnp.log(2.0 * jnp.pi).astype(dtype)
    fdrift = jax.vmap(drift)

    def step(carry, inp):
        key, x, logw, logz, min_ess = carry
        j, gamma_next = inp
        key, kn, kr = jax.random.split(key, 3)
        t = j.astype(dtype) * h
        rem = tau - t
        mean_q = x + (b - x) / rem * h
        var_q = s2 * h * (rem - h) / rem
        xn = mean_q + jnp.sqrt(var_q) * jax.random.normal(kn, x.shape, dtype)
        mean_p = x + fdrift(x) * h
        logp = -0.5 * jnp.sum((xn - mean_p) ** 2, -1) / (s2 * h) - 0.5 * d * (log2pi + jnp.log(s2 * h))
        logq = -0.5 * jnp.sum((xn - mean_q) ** 2, -1) / var_q - 0.5 * d * (log2pi + jnp.log(var_q))
        guide = -strength * h * jnp.sqrt(jnp.sum((xn - gamma_next) ** 2, -1))
        # twist by the Brownian look-ahead p~(b | x, tau - t) so that f = 0 gives constant weights
        look_new = -0.5 * jnp.sum((b - xn) ** 2, -1) / (s2 * (rem - h))
        look_old = -0.5 * jnp.sum((b - x) ** 2, -1) / (s2 * rem)
        look = look_new - look_old - 0.5 * d * jnp.log((rem - h) / rem)
        inc = logp - logq + guide + look * twist
        ok = jnp.all(jnp.isfinite(xn), -1) & jnp.isfinite(inc)
        inc = jnp.where(ok, inc, -jnp.inf)
        xn = jnp.where(ok[:, None], xn, mean_q)
        logw = logw + inc
        ess = _ess(logw)
        do = ess < 0.5 * N
        anc = jnp.where(do, _systematic(kr, logw, N), jnp.arange(N, dtype=jnp.int32))
        lse = jax.scipy.special.logsumexp(logw) - jnp.log(jnp.asarray(N, dtype))
        logz = jnp.where(do, logz + lse, logz)
        logw = jnp.where(do, jnp.zeros_like(logw), logw)
        return (key, xn[anc], logw, logz, jnp.minimum(min_ess, ess)), (xn[anc], anc)

    x0 = jnp.broadcast_to(a, (N, d))
    init = (key, x0, jnp.zeros((N,), dtype), jnp.zeros((), dtype), jnp.asarray(N, dtype))
    js = jnp.arange(K - 1)
    (key, x, logw, logz, min_ess), (xs, ancs) = jax.lax.scan(step, init, (js, targets[1:K]))
    # final transition into b
    mean_p = x + fdrift(x) * h
    logp = -0.5 * jnp.sum((b - mean_p) ** 2, -1) / (s2 * h)
    logp = logp + twist * 0.5 * jnp.sum((b - x) ** 2, -1) / (s2 * h)  # minus the look-ahead p~(b | x, h)
    logw = logw + jnp.where(jnp.isfinite(logp), logp, -jnp.inf)
    lse = jax.scipy.special.logsumexp(logw)
    degenerate = ~jnp.isfinite(lse)
    logw_safe = jnp.where(degenerate, jnp.zeros_like(logw), logw)
    ess = jnp.where(degenerate, jnp.zeros((), dtype), _ess(logw_safe))
    log_prior = -0.5 * jnp.sum((b - a) ** 2) / (s2 * tau) - 0.5 * d * (log2pi + jnp.log(s2 * tau))
    logz = logz + lse - jnp.log(jnp.asarray(N, dtype)) + twist * log_prior
    key, kc = jax.random.split(key)
    idx = jax.random.categorical(kc, logw_safe, shape=(num_paths,)).astype(jnp.int32)

    def back(idx, inp):
        xj, ancj = inp
        return ancj[idx], xj[idx]

    _, rev = jax.lax.scan(back, idx, (xs, ancs), reverse=True)  # (K-1, R, d)
    inner = jnp.swapaxes(rev, 0, 1)
    start = jnp.broadcast_to(a, (num_paths, 1, d))
    end = jnp.broadcast_to(b, (num_paths, 1, d))
    paths = jnp.concatenate([start, inner, end], axis=1)
    return paths, ess, jnp.minimum(min_ess, ess), logz, degenerate


def smc_bridges(
    key: PRNGKey,
    drift,
    sigma: RealScalarLike,
    starts: ArrayLike,
    ends: ArrayLike,
    taus: ArrayLike,
    targets: ArrayLike | None = None,
    strength: float | Float[Array, ""] = 0.0,
    *,
    num_particles: int = 128,
    num_time_steps: int = 40,
    num_paths: int = 4,
    lookahead: bool = False,
) -> BridgeSamples:
    """SMC bridges for a batch of intervals under ``drift`` (module docstring), ``vmap``-ped over intervals.

    ``B`` intervals ``[0, tau_b]`` from ``starts[b]`` to ``ends[b]``, each with ``K = num_time_steps`` steps of
    ``h = tau_b / K``, the modified diffusion bridge proposal and the incremental weight of the module
    docstring.

    Args:
      key: PRNG key.
      drift: current drift callable ``(d,) -> (d,)``.
      sigma: diffusion scale.
      starts: interval starts, shape ``(B, d)``.
      ends: interval ends, shape ``(B, d)``.
      taus: interval lengths, shape ``(B,)`` (uneven intervals are fine: each uses ``tau_b / num_time_steps``).
      targets: geodesic targets ``(B, num_time_steps + 1, d)``; ``None`` for plain bridges.
      strength: guidance strength per unit time (ignored when ``targets`` is ``None``).
      num_particles: particles per interval.
      num_time_steps: time steps per interval (``>= 2``).
      num_paths: paths drawn per interval.
      lookahead: add the Brownian look-ahead twist to the incremental weights (far higher ESS and a
        lower-variance evidence estimate). Off by default: EM drifts fitted with the untwisted weights were
        more accurate at large ``tau`` (``docs/design/sde-em.md``).

    Returns:
      `BridgeSamples`.

    Raises:
      ValueError: ``num_time_steps < 2``, ``num_particles``/``num_paths`` not positive, mismatched shapes
        (``targets`` included), ``sigma`` or a ``tau`` not positive, non-finite ``starts``/``ends``/``targets``,
        a negative or non-finite ``strength``, a ``drift`` that does not map ``(d,)`` to ``(d,)`` (host checks for
        concrete input; ``eqx.error_if`` when traced).
      TypeError: complex input.

    References:
      Durham & Gallant, J. Bus. Econ. Stat. 20 (2002); Maoutsa, arXiv:2512.23566.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.sde import smc_bridges
      >>> a, b = jnp.zeros((3, 2)), jnp.ones((3, 2))
      >>> out = smc_bridges(jax.random.key(0), lambda x: -x, 0.5, a, b, jnp.ones(3),
      ...                   num_particles=16, num_time_steps=8, num_paths=2)
      >>> out.paths.shape, bool(out.degenerate.any())
      ((3, 2, 9, 2), False)
    """
    fn = "smc_bridges"
    num_time_steps = check_count(num_time_steps, "num_time_steps", fn, low=2)
    num_particles = check_count(num_particles, "num_particles", fn)
    num_paths = check_count(num_paths, "num_paths", fn)
    starts = as_real(starts, "starts", fn)
    ends = as_real(ends, "ends", fn, starts.dtype)
    if starts.ndim != 2 or ends.shape != starts.shape or jnp.shape(taus) != starts.shape[:1]:
        raise ValueError(f"{fn}: need starts and ends of shape (B, d) and taus of shape (B,), got "
                         f"{starts.shape}, {ends.shape} and {jnp.shape(taus)}")
    B, d = starts.shape
    dtype = starts.dtype
    starts, ends = check_finite(starts, "starts", fn), check_finite(ends, "ends", fn)
    taus = check_values(as_real(taus, "taus", fn, dtype), lambda xp, v: ~(xp.isfinite(v) & (v > 0)),
                        f"{fn}: every interval length tau must be positive and finite; drop repeated observation times")
    check_real(strength, "strength", fn)
    if targets is None:
        targets = jnp.zeros((B, num_time_steps + 1, d), dtype)
        strength = 0.0
    else:
        targets = as_real(targets, "targets", fn, dtype)
        if targets.shape != (B, num_time_steps + 1, d):
            raise ValueError(f"{fn}: targets must have shape (B, num_time_steps + 1, d) = ({B}, {num_time_steps + 1}, "
                             f"{d}), got shape {targets.shape}")
        targets = check_finite(targets, "targets", fn)
    strength = check_values(as_real(strength, "strength", fn, dtype), lambda xp, v: ~(xp.isfinite(v) & (v >= 0)),
                            f"{fn}: strength must be finite and non-negative (0: plain bridges)")
    sig = as_sigma(sigma, dtype, fn)
    try:
        out = jax.eval_shape(drift, jax.ShapeDtypeStruct((d,), dtype))
    except Exception as err:  # noqa: BLE001 - any failure to evaluate is the drift not fitting d
        raise ValueError(f"{fn}: drift cannot be evaluated on a state of shape ({d},): {type(err).__name__}") from err
    if getattr(out, "shape", None) != (d,):
        raise ValueError(f"{fn}: drift must map a state of shape ({d},) to a drift of shape ({d},), got "
                         f"{getattr(out, 'shape', type(out).__name__)}")
    return _smc_bridges_jit(key, drift, sig, starts, ends, taus.astype(dtype), targets, strength, num_particles,
                            num_time_steps, num_paths, lookahead)


@eqx.filter_jit
def _smc_bridges_jit(key, drift, sig, starts, ends, taus, targets, strength, num_particles, num_time_steps,
                     num_paths, lookahead):
    return bridges_from_keys(jax.random.split(key, starts.shape[0]), drift, sig, starts, ends, taus, targets,
                             strength, num_particles, num_time_steps, num_paths, lookahead)


def bridges_from_keys(keys, drift, sig, starts, ends, taus, targets, strength, num_particles, num_time_steps,
                      num_paths, lookahead):
    """The bridges of intervals ``starts -> ends``, interval ``b`` drawn with ``keys[b]`` (so that a chunk of
    intervals draws what the same intervals draw in a larger batch); for traced, validated input."""
    fn = lambda k, a, b, t, g: _one_bridge(
        k, drift, sig, a, b, t, g, strength, num_particles, num_time_steps, num_paths, lookahead
    )
    paths, ess, min_ess, logz, degenerate = jax.vmap(fn)(keys, starts, ends, taus, targets)
    return BridgeSamples(paths, ess, min_ess, logz, degenerate)
