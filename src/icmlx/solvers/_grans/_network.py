"""The G-RANS basis generator: a graph network from the normalised residual to per-node basis weights."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from ..._checks import check_int
from ..._types import PRNGKey
from ._operator import N_LEVELS, GRANSOperator

__all__ = ["GRANSNet"]

N_FEATURES = 5  # r̂, Âr̂, Σ_j â_ij, Σ_j |â_ij|, Σ_j |â_ij - â_ji|


class GRANSNet(eqx.Module):
    r"""Graph network that maps a normalised residual to the basis weights ``w[n, Q]`` (float32).

    $$
    h^0 = \tanh(F W_{in} + b_{in}),\quad
    h^{l+1} = h^l + \tanh\big(h^l W_s + (\hat A h^l) W_n + [\bar h^l_{agg_0}, \bar h^l_{agg_1}] W_p
    + b^l\big),\quad w = w_{base} + h^L W_{out} + b_{out}
    $$

    with node features $F = [\hat r, \hat A\hat r, \sum_j \hat a_{ij}, \sum_j|\hat a_{ij}|,
    \sum_j|\hat a_{ij}-\hat a_{ji}|]$ (matrix-only: no coordinates, no PDE label), aggregate means
    $\bar h$ on the two basis levels, and $w_{base} = [1, \hat r]$ per level, so a zero head
    gives the fixed two-level aggregation basis. Layers are stacked and run with ``lax.scan``.

    Attributes:
      w_in: float32 input projection of the node features.
      b_in: float32 input bias.
      w_self: float32 per-layer weights on a node's own state.
      w_nbr: float32 per-layer weights on the neighbours' aggregated state.
      w_pool: float32 per-layer weights on the aggregate-pooled state.
      b: float32 per-layer biases.
      w_out: float32 output head weights.
      b_out: float32 output head bias.
    """

    w_in: Float[Array, "f h"]
    b_in: Float[Array, " h"]
    w_self: Float[Array, "l h h"]
    w_nbr: Float[Array, "l h h"]
    w_pool: Float[Array, "l h2 h"]
    b: Float[Array, "l h"]
    w_out: Float[Array, "h q"]
    b_out: Float[Array, " q"]

    @classmethod
    def init(cls, key: PRNGKey, *, hidden: int = 16, layers: int = 3, channels: int = 2,
             head_scale: float = 0.0) -> "GRANSNet":
        """Random initialisation (Glorot-normal); ``head_scale`` scales the output head (0: basis = base).

        Examples:
          >>> import jax
          >>> from icmlx.solvers import GRANSNet
          >>> GRANSNet.init(jax.random.key(0), hidden=8).w_out.shape
          (8, 4)
        """
        for name, v in (("hidden", hidden), ("layers", layers), ("channels", channels)):
            check_int(v, name, where="GRANSNet.init", minimum=1)
        ks = jax.random.split(key, 5)
        H, L, Q = hidden, layers, N_LEVELS * channels
        g = lambda k, shape, fan: jax.random.normal(k, shape, jnp.float32) / math.sqrt(fan)
        return cls(
            w_in=g(ks[0], (N_FEATURES, H), N_FEATURES), b_in=jnp.zeros((H,), jnp.float32),
            w_self=0.5 * g(ks[1], (L, H, H), H), w_nbr=0.5 * g(ks[2], (L, H, H), H),
            w_pool=0.5 * g(ks[3], (L, N_LEVELS * H, H), 2 * H), b=jnp.zeros((L, H), jnp.float32),
            w_out=head_scale * g(ks[4], (H, Q), H), b_out=jnp.zeros((Q,), jnp.float32))

    @property
    def channels(self) -> int:
        return self.w_out.shape[1] // N_LEVELS

    def __repr__(self) -> str:
        return f"GRANSNet(hidden={self.w_in.shape[1]}, layers={self.w_self.shape[0]}, channels={self.channels})"

    def __call__(self, op: GRANSOperator, rs: Float[Array, " npad"]) -> Float[Array, "npad q"]:
        A = op.A
        npad = A.shape[0]
        nseg = op.pool_segments
        # Â h with Â = D^{-1/2} A D^{-1/2} (zero on padding rows) in the ELL layout of A: k row gathers, which
        # XLA:CPU runs faster than a COO gather + segment sum
        ell = op.ell
        sd = jnp.sqrt(jnp.abs(ell.diagonal()))
        # (a complex A: the real part of Â, the real-linear part the real and imaginary residuals each pass through)
        av = jnp.where(op.mask[None, :] > 0, jnp.real(ell.val) / (sd[None, :] * sd[ell.idx]), 0.0).astype(jnp.float32)

        def amv(h):
            return jax.lax.fori_loop(0, ell.idx.shape[0], lambda j, y: y + av[j][:, None] * h[ell.idx[j]],
                                     jnp.zeros_like(h))

        feats = jnp.concatenate([rs[:, None], amv(rs[:, None]), op.feats], axis=1)
        h = jnp.tanh(feats @ self.w_in + self.b_in)
        mask = op.mask.astype(jnp.float32)[:, None]
        counts = [jnp.maximum(jax.ops.segment_sum(mask, op.pool[:, l], num_segments=nseg), 1.0)
                  for l in range(N_LEVELS)]

        def layer(h, p):
            ws, wn, wp, b = p
            pooled = jnp.concatenate(
                [(jax.ops.segment_sum(h * mask, op.pool[:, l], num_segments=nseg) / counts[l])
                 [op.pool[:, l]] for l in range(N_LEVELS)], axis=1)
            h = h + jnp.tanh(h @ ws + amv(h) @ wn + pooled @ wp + b)
            return h, None

        h, _ = jax.lax.scan(layer, h, (self.w_self, self.w_nbr, self.w_pool, self.b))
        C = self.channels
        base = jnp.tile(jnp.concatenate([jnp.ones((npad, 1), jnp.float32),
                                         jnp.broadcast_to(rs[:, None], (npad, C - 1))], 1),
                        (1, N_LEVELS))
        return (base + h @ self.w_out + self.b_out) * mask


def _base_weights(op: GRANSOperator, rs: Float[Array, " npad"], channels: int) -> Float[Array, "npad q"]:
    """``w_base = [1, r̂, ..., r̂]`` per level on the true nodes (zero on padding): the basis of a zero head."""
    npad = op.padded_size
    mask = op.mask.astype(jnp.float32)[:, None]
    base = jnp.concatenate([jnp.ones((npad, 1), jnp.float32),
                            jnp.broadcast_to(rs[:, None].astype(jnp.float32), (npad, channels - 1))], 1)
    return jnp.tile(base, (1, N_LEVELS)) * mask


class _ZeroHead(eqx.Module):
    """The basis of a ``GRANSNet`` with a zero output head (``w = [1, r̂]`` per level), without running the
    network: what ``GRANS(net=None)`` uses. No parameters; ``channels`` is static."""

    channels: int = eqx.field(static=True, default=2)

    def __repr__(self) -> str:
        return f"zero head (w = [1, r̂], channels={self.channels})"

    def __call__(self, op: GRANSOperator, rs: Float[Array, " npad"]) -> Float[Array, "npad q"]:
        return _base_weights(op, rs, self.channels)

