r"""Efron's central matching: the empirical null $N(\delta_0,\sigma_0^2)$ fitted to the centre of a histogram.

One implementation, used by `local_fdr` (``null="empirical"``) and by the ``sigma="empirical"`` rule
(`EmpiricalNullSigma`). All functions act on one row; callers ``vmap`` them over the batch.
"""

import math

import jax
import jax.numpy as jnp


def histogram(z, num_bins):
    """``(counts, centres, width)``: a ``num_bins``-bin histogram of the row ``z`` between its min and max."""
    dt = z.dtype
    lo, hi = jnp.min(z), jnp.max(z)
    width = (hi - lo) / num_bins
    width = jnp.where(width > 0, width, 1.0)
    idx = jnp.clip(jnp.floor((z - lo) / width).astype(jnp.int32), 0, num_bins - 1)
    # counted in int32: a float32 count stops growing at 2^24 (one bin holding a sixth of 10^8 tests)
    counts = jnp.zeros(num_bins, jnp.int32).at[idx].add(1).astype(dt)
    centres = lo + (jnp.arange(num_bins, dtype=dt) + 0.5) * width
    return counts, centres, width


def sorted_quantile(zs, q, midpoint=False):
    """``jnp.quantile(z, q)`` (``jnp.median(z)`` with ``midpoint``) read from the sorted row ``zs``: the same
    positions and weights, so one sort serves every quantile a fit needs."""
    dt = zs.dtype
    n = zs.shape[-1]
    pos = jnp.asarray(q, dt) * jnp.asarray(n - 1.0, dt)
    low, high = jnp.floor(pos), jnp.ceil(pos)
    w_high = pos - low
    w_low = 1.0 - w_high
    lo_v = zs[jnp.clip(low, 0, n - 1).astype(jnp.int32)]
    hi_v = zs[jnp.clip(high, 0, n - 1).astype(jnp.int32)]
    return (lo_v + hi_v) * 0.5 if midpoint else lo_v * w_low + hi_v * w_high


def central_region(zs, centres, central):
    """Mask of the bin centres between the ``central`` and ``1 - central`` quantiles of the sorted row ``zs``."""
    q_lo, q_hi = sorted_quantile(zs, central), sorted_quantile(zs, 1.0 - central)
    return (centres >= q_lo) & (centres <= q_hi)


def central_matching_fit(centres, counts, width, inside, m, num_steps=30):
    r"""Central matching on binned data: ``(mean, sd, pi0, curved)``.

    Over the bins in ``inside``, $\log f(x)\approx\beta_0+\beta_1x+\beta_2x^2$ is fitted to the counts by Poisson
    regression (Newton from the least-squares fit of $\log(\text{count}+1)$; the counts there, not a global
    smooth, carry the curvature). With $f$ the density ($\text{count}/(m\,\text{width})$),
    $\sigma_0^2=-1/(2\beta_2)$, $\delta_0=\beta_1\sigma_0^2$ and
    $\pi_0=\sqrt{2\pi}\,\sigma_0\exp(\beta_0+\delta_0^2/(2\sigma_0^2))$. ``curved`` is False when
    $\beta_2\ge 0$ (no concave centre); ``mean``, ``sd``, ``pi0`` are then placeholders (0, 1, 1) that the
    caller replaces by its own fallback.
    """
    dt = counts.dtype
    c = jnp.sum(jnp.where(inside, centres, 0.0)) / jnp.maximum(jnp.sum(inside).astype(dt), 1.0)
    half = jnp.maximum(jnp.max(jnp.where(inside, jnp.abs(centres - c), 0.0)), width)
    u = (centres - c) / half  # centred and scaled for a well-conditioned 3x3 system
    basis = jnp.stack([jnp.ones_like(u), u, u * u], axis=-1)
    w = inside.astype(dt)
    eye = 1e-10 * jnp.eye(3, dtype=dt)
    b = jnp.linalg.solve((basis * w[:, None]).T @ basis + eye, (basis * w[:, None]).T @ jnp.log(counts + 1.0))

    def newton(_, b):
        mu = jnp.exp(jnp.clip(basis @ b, -50.0, 50.0)) * w
        return b + jnp.linalg.solve((basis * mu[:, None]).T @ basis + eye, basis.T @ ((counts - mu) * w))

    b = jax.lax.fori_loop(0, num_steps, newton, b)
    # back to the coefficients of log f in (x - c)
    b = b / jnp.stack([jnp.ones((), dt), half, half * half]) - jnp.stack([jnp.log(m * width), 0.0, 0.0])
    curved = b[2] < 0
    b2 = jnp.where(curved, b[2], -0.5)
    sd = jnp.sqrt(-0.5 / b2)
    mean = c + b[1] * sd * sd
    log_pi0 = b[0] - (b[1] * b[1]) / (4.0 * b2) + 0.5 * math.log(2.0 * math.pi) + jnp.log(sd)
    pi0 = jnp.where(curved, jnp.exp(log_pi0), 1.0)
    mean = jnp.where(curved, mean, 0.0)
    sd = jnp.where(curved, sd, 1.0)
    return mean, sd, pi0, curved


def central_matching(z, num_bins=120, central=0.1):
    """Central matching on the row ``z``: its histogram, central region and `central_matching_fit`."""
    counts, centres, width = histogram(z, num_bins)
    inside = central_region(jnp.sort(z), centres, central)
    return central_matching_fit(centres, counts, width, inside, z.shape[-1])


def mle_half_width(m):
    """locfdr's default half-width, in robust standard deviations, of the central interval of the ML null:
    $4.3\\,\\exp(-0.26\\log_{10}m)$ (1.41 at $m=2\\cdot10^4$), wider for small $m$ where the few central values
    would leave the scale poorly determined."""
    return 4.3 * math.exp(-0.26 * math.log10(m))


def _truncated_loglik(theta, s0, s1, s2, a, b):
    """Log likelihood of $N(\\delta,\\sigma^2)$ truncated to $[a,b]$ from the sufficient statistics (count ``s0``,
    sum ``s1``, sum of squares ``s2`` of the values inside), with ``theta = (delta, log sigma)``."""
    delta, log_sd = theta[0], theta[1]
    sd = jnp.exp(log_sd)
    mass = jax.scipy.special.ndtr((b - delta) / sd) - jax.scipy.special.ndtr((a - delta) / sd)
    quad = (s2 - 2.0 * delta * s1 + s0 * delta * delta) / (sd * sd)
    return -0.5 * quad - s0 * log_sd - s0 * jnp.log(jnp.maximum(mass, jnp.finfo(sd.dtype).tiny))


def mle_null(z, zs, half_width, num_steps=40):
    r"""Efron's maximum-likelihood empirical null on the row ``z`` (``zs`` sorted): ``(mean, sd, pi0, ok)``.

    With $A=[\tilde z-c\,s,\ \tilde z+c\,s]$ ($\tilde z$ the median, $s$ the normal-consistent interquartile
    range, $c$ = ``half_width``), assume no non-null value in $A$: the $N_0$ values in $A$ are a sample of
    $N(\delta_0,\sigma_0^2)$ truncated to $A$, and $N_0\sim\mathrm{Bin}(m,\pi_0P_0(A))$. $(\delta_0,\sigma_0)$
    maximise the truncated likelihood (damped Newton in $(\delta_0,\log\sigma_0)$ from the median and $s$,
    the best of a few step lengths each step), and $\hat\pi_0=(N_0/m)/P_0(A)$.
    """
    dt = z.dtype
    m = z.shape[-1]
    med = sorted_quantile(zs, 0.5, midpoint=True)
    s = (sorted_quantile(zs, 0.75) - sorted_quantile(zs, 0.25)) / 1.3489795003921634
    s = jnp.where(s > 0, s, 1.0)
    a, b = med - half_width * s, med + half_width * s
    w = ((z >= a) & (z <= b)).astype(dt)
    # statistics centred at the median and scaled by s for conditioning; the answer is mapped back at the end
    u = (z - med) / s
    s0, s1, s2 = jnp.sum(w), jnp.sum(w * u), jnp.sum(w * u * u)
    lo, hi = -half_width, half_width

    def ll(t):
        return _truncated_loglik(t, s0, s1, s2, lo, hi)

    steps = jnp.asarray([1.0, 0.5, 0.25, 0.1, 0.03, 0.0], dt)

    def newton(_, t):
        g = jax.grad(ll)(t)
        h = jax.hessian(ll)(t)
        concave = (h[0, 0] < 0) & (jnp.linalg.det(h) > 0)
        d = jnp.where(concave, -jnp.linalg.solve(jnp.where(concave, h, -jnp.eye(2, dtype=dt)), g), g / s0)
        cand = t[None, :] + steps[:, None] * d[None, :]
        vals = jax.vmap(ll)(cand)
        vals = jnp.where(jnp.isfinite(vals), vals, -jnp.inf)
        return cand[jnp.argmax(vals)]

    t = jax.lax.fori_loop(0, num_steps, newton, jnp.zeros(2, dt))
    mean = med + s * t[0]
    sd = s * jnp.exp(t[1])
    mass = jax.scipy.special.ndtr((b - mean) / sd) - jax.scipy.special.ndtr((a - mean) / sd)
    pi0 = (s0 / m) / jnp.maximum(mass, jnp.finfo(dt).tiny)
    ok = jnp.isfinite(mean) & jnp.isfinite(sd) & (sd > 0) & (s0 >= 3)
    return mean, sd, pi0, ok
