r"""The fixed $|z|$ threshold that minimises the two-groups misclassification risk estimated from the data.

Two-groups model $f(z)=\pi_0\varphi(z)+(1-\pi_0)f_1(z)$, $f_1=\int\varphi(z-\mu)\,dG(\mu)$: $\pi_0$ is
Storey's bootstrap estimate (`estimate_pi0` on the two-sided p-values); $G$ is the nonparametric maximum likelihood
estimate (Kiefer & Wolfowitz 1956) on a symmetric grid of $K=51$ points over $[-\max|z|,\max|z|]$, by EM with
$\pi_0$ held fixed, so no shape is assumed for the alternative (normal, two-point, skewed) and $f_1$ keeps the
normal's light tails. With $\mathrm{fdr}=\pi_0\varphi/f$, for unit losses the Bayes rule rejects iff
$\mathrm{fdr}(z_i)<1/2$; among threshold rules $|z|>c$ (the relative-belief and horseshoe tests are both of that
form) the estimated risk is
$$\widehat R(c)=\sum_{|z_i|>c}\mathrm{fdr}(z_i)+\sum_{|z_i|\le c}\bigl(1-\mathrm{fdr}(z_i)\bigr)
=\sum_i\bigl(1-\mathrm{fdr}(z_i)\bigr)+\sum_{|z_i|>c}\bigl(2\,\mathrm{fdr}(z_i)-1\bigr).$$
$\widehat R$ changes only at the $|z_i|$: sort them in decreasing order and take the $k$ that minimises the partial
sums of $2\,\mathrm{fdr}-1$; the threshold lies halfway between the $k$-th and the $(k+1)$-th largest $|z_i|$
(one above the largest when $k=0$: reject nothing).
"""

import jax
import jax.numpy as jnp
from jax.scipy.special import ndtr

#: Grid points of the NPMLE of the alternative's effect distribution, and EM steps.
NUM_GRID = 51
NUM_EM_STEPS = 200


@jax.jit
def _risk_cutoff_from_lfdr(z, lfdr):
    """The cutoff on ``|z|`` minimising the estimated risk, per row (``z``, ``lfdr`` of shape ``(*batch, n)``)."""
    a = jnp.abs(z)
    order = jnp.argsort(-a, axis=-1)
    a_sorted = jnp.take_along_axis(a, order, axis=-1)
    gain = jnp.take_along_axis(2.0 * lfdr - 1.0, order, axis=-1)
    partial = jnp.concatenate([jnp.zeros_like(gain[..., :1]), jnp.cumsum(gain, axis=-1)], axis=-1)
    k = jnp.argmin(partial, axis=-1)  # number rejected; the first minimum, so ties reject fewer
    above = jnp.take_along_axis(a_sorted, jnp.maximum(k - 1, 0)[..., None], axis=-1)[..., 0]
    below = jnp.take_along_axis(a_sorted, jnp.minimum(k, a.shape[-1] - 1)[..., None], axis=-1)[..., 0]
    top = a_sorted[..., 0]
    # k = 0: above the largest |z|; k = n: below the smallest
    return jnp.where(k == 0, top + 1.0, jnp.where(k == a.shape[-1], 0.5 * below, 0.5 * (above + below)))


@jax.jit
def npmle_lfdr(z):
    """fdr(z) = pi0 phi / f per test, with Storey's pi0 and the grid NPMLE of the alternative; ``(*batch, n)``."""
    from ._qvalues import DEFAULT_LAMBDAS, _pi0_core

    pi0, _ = _pi0_core(2.0 * ndtr(-jnp.abs(z)), DEFAULT_LAMBDAS, "bootstrap", 3.0)
    pi0 = jnp.clip(pi0, 0.0, 1.0)[..., None]
    top = jnp.max(jnp.abs(z), axis=-1, keepdims=True)
    grid = top * jnp.linspace(-1.0, 1.0, NUM_GRID, dtype=z.dtype)  # (*batch, K)
    # likelihoods relative to the largest of each test's (the null's and the grid's), so nothing underflows
    d2 = jnp.square(z[..., :, None] - grid[..., None, :])  # (*batch, n, K)
    ref = jnp.minimum(jnp.min(d2, axis=-1), z * z)  # smallest squared distance per test
    lik = jnp.exp(-0.5 * (d2 - ref[..., None]))
    lik0 = jnp.exp(-0.5 * (z * z - ref))
    w0 = jnp.full(grid.shape, 1.0 / NUM_GRID, z.dtype)

    def step(_, w):
        f1 = jnp.einsum("...nk,...k->...n", lik, w)
        f = pi0 * lik0 + (1.0 - pi0) * f1
        resp = jnp.einsum("...nk,...n->...k", lik, 1.0 / f) * w  # sum_i w_k L_ik / f_i
        return resp / jnp.sum(resp, axis=-1, keepdims=True)

    w = jax.lax.fori_loop(0, NUM_EM_STEPS, step, w0)
    f = pi0 * lik0 + (1.0 - pi0) * jnp.einsum("...nk,...k->...n", lik, w)
    return jnp.minimum(pi0 * lik0 / f, 1.0)


def risk_cutoff(z):
    """The estimated-risk-minimising cutoff on ``|z|`` per row of standardised scores ``z`` (``(*batch, n)``)."""
    return _risk_cutoff_from_lfdr(z, npmle_lfdr(z))
