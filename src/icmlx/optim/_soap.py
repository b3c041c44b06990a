"""SOAP: Adam in the eigenbasis of Shampoo's Kronecker factors, on DASH's stacked block layout."""

from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax
from jaxtyping import Array, Int

from ._blocking import VECTOR, BlockPlan, blockify, unblockify
from ._dash import _default_block_size, _plan_for, _update_factors
from ._dash_settings import _check_nonnegative, _check_numeric, _check_settings, _concrete, static_args_checked
from ._leaf_utils import (
    _all_finite,
    _check_leaf_dtypes,
    _factor_dtype,
    _guard_nonfinite,
    _host_zeros_like,
    _on_host_ok,
)

__all__ = ["SoapState", "scale_by_soap", "soap", "SOAP_STATIC_ARGS"]

#: Arguments of `soap` that must stay Python values under ``optax.inject_hyperparams``.
SOAP_STATIC_ARGS = (
    "block_size", "precondition_frequency", "eigenbasis", "max_precondition_dim", "merge_small_dims", "one_dim",
)

_EIGENBASES = ("qr", "eigh")


class SoapState(NamedTuple):
    """State of `scale_by_soap` (a pytree of arrays only).

    Attributes:
      count: number of calls so far (the first call only sets up the bases), int32 scalar.
      mu: Adam's first moment, parameter-shaped; on preconditioned leaves it is held in the rotated basis
        (each block $Q_L^\\top M Q_R$), on the others in the parameter basis.
      nu: Adam's second moment, parameter-shaped, same bases as ``mu``.
      factors: Kronecker factor EMAs, one ``(N_z, z, z)`` stack per (block side, root), as in
        `DashState`.
      bases: their eigenbases $Q$ (columns by decreasing eigenvalue), same shapes.
      basis_failures: int32 scalar, blocks whose refreshed basis had a non-finite entry and kept the previous
        one (0 in a healthy run).
    """

    count: Int[Array, ""]
    mu: Any
    nu: Any
    factors: tuple[Array, ...]
    bases: tuple[Array, ...]
    basis_failures: Int[Array, ""]


_check_static_args = static_args_checked(SOAP_STATIC_ARGS, "SOAP_STATIC_ARGS")


def _eigh_basis(f: Array) -> Array:
    """Eigenvectors of each factor, columns by decreasing eigenvalue."""
    _, q = jnp.linalg.eigh(0.5 * (f + jnp.swapaxes(f, -1, -2)))
    return q[..., ::-1]


def _qr_basis(f: Array, q: Array) -> tuple[Array, Array]:
    """One power step from the previous basis: sort its columns by ``diag(Q^T F Q)``, then ``qr(F Q)``.

    Returns the new basis and the sort permutation ``(N, z)`` (applied to the second moment along that side).
    """
    est = jnp.einsum("nij,nik,nkj->nj", q, f, q)
    perm = jnp.argsort(-est, axis=-1)
    q = jnp.take_along_axis(q, perm[:, None, :], axis=2)
    q_new, _ = jnp.linalg.qr(jnp.matmul(f, q))
    return q_new, perm


def _rotate(plan: BlockPlan, bases, blocks: list[Array], back: bool) -> list[Array]:
    """``Q_L^T X Q_R`` per block (``back``: ``Q_L X Q_R^T``); vectors have a left basis only."""
    out = []
    for gi, grp in enumerate(plan.groups):
        ql = bases[grp.left_stack][grp.left_offset : grp.left_offset + grp.count]
        x = jnp.matmul(ql if back else jnp.swapaxes(ql, -1, -2), blocks[gi])
        if grp.kind != VECTOR:
            qr = bases[grp.right_stack][grp.right_offset : grp.right_offset + grp.count]
            x = jnp.matmul(x, jnp.swapaxes(qr, -1, -2) if back else qr)
        out.append(x)
    return out


def _permute_blocks(plan: BlockPlan, perms, blocks: list[Array]) -> list[Array]:
    """Reorder each block's rows (left permutation) and columns (right permutation), as the basis columns were."""
    out = []
    for gi, grp in enumerate(plan.groups):
        pl = perms[grp.left_stack][grp.left_offset : grp.left_offset + grp.count]
        x = jnp.take_along_axis(blocks[gi], pl[:, :, None], axis=1)
        if grp.kind != VECTOR:
            pr = perms[grp.right_stack][grp.right_offset : grp.right_offset + grp.count]
            x = jnp.take_along_axis(x, pr[:, None, :], axis=2)
        out.append(x)
    return out


@_check_static_args
def scale_by_soap(
    block_size: int | None = None,
    b1: float | Array = 0.95,
    b2: float | Array = 0.95,
    shampoo_beta: float | Array | None = None,
    eps: float | Array = 1e-8,
    *,
    precondition_frequency: int = 10,
    eigenbasis: str = "qr",
    one_dim: str = "adam",
    max_precondition_dim: int | None = 4096,
    merge_small_dims: bool = True,
    nonfinite: str = "skip",
    mesh: jax.sharding.Mesh | None = None,
    mesh_axis: str | None = None,
) -> optax.GradientTransformation:
    r"""SOAP's direction: Adam run in the eigenbasis of each block's Shampoo factors.

    For every block $G$ (DASH's blocking: the same ``block_size`` tiles, merged views, Adam fallback and
    stacked ``(N, z, z)`` factors as `scale_by_dash`), with Adam step $t$:

    $$
    \begin{aligned}
    G' &= Q_L^\top G\, Q_R, \qquad M \leftarrow b_1 M + (1-b_1) G', \qquad V \leftarrow b_2 V + (1-b_2) G'^{2},\\
    U &= \frac{\sqrt{1-b_2^{t}}}{1-b_1^{t}}\; Q_L \frac{M}{\sqrt V + \epsilon} Q_R^\top,\\
    L &\leftarrow \beta L + (1-\beta) G G^\top, \qquad R \leftarrow \beta R + (1-\beta) G^\top G .
    \end{aligned}
    $$

    $M$ and $V$ live in the rotated basis. The first call only accumulates $L, R$ and sets
    $Q_L, Q_R$ to their eigenvectors (batched ``eigh``) and returns a zero update, as the reference
    implementation does; Adam's step $t$ counts from the second call. When $t$ is a multiple of
    ``precondition_frequency`` the bases are refreshed after the update, from the factors that include this
    step's gradient: ``eigenbasis="qr"`` (default, the paper's) sorts the columns of $Q$ by
    $\mathrm{diag}(Q^\top F Q)$, reorders $V$'s rows/columns the same way, and takes one power step
    $Q \leftarrow \mathrm{qr}(F Q)$; ``"eigh"`` recomputes the eigenvectors (decreasing eigenvalue order).
    $M$ is rotated to the new basis ($Q_L'^\top Q_L M Q_R^\top Q_R'$). Leaves DASH does not
    precondition (1-D, scalars, a side past ``max_precondition_dim``) take Adam's update with the same bias
    correction. Vectors with ``one_dim="shampoo"`` have a left basis only.

    Non-finite gradients (``nonfinite``) and sharding (``mesh``, ``mesh_axis``: the factor and basis stacks
    padded and constrained to ``P(mesh_axis)``, each device refreshing its share inside ``jax.shard_map``)
    behave as in `scale_by_dash`. A block whose refreshed basis has a non-finite entry keeps
    its previous basis and is counted in ``SoapState.basis_failures``.

    Moment rates, measured: the defaults are the reference's $b_1 = b_2 = 0.95$. On deterministic, well-conditioned
    problems these rates stall: on the $\kappa = 10$ matrix regressions of ``benchmarks/optim_suite.py --quick
    --seeds 3 --variants`` (``benchmarks/results/optim_suite.json``, best peak learning rate of the grid, mean of 3
    seeds) SOAP ends at 1.1e-5 / 1.5e-5, where JAX Distributed Shampoo ends at 1.1e-9 / 1.3e-9 and Adam ($b_1 =
    0.9$, $b_2 = 0.999$) at 1.4e-10. ``optax.adam(b1=0.95, b2=0.95)``, in the parameter basis, stalls too, at 4.9e-6
    / 5.0e-6 (its row in the same file), so the plateau comes from Adam's moments at these rates, not from the
    eigenbasis; with $b_1 = 0.9$ SOAP reaches 3.6e-9 / 1.7e-9 there and 3.8e-5 / 3.7e-8 instead of 1.3e-4 / 2.7e-5
    at $\kappa = 10^2$ (level at $\kappa = 10^3$), but ends the full-batch MLP and CNN on the digits 3.2x and 1.8x
    higher (8.8e-4 vs 2.7e-4, 3.0e-4 vs 1.7e-4; the char-LM's validation loss is 2.006 vs 2.044). Pass ``b1=0.9``
    for deterministic or well-conditioned objectives.

    Args:
      block_size: block side (static), ``None`` for 128 on CPU and 1024 on GPU/TPU.
      b1: Adam's first-moment rate (the reference's default 0.95).
      b2: Adam's second-moment rate (0.95).
      shampoo_beta: the factors' EMA rate $\beta$; ``None`` uses ``b2`` (the reference's
        ``shampoo_beta=-1``).
      eps: Adam's epsilon.
      precondition_frequency: refresh period of the bases (static).
      eigenbasis: ``"qr"`` (one power step from the previous basis) or ``"eigh"`` (static).
      one_dim: ``"adam"`` or ``"shampoo"`` for 1-D leaves (static).
      max_precondition_dim: leaves with a longer side take Adam's update (static).
      merge_small_dims: DASH's view of ≥3-D leaves (static).
      nonfinite: ``"skip"``, ``"raise"`` or ``"ignore"``.
      mesh: optional mesh to shard the stacks over.
      mesh_axis: its axis name (with ``mesh``).

    Returns:
      An ``optax.GradientTransformation`` whose state is a `SoapState`.

    Raises:
      ValueError: out-of-range hyperparameters, an unknown ``eigenbasis``, or a structural argument given as an
        array (use ``optax.inject_hyperparams(..., static_args=SOAP_STATIC_ARGS)``).
      TypeError: a hyperparameter that is not a number or an array.

    References:
      Vyas et al., SOAP: Improving and Stabilizing Shampoo using Adam, arXiv:2409.11321. Modoranu et al., DASH,
      arXiv:2602.02016 (the stacked block layout).

    Examples:
      >>> import jax, jax.numpy as jnp, optax
      >>> from icmlx.optim import scale_by_soap
      >>> params = {"w": jnp.ones((6, 4)), "b": jnp.zeros(4)}
      >>> tx = scale_by_soap(block_size=4)
      >>> state = tx.init(params)
      >>> grads = jax.tree.map(lambda p: 0.5 * jnp.ones_like(p), params)
      >>> updates, state = jax.jit(tx.update)(grads, state, params)
      >>> print(updates["w"].shape, float(jnp.abs(updates["w"]).max()), int(state.count))
      (6, 4) 0.0 1
    """
    if block_size is None:
        block_size = _default_block_size()
    if shampoo_beta is not None:
        _check_numeric("shampoo_beta", shampoo_beta)
    beta = b2 if shampoo_beta is None else shampoo_beta
    _check_settings(block_size, b1, b2, beta, eps, 0.0, "adam", one_dim, nonfinite, precondition_frequency, 1,
                    0.0, None, mesh, mesh_axis, max_precondition_dim, merge_small_dims)
    v = _concrete(beta)
    if v is not None and not np.all((0.0 <= v) & (v < 1.0)):
        raise ValueError(f"shampoo_beta must be in [0, 1), got {shampoo_beta=}")
    if eigenbasis not in _EIGENBASES:
        raise ValueError(f"eigenbasis must be one of {_EIGENBASES}, got {eigenbasis=}")
    num_shards = 1 if mesh is None else int(mesh.shape[mesh_axis])

    def _constrain(x: Array) -> Array:
        if mesh is None:
            return x
        spec = jax.sharding.PartitionSpec(mesh_axis, *([None] * (x.ndim - 1)))
        return jax.lax.with_sharding_constraint(x, jax.sharding.NamedSharding(mesh, spec))

    def _sharded(fn, *stacks):
        if mesh is None:
            return fn(*stacks)
        spec = jax.sharding.PartitionSpec(mesh_axis)
        return jax.shard_map(fn, mesh=mesh, in_specs=(spec,) * len(stacks), out_specs=(spec, spec),
                             check_vma=False)(*stacks)

    def _initial_bases(factors):
        return tuple(_constrain(_sharded(lambda f: (_eigh_basis(f), f[..., 0]), f)[0]) for f in factors)

    def _refresh(plan: BlockPlan, factors, bases):
        """New bases, their column permutations and the failure count."""
        new, perms, n_failed = [], [], jnp.zeros([], jnp.int32)
        for f, q in zip(factors, bases):
            if eigenbasis == "qr":
                q_new, perm = _sharded(_qr_basis, f.astype(q.dtype), q)
            else:
                q_new = _sharded(lambda fl: (_eigh_basis(fl), fl[..., 0]), f.astype(q.dtype))[0]
                perm = jnp.broadcast_to(jnp.arange(q.shape[-1]), q.shape[:-1])
            failed = ~jnp.all(jnp.isfinite(q_new), axis=(-2, -1))
            new.append(_constrain(jnp.where(failed[:, None, None], q, q_new)))
            perms.append(jnp.where(failed[:, None], jnp.arange(q.shape[-1]), perm))
            n_failed = n_failed + jnp.sum(failed, dtype=jnp.int32)
        return tuple(new), tuple(perms), n_failed

    def init_fn(params):
        leaves, _ = jax.tree.flatten(params)
        _check_leaf_dtypes("scale_by_soap", leaves, "params")
        plan = _plan_for(leaves, block_size, one_dim, num_shards, max_precondition_dim, merge_small_dims)
        fdt = _factor_dtype(leaves)
        if mesh is None and all(_on_host_ok(x) for x in leaves):
            # concrete parameters: the state is made in NumPy and transferred (no compiled programs)
            mu = jax.tree.map(_host_zeros_like, params)
            nu = jax.tree.map(_host_zeros_like, params)
            factors = tuple(jax.device_put(np.zeros((npad, z, z), fdt)) for z, _, _, npad in plan.stacks)
            bases = tuple(jax.device_put(np.tile(np.eye(z, dtype=fdt), (npad, 1, 1))) for z, _, _, npad in plan.stacks)
            zero = jax.device_put(np.zeros((), np.int32))
            return SoapState(zero, mu, nu, factors, bases, jax.device_put(np.zeros((), np.int32)))
        mu = jax.tree.map(jnp.zeros_like, params)
        nu = jax.tree.map(jnp.zeros_like, params)
        factors = tuple(_constrain(jnp.zeros((npad, z, z), fdt)) for z, _, _, npad in plan.stacks)
        bases = tuple(_constrain(jnp.broadcast_to(jnp.eye(z, dtype=fdt), (npad, z, z)))
                      for z, _, _, npad in plan.stacks)
        return SoapState(jnp.zeros([], jnp.int32), mu, nu, factors, bases, jnp.zeros([], jnp.int32))

    def update_fn(updates, state, params=None):
        del params
        leaves, treedef = jax.tree.flatten(updates)
        _check_leaf_dtypes("scale_by_soap", leaves, "updates")
        plan = _plan_for(leaves, block_size, one_dim, num_shards, max_precondition_dim, merge_small_dims)
        fdt = _factor_dtype(leaves)
        if nonfinite == "raise":
            bad = ~_all_finite(leaves)
            leaves = [eqx.error_if(g, bad, "scale_by_soap: non-finite gradient (NaN/inf entries)") for g in leaves]
        count = optax.safe_increment(state.count)
        first = count == 1
        t = jnp.maximum(count - 1, 1)  # Adam's step (the first call makes no step)
        mu_l, nu_l = treedef.flatten_up_to(state.mu), treedef.flatten_up_to(state.nu)

        # gradient in the rotated basis (Adam-routed leaves: as is)
        g_rot = unblockify(plan, _rotate(plan, state.bases, blockify(plan, leaves, fdt), back=False), leaves)
        g_rot = [g.astype(fdt) for g in g_rot]
        mu_new = [b1 * m.astype(fdt) + (1.0 - b1) * g for m, g in zip(mu_l, g_rot)]
        nu_new = [b2 * v.astype(fdt) + (1.0 - b2) * g * g for v, g in zip(nu_l, g_rot)]
        tf = t.astype(fdt)
        step_scale = jnp.sqrt(1.0 - jnp.asarray(b2, fdt) ** tf) / (1.0 - jnp.asarray(b1, fdt) ** tf)
        d_rot = [m / (jnp.sqrt(v) + eps) for m, v in zip(mu_new, nu_new)]
        d = unblockify(plan, _rotate(plan, state.bases, blockify(plan, d_rot, fdt), back=True), d_rot)
        out = [jnp.where(first, 0.0, step_scale * x).astype(g.dtype) for x, g in zip(d, leaves)]
        mu_new = [jnp.where(first, m0.astype(fdt), m) for m0, m in zip(mu_l, mu_new)]
        nu_new = [jnp.where(first, v0.astype(fdt), v) for v0, v in zip(nu_l, nu_new)]

        factors = _update_factors(plan, leaves, state.factors, beta, fdt, _constrain)
        n_failed = jnp.zeros([], jnp.int32)
        bases = state.bases
        if plan.stacks:
            refresh = (~first) & (t % precondition_frequency == 0)

            def do_refresh(factors, bases, mu_new, nu_new):
                new_bases, perms, n_failed = _refresh(plan, factors, bases)
                m_orig = _rotate(plan, bases, blockify(plan, mu_new, fdt), back=True)
                m_rot = unblockify(plan, _rotate(plan, new_bases, m_orig, back=False), mu_new)
                v_rot = unblockify(plan, _permute_blocks(plan, perms, blockify(plan, nu_new, fdt)), nu_new)
                return new_bases, m_rot, v_rot, n_failed

            def keep(factors, bases, mu_new, nu_new):
                return bases, mu_new, nu_new, jnp.zeros([], jnp.int32)

            bases, mu_new, nu_new, n_failed = lax.cond(refresh, do_refresh, keep, factors, bases, mu_new, nu_new)
            bases = lax.cond(first, lambda f, b: _initial_bases(f), lambda f, b: b, factors, bases)

        mu = jax.tree.unflatten(treedef, [m.astype(x.dtype) for m, x in zip(mu_new, mu_l)])
        nu = jax.tree.unflatten(treedef, [v.astype(x.dtype) for v, x in zip(nu_new, nu_l)])
        new_state = SoapState(count, mu, nu, factors, tuple(bases), state.basis_failures + n_failed)
        out = jax.tree.unflatten(treedef, out)
        if nonfinite != "ignore":
            finite = _all_finite(leaves) & _all_finite(jax.tree.leaves((factors, nu, out)))
            out, new_state = _guard_nonfinite(out, new_state, state, finite, nonfinite, "scale_by_soap")
        return out, new_state

    return optax.GradientTransformation(init_fn, update_fn)


class _DecayState(NamedTuple):
    count: Int[Array, ""]


def _step_then_decay(learning_rate, weight_decay, mask) -> optax.GradientTransformation:
    r"""``-\eta d`` then the reference's decoupled decay of the stepped weights: ``-\eta\lambda (W - \eta d)``."""

    def init_fn(params):
        del params
        return _DecayState(jnp.zeros([], jnp.int32))

    def update_fn(updates, state, params=None):
        if params is None:
            raise ValueError("soap: the update needs params (weight decay): call update(grads, state, params)")
        lr = learning_rate(state.count) if callable(learning_rate) else learning_rate
        stepped = jax.tree.map(lambda d: -lr * d, updates)
        m = mask(params) if callable(mask) else mask
        m = jax.tree.map(lambda _: True, params) if m is None else m
        out = jax.tree.map(
            lambda s, p, keep: (s - lr * weight_decay * (p + s)).astype(s.dtype) if keep else s, stepped, params, m)
        return out, _DecayState(optax.safe_increment(state.count))

    return optax.GradientTransformation(init_fn, update_fn)


@_check_static_args
def soap(
    learning_rate: optax.ScalarOrSchedule,
    block_size: int | None = None,
    b1: float | Array = 0.95,
    b2: float | Array = 0.95,
    shampoo_beta: float | Array | None = None,
    eps: float | Array = 1e-8,
    weight_decay: float | Array = 0.01,
    weight_decay_mask: Any = None,
    *,
    precondition_frequency: int = 10,
    eigenbasis: str = "qr",
    one_dim: str = "adam",
    max_precondition_dim: int | None = 4096,
    merge_small_dims: bool = True,
    nonfinite: str = "skip",
    mesh: jax.sharding.Mesh | None = None,
    mesh_axis: str | None = None,
) -> optax.GradientTransformation:
    r"""SOAP optimizer: `scale_by_soap`, the step, then the reference's decoupled weight decay.

    $$
    W \leftarrow W - \eta_t U_t, \qquad W \leftarrow W - \eta_t \lambda W
    $$

    in that order (the decay acts on the stepped weights, as in the SOAP reference implementation), with
    $U_t$ the `scale_by_soap` direction and $\lambda$ = ``weight_decay`` (default 0.01, the
    reference's) on every leaf unless ``weight_decay_mask`` says otherwise.

    With ``optax.inject_hyperparams``, pass ``static_args=SOAP_STATIC_ARGS``; ``learning_rate``, ``b1``,
    ``b2``, ``shampoo_beta``, ``eps`` and ``weight_decay`` can then be injected or scheduled.

    Args:
      learning_rate: a float or an optax schedule.
      block_size: as in `scale_by_soap`.
      b1: as in `scale_by_soap`.
      b2: as in `scale_by_soap`.
      shampoo_beta: as in `scale_by_soap`.
      eps: as in `scale_by_soap`.
      weight_decay: $\lambda \ge 0$.
      weight_decay_mask: pytree or callable mask of the leaves to decay (default: all).
      precondition_frequency: as in `scale_by_soap`.
      eigenbasis: as in `scale_by_soap`.
      one_dim: as in `scale_by_soap`.
      max_precondition_dim: as in `scale_by_soap`.
      merge_small_dims: as in `scale_by_soap`.
      nonfinite: as in `scale_by_soap`.
      mesh: as in `scale_by_soap`.
      mesh_axis: as in `scale_by_soap`.

    Returns:
      An ``optax.GradientTransformation``; its ``update`` needs ``params``.

    Raises:
      TypeError: ``learning_rate`` (or another hyperparameter) that is not a number, array or schedule.
      ValueError: a negative or NaN ``learning_rate`` or ``weight_decay``, or as `scale_by_soap`.

    References:
      Vyas et al., SOAP: Improving and Stabilizing Shampoo using Adam, arXiv:2409.11321.

    Examples:
      >>> import jax, jax.numpy as jnp, optax
      >>> from icmlx.optim import soap
      >>> params = jnp.ones((8, 8))
      >>> opt = soap(1e-1, block_size=4, weight_decay=0.0)
      >>> state = opt.init(params)
      >>> loss = lambda w: jnp.sum((w - 2.0) ** 2)
      >>> update = jax.jit(opt.update)
      >>> for _ in range(3):
      ...     updates, state = update(jax.grad(loss)(params), state, params)
      ...     params = optax.apply_updates(params, updates)
      >>> print(round(float(params[0, 0]), 3))  # a rank-one gradient: one rotated coordinate per block moves
      1.051
    """
    _check_numeric("learning_rate", learning_rate, schedule=True)
    _check_numeric("weight_decay", weight_decay)
    if not callable(learning_rate):
        _check_nonnegative("learning_rate", learning_rate)
    _check_nonnegative("weight_decay", weight_decay)
    return optax.chain(
        scale_by_soap(block_size, b1, b2, shampoo_beta, eps, precondition_frequency=precondition_frequency,
                      eigenbasis=eigenbasis, one_dim=one_dim, max_precondition_dim=max_precondition_dim,
                      merge_small_dims=merge_small_dims, nonfinite=nonfinite, mesh=mesh, mesh_axis=mesh_axis),
        _step_then_decay(learning_rate, weight_decay, weight_decay_mask),
    )
