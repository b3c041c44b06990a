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
    counts = jnp.zeros(num_bins, dt).at[idx].add(1.0)
    centres = lo + (jnp.arange(num_bins, dtype=dt) + 0.5) * width
    return counts, centres, width


def central_region(z, centres, central):
    """Mask of the bin centres between the ``central`` and ``1 - central`` quantiles of ``z``."""
    q_lo, q_hi = jnp.quantile(z, central), jnp.quantile(z, 1.0 - central)
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
    inside = central_region(z, centres, central)
    return central_matching_fit(centres, counts, width, inside, z.shape[-1])
