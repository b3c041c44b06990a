r"""DASH's diagonal statistics: the gradient EMA, the grafting accumulator and the grafting direction.

The grafting direction only lends its per-block Frobenius norm to the Shampoo direction (and is the whole
update before ``start_preconditioning_step``); Adam's direction is the update of the leaves DASH does not
precondition (1-D leaves, scalars, sides past ``max_precondition_dim``).
"""

import jax.numpy as jnp
import optax
from jaxtyping import Array

__all__ = ["GRAFTINGS", "moments_and_graft"]

#: The ``grafting`` choices of `scale_by_dash`.
GRAFTINGS = ("adam", "adam_normalized", "adagrad", "rmsprop", "adagrad_normalized", "rmsprop_normalized", "sgd", "none")

#: Added to a leaf's gradient norm before dividing by it (Distributed Shampoo's ``_EPSILON``).
NORM_EPSILON = 1e-25


def _normalized(g: Array, fdt) -> Array:
    """``g / (||g||_F + 1e-25)``, the norm taken in the factor dtype (no float16 underflow of the epsilon)."""
    gf = g.astype(fdt)
    return (gf / (jnp.sqrt(jnp.sum(gf * gf)) + NORM_EPSILON)).astype(g.dtype)


def moments_and_graft(grads: list[Array], mu: list[Array], nu: list[Array], t: Array, b1, b2, eps,
                      grafting: str, fdt, preconditioned: list[bool], graft_mu: list[Array] | None,
                      graft_bias_correction: bool):
    r"""One step of the diagonal statistics, on flat lists of leaves.

    With $g$ the gradient of a leaf, $s = g$ except for the normalized graftings, where
    $s = g / (\|g\|_F + 10^{-25})$ on preconditioned leaves (the leaf's own norm, as Distributed
    Shampoo's ``RMSPROP_NORMALIZED``/``ADAGRAD_NORMALIZED``):

    $$
    \begin{aligned}
    m &\leftarrow b_1 m + (1-b_1) g, \qquad
    v \leftarrow \begin{cases} v + s^2 & \text{adagrad[\_normalized], preconditioned leaves} \\
    b_2 v + (1-b_2) s^2 & \text{otherwise} \end{cases} \\
    \hat m &= m / (1-b_1^t), \quad \hat v = v / (1-b_2^t), \quad
    P^{adam} = \hat m / (\sqrt{\hat v} + \epsilon) \\
    P^{graft} &= P^{adam} \text{ (adam)}, \quad \hat m_s / (\sqrt{\hat v} + \epsilon)
    \text{ (adam\_normalized, } m_s \leftarrow b_1 m_s + (1-b_1) s), \\
    &\quad s / (\sqrt{\hat v} + \epsilon) \text{ (rmsprop[\_normalized])},
    \quad s / (\sqrt{v} + \epsilon) \text{ (adagrad[\_normalized])}, \quad g \text{ (sgd)}, \quad m
    \text{ (none)}
    \end{aligned}
    $$

    Leaves that are not preconditioned keep $s = g$ and the EMA $v$, so their update is Adam's
    whatever the grafting.

    With ``graft_bias_correction=False`` the grafting directions of the EMA graftings (adam,
    adam_normalized, rmsprop[_normalized]) divide by $\sqrt{v} + \epsilon$ instead of
    $\sqrt{\hat v} + \epsilon$ (Distributed Shampoo's RMSprop grafting has no bias correction);
    $\hat m$ stays corrected and the Adam direction of the leaves DASH does not precondition is unchanged.

    Args:
      grads, mu, nu: the gradient, its EMA and the grafting accumulator, one array per leaf.
      t: the 1-based step, int32 scalar.
      b1, b2, eps: the EMA rates and the epsilon.
      grafting: one of `GRAFTINGS`.
      fdt: the factor dtype (bias corrections and norms are computed in it).
      preconditioned: per leaf, whether it gets Kronecker factors.
      graft_mu: ``adam_normalized`` only: the EMA $m_s$ of $s$, one array per leaf (``None`` otherwise).
      graft_bias_correction: whether the grafting directions divide $v$ by $1 - b_2^t$ (static).

    Returns:
      ``(mu, nu, graft, adam, graft_mu)``, lists of leaves (``graft_mu`` ``None`` unless ``adam_normalized``).
    """
    normalize = grafting.endswith("_normalized")
    scaled = [_normalized(g, fdt) if normalize and pre else g for g, pre in zip(grads, preconditioned)]
    mu = [optax.tree.update_moment(g, m, b1, 1) for g, m in zip(grads, mu)]
    adagrad = grafting.startswith("adagrad")
    # Leaves DASH does not precondition take Adam's update, so they keep Adam's EMA whatever the grafting.
    nu = [n + s * s if adagrad and pre else optax.tree.update_moment_per_elem_norm(s, n, b2, 2)
          for s, n, pre in zip(scaled, nu, preconditioned)]
    tf = t.astype(fdt)
    bc1 = 1.0 - jnp.asarray(b1).astype(fdt) ** tf
    bc2 = 1.0 - jnp.asarray(b2).astype(fdt) ** tf
    mu_hat = [m / bc1.astype(m.dtype) for m in mu]
    nu_hat = [v / bc2.astype(v.dtype) for v in nu]
    adam = [m / (jnp.sqrt(v) + eps) for m, v in zip(mu_hat, nu_hat)]
    nu_graft = nu_hat if graft_bias_correction else nu
    if grafting == "adam":
        graft = adam if graft_bias_correction else [m / (jnp.sqrt(v) + eps) for m, v in zip(mu_hat, nu)]
    elif grafting == "adam_normalized":
        graft_mu = [optax.tree.update_moment(x, m, b1, 1) for x, m in zip(scaled, graft_mu)]
        graft = [(m / bc1.astype(m.dtype)) / (jnp.sqrt(v) + eps) for m, v in zip(graft_mu, nu_graft)]
    elif grafting.startswith("rmsprop"):
        graft = [s / (jnp.sqrt(v) + eps) for s, v in zip(scaled, nu_graft)]
    elif grafting.startswith("adagrad"):
        graft = [s / (jnp.sqrt(v) + eps) for s, v in zip(scaled, nu)]
    elif grafting == "sgd":
        graft = list(grads)
    else:
        graft = mu
    return mu, nu, graft, adam, graft_mu
