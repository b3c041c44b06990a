r"""The fixed $|z|$ threshold that minimises the two-groups misclassification risk estimated by the local fdr.

For unit losses the Bayes rule rejects test $i$ iff $\mathrm{fdr}(z_i)<1/2$. Among threshold rules
$|z|>c$ (the relative-belief test and the horseshoe test are both of this form) the estimated risk is
$$\widehat R(c)=\sum_{|z_i|>c}\mathrm{fdr}(z_i)+\sum_{|z_i|\le c}\bigl(1-\mathrm{fdr}(z_i)\bigr)
=\sum_i\bigl(1-\mathrm{fdr}(z_i)\bigr)+\sum_{|z_i|>c}\bigl(2\,\mathrm{fdr}(z_i)-1\bigr),$$
with $\mathrm{fdr}=\pi_0\varphi/\hat f$ from `local_fdr` (theoretical null; $\hat f$ by Lindsey's method, so no
shape is assumed for the alternative). $\widehat R$ changes only at the $|z_i|$: sort them in decreasing order and
take the $k$ that minimises the partial sums of $2\,\mathrm{fdr}-1$; the threshold lies halfway between the $k$-th
and the $(k+1)$-th largest $|z_i|$ (above the largest when $k=0$: reject nothing).
"""

import jax
import jax.numpy as jnp

from ._central_matching import mle_half_width
from ._local_fdr import _local_fdr_core


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


def risk_cutoff(z):
    """The estimated-risk-minimising cutoff on ``|z|`` per row of standardised scores ``z`` (``(*batch, n)``)."""
    lfdr = _local_fdr_core(z, "theoretical", 120, 7, 0.1, mle_half_width(z.shape[-1]))[0]
    return _risk_cutoff_from_lfdr(z, lfdr)
