"""The d-separation oracle (moral-ancestral criterion), batched like the statistical CI tests."""

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Int

from ..._checks import default_float_dtype
from .._graphs._dag import check_dag
from ._batched import _BatchedTest, _pad_dim
from ._ci_tests import CIResult, _check_batch

__all__ = ["d_separation"]


@jax.jit
def d_separated(dag, x, y, s, k=None):
    """``k``: optional true set size (traced); columns ``>= k`` of ``s`` are ignored."""
    d = dag.shape[0]
    valid = jnp.ones((s.shape[1],), bool) if k is None else jnp.arange(s.shape[1], dtype=jnp.int32) < k
    a = dag.astype(jnp.int32)
    # ancestors closure: anc[i, j] = j is an ancestor of i (or i itself)
    reach = jnp.eye(d, dtype=jnp.int32) | a.T

    def body(carry):
        r, _ = carry
        r2 = jnp.minimum(r @ r, 1) | r
        return r2, jnp.any(r2 != r)

    anc, _ = jax.lax.while_loop(lambda c: c[1], body, (reach, jnp.array(True)))

    def one(xi, yi, si):
        cond = jnp.zeros(d, bool).at[si].max(valid)
        members = cond.at[xi].set(True).at[yi].set(True)
        in_an = jnp.any(members[:, None] & (anc > 0), axis=0)  # ancestral set of {x, y} ∪ S
        sub = a * (in_an[:, None] & in_an[None, :]).astype(jnp.int32)
        moral = (sub + sub.T + sub @ sub.T) > 0
        moral = moral & ~jnp.eye(d, dtype=bool)
        keep = in_an & ~cond
        moral = moral & keep[:, None] & keep[None, :]
        start = jnp.zeros(d, bool).at[xi].set(True)

        def step(c):
            r, _ = c
            r2 = r | jnp.any(moral & r[:, None], axis=0)
            return r2, jnp.any(r2 != r)

        r, _ = jax.lax.while_loop(lambda c: c[1], step, (start, jnp.array(True)))
        return ~r[yi]

    return jax.vmap(one)(x, y, s)


def d_separation(
    dag: Bool[ArrayLike, "d d"] | Int[ArrayLike, "d d"],
    x: Int[Array, " b"],
    y: Int[Array, " b"],
    s: Int[Array, "b k"],
) -> CIResult:
    r"""d-separation oracle: ``p = 1`` if ``x ⫫_d y | S`` in ``dag`` and ``p = 0`` otherwise.

    Uses the moral-ancestral criterion (Lauritzen): ``x`` and ``y`` are d-separated by ``S`` iff they are
    disconnected in the moral graph of $\mathrm{An}(\{x,y\}\cup S)$ after deleting ``S``.

    Args:
      dag: ``(d, d)`` bool adjacency, ``dag[i, j]`` meaning ``i -> j``.
      x: ``(b,)`` int indices.
      y: ``(b,)`` int indices.
      s: ``(b, k)`` conditioning sets.

    Returns:
      `CIResult` with ``statistic = pvalue = 1.0`` for separated triples, else ``0.0``.

    Raises:
      ValueError: ``dag`` not square or cyclic (a runtime error under ``jit``), or a bad batch (an index out of
        range, ``x == y``, ``S`` holding ``x`` or ``y``).

    References:
      Lauritzen et al., Networks 20 (1990); causal-learn ``D_Separation``.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.structure import d_separation
      >>> dag = jnp.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]], bool)  # 0 -> 1 -> 2
      >>> res = d_separation(dag, jnp.array([0, 0]), jnp.array([2, 2]), jnp.array([[1], [1]]))
      >>> res.pvalue.tolist()
      [1.0, 1.0]
    """
    dag = check_dag(dag)
    x, y, s = _check_batch(x, y, s, dag.shape[0])
    sep = d_separated(dag, x, y, s)
    p = sep.astype(default_float_dtype())
    return CIResult(p, p, jnp.full(x.shape, -1, jnp.int32))


class _DSeparationBatch(_BatchedTest):
    """PC's d-separation oracle on one DAG (padded to a multiple of 16 nodes): ``p = 1`` for a d-separated
    triple, else 0."""

    pad_sets = True
    lo = 256

    def __init__(self, dag, mesh=None, max_batch: int = 8192):
        super().__init__(mesh, max_batch)
        dag = np.asarray(dag, bool)
        dp = _pad_dim(dag.shape[0])
        padded = np.zeros((dp, dp), bool)
        padded[: dag.shape[0], : dag.shape[0]] = dag
        self.dag = jax.device_put(padded)
        self.per_test = 4 * dp**2

    def _pads(self, k: int) -> bool:
        return k > 0

    def _kernel(self, xs, ys, ss, kk, plan, m):
        return d_separated(self.dag, xs, ys, ss, kk).astype(default_float_dtype())
