"""DASH: batched block Shampoo with fast inverse roots, as optax transformations."""

from typing import Any, Literal, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax
from jaxtyping import Array, Int

from ._blocking import ADAM, BlockPlan, blockify, make_block_plan, unblockify
from ._dash_settings import (
    _check_nonnegative,
    _check_numeric,
    _check_settings,
    _concrete,
    _is_number,
    _override_roots,
    _statistics_dtype,
    static_args_checked,
)
from ._grafting import moments_and_graft
from ._inverse_root import _inverse_root_impl
from ._leaf_utils import (
    _all_finite,
    _check_leaf_dtypes,
    _factor_dtype,
    _guard_nonfinite,
    _host_zeros_like,
    _on_host_ok,
)
from ._root_methods import DEFAULT_INVERSE_ROOT, AbstractInverseRoot, as_inverse_root
from ._warn import warn_user

__all__ = ["DashState", "scale_by_dash", "dash", "DASH_STATIC_ARGS"]

#: Arguments of `dash` that must stay Python values under ``optax.inject_hyperparams``.
DASH_STATIC_ARGS = (
    "block_size", "nesterov", "graft_bias_correction", "precondition_frequency", "start_preconditioning_step",
    "root_epsilon", "root_chunk_size", "max_precondition_dim", "merge_small_dims", "statistics_dtype",
    "inverse_exponent_override",
)



class DashState(NamedTuple):
    """State of `scale_by_dash` (a pytree of arrays only).

    Attributes:
      count: number of applied steps, int32 scalar.
      mu: EMA of the gradient $\\tilde G$ (parameter-shaped).
      nu: grafting second-moment accumulator (parameter-shaped; EMA for adam/rmsprop, sum for adagrad).
      momentum: heavy-ball buffer (parameter-shaped), or ``()`` when ``momentum == 0``.
      factors: Kronecker factor EMAs, one ``(N_z, z, z)`` stack per (block side, root).
      roots: their inverse roots, same shapes, refreshed every ``precondition_frequency`` steps.
      root_failures: int32 scalar, the number of block refreshes rejected so far (summed over blocks and
        stacks): a block whose refreshed inverse root had a non-finite entry, or whose solver reported
        divergence (coupled Newton), kept its previous root. 0 in a healthy run.
      graft_mu: with ``grafting="adam_normalized"``, the EMA of the normalized gradient (parameter-shaped);
        else ``()``.
    """

    count: Int[Array, ""]
    mu: Any
    nu: Any
    momentum: Any
    factors: tuple[Array, ...]
    roots: tuple[Array, ...]
    root_failures: Int[Array, ""]
    graft_mu: Any = ()


# --------------------------------------------------------------------------------------------- configuration


#: Block side chosen by ``block_size=None``: small blocks on CPU, the paper's 1024 on GPU/TPU.
_DEFAULT_BLOCK = {"cpu": 128}
_ACCELERATOR_BLOCK = 1024
#: Factor side above which a CPU refresh is slow enough to warn about (once per side and process).
_CPU_SLOW_FACTOR = 512
_warned_sides: set[int] = set()


def _default_block_size() -> int:
    return _DEFAULT_BLOCK.get(jax.default_backend(), _ACCELERATOR_BLOCK)


def _warn_large_cpu_blocks(plan: BlockPlan, fn_name: str, block_size: int) -> None:
    """Warn once when an explicit ``block_size`` gives factors past ``_CPU_SLOW_FACTOR`` on the CPU backend."""
    if jax.default_backend() != "cpu":
        return
    sides = sorted({z for z, _, _, _ in plan.stacks if z > _CPU_SLOW_FACTOR} - _warned_sides)
    if not sides:
        return
    _warned_sides.update(sides)
    warn_user(
        f"{fn_name}: block_size={block_size} gives {sides[-1]}x{sides[-1]} Kronecker factors, whose inverse-root "
        f"refresh is slow on the CPU backend (its cost grows with the block side).\n"
        f"Leave block_size=None (chooses {_DEFAULT_BLOCK['cpu']} on CPU) or pass block_size=128 or 256."
    )


_check_static_args = static_args_checked(DASH_STATIC_ARGS, "DASH_STATIC_ARGS")


# ----------------------------------------------------------------------------------------------- update steps


def _plan_for(leaves, block_size, one_dim, num_shards, max_dim, merge, roots=(4, 4, 2)) -> BlockPlan:
    shapes = tuple(tuple(int(d) for d in x.shape) for x in leaves)
    return make_block_plan(shapes, block_size, one_dim, num_shards, max_dim, merge, roots)


def _update_factors(plan: BlockPlan, leaves, factors, factor_decay, fdt, constrain) -> tuple[Array, ...]:
    """One EMA step of every Kronecker-factor stack: ``G G^T`` (left) or ``G^T G`` (right) per block.

    The EMA is computed in ``fdt`` and stored back in the stack's own dtype (the ``statistics_dtype``).
    """
    g_blocks = blockify(plan, leaves, fdt)
    new_factors = []
    for si, (z, _, n_real, n_pad) in enumerate(plan.stacks):
        parts = []
        for gi, side in plan.contributions[si]:
            gb = g_blocks[gi]
            if side == "L":
                parts.append(jnp.matmul(gb, jnp.swapaxes(gb, -1, -2)))
            else:
                parts.append(jnp.matmul(jnp.swapaxes(gb, -1, -2), gb))
        if n_pad > n_real:
            parts.append(jnp.zeros((n_pad - n_real, z, z), fdt))
        outer = parts[0] if len(parts) == 1 else jnp.concatenate(parts, axis=0)
        old = factors[si].astype(fdt)
        if _is_number(factor_decay) and factor_decay >= 1.0:
            f = old + outer
        else:
            f = factor_decay * old + (1.0 - factor_decay) * outer
        new_factors.append(constrain(f.astype(factors[si].dtype)))
    return tuple(new_factors)


def _shampoo_direction(plan: BlockPlan, roots, mu_leaves, graft_leaves, grafting: str, fdt) -> list[Array]:
    """``Lbar G~ Rbar`` per block, rescaled to the grafting direction's Frobenius norm, reassembled as leaves."""
    mt_blocks = blockify(plan, mu_leaves, fdt)
    pg_blocks = blockify(plan, graft_leaves, fdt)
    p_blocks = []
    for gi, grp in enumerate(plan.groups):
        u = mt_blocks[gi]
        if grp.left_stack >= 0:
            lbar = roots[grp.left_stack][grp.left_offset : grp.left_offset + grp.count]
            u = jnp.matmul(lbar, u)
        if grp.right_stack >= 0:
            rbar = roots[grp.right_stack][grp.right_offset : grp.right_offset + grp.count]
            u = jnp.matmul(u, rbar)
        if grafting != "none":
            pn = jnp.sqrt(jnp.sum(pg_blocks[gi] ** 2, axis=(-2, -1), keepdims=True))
            un = jnp.sqrt(jnp.sum(u**2, axis=(-2, -1), keepdims=True))
            # exact ratio at any scale (an additive guard would shrink steps whose ||u|| is tiny); 0 for u = 0
            pos = un > 0
            u = jnp.where(pos, (u / jnp.where(pos, un, 1.0)) * pn, 0.0)
        p_blocks.append(u)
    return unblockify(plan, p_blocks, graft_leaves)


def _with_momentum(direction, buffer, momentum, nesterov: bool, use_momentum: bool):
    """Heavy-ball (or Nesterov) momentum on the direction: returns ``(update, new buffer)``."""
    if not use_momentum:
        return direction, buffer
    mom = jax.tree.map(lambda m, p: momentum * m + p, buffer, direction)
    if nesterov:
        return jax.tree.map(lambda p, m: p + momentum * m, direction, mom), mom
    return mom, mom


# ------------------------------------------------------------------------------------------------- transforms


@_check_static_args
def scale_by_dash(
    block_size: int | None = None,
    b1: float | Array = 0.0,
    b2: float | Array = 0.99,
    factor_decay: float | Array = 0.95,
    eps: float | Array = 1e-8,
    *,
    grafting: str = "rmsprop_normalized",
    graft_bias_correction: bool = False,
    momentum: float | Array = 0.9,
    nesterov: bool = True,
    precondition_frequency: int = 10,
    start_preconditioning_step: int = 1,
    inverse_root: AbstractInverseRoot | str = DEFAULT_INVERSE_ROOT,
    root_epsilon: float = 1e-10,
    root_chunk_size: int | Literal["auto"] | None = "auto",
    one_dim: str = "adam",
    max_precondition_dim: int | None = 4096,
    merge_small_dims: bool = True,
    statistics_dtype: str | type | np.dtype | None = None,
    nonfinite: str = "skip",
    mesh: jax.sharding.Mesh | None = None,
    mesh_axis: str | None = None,
    inverse_exponent_override: dict | None = None,
) -> optax.GradientTransformation:
    r"""DASH: block Shampoo with all same-shaped blocks stacked and inverted in one batched call.

    For every block $G_i$ (a ``block_size`` tile of a matrix-shaped gradient), at step $t$:

    $$
    \begin{aligned}
    L_i &\leftarrow \beta_{LR} L_i + (1-\beta_{LR}) G_i G_i^\top, \quad
    R_i \leftarrow \beta_{LR} R_i + (1-\beta_{LR}) G_i^\top G_i \\
    \bar L_i, \bar R_i &= L_i^{-1/4}, R_i^{-1/4} \quad \text{(refreshed when } t = t_0
    \text{ or } t \bmod f = 0,\ t \ge t_0) \\
    \tilde G &\leftarrow b_1 \tilde G + (1-b_1) G, \quad P^{graft} = \text{grafting direction} \\
    P_i &= \bar L_i \tilde G_i \bar R_i \cdot
    \frac{\|P^{graft}_i\|_F}{\|\bar L_i \tilde G_i \bar R_i\|_F} \quad (0 \text{ when } \bar L_i \tilde G_i \bar R_i
    = 0)
    \end{aligned}
    $$

    Before $t_0$ (``start_preconditioning_step``) $P = P^{graft}$. With ``grafting="adam"``,
    $P^{graft} = \hat{\tilde G} / (\sqrt{\hat A} + \epsilon)$ with $A$ the ``b2``-EMA of $G^2$
    (with ``graft_bias_correction=True``, exactly ``optax.adam(b1, b2, eps)``'s direction);
    ``"adam_normalized"`` is Adam run on the normalized gradient $S = G / (\|G\|_F + 10^{-25})$ (both moments of $S$,
    bias-corrected; the Shampoo numerator $\tilde G$ stays the EMA of $G$); ``"rmsprop"`` uses
    $G/(\sqrt{\hat A}+\epsilon)$, ``"adagrad"`` $G/(\sqrt{\sum G^2}+\epsilon)$, ``"sgd"`` $G$, ``"none"`` no rescaling.
    ``"rmsprop_normalized"`` and ``"adagrad_normalized"`` (Distributed Shampoo's ``RMSPROP_NORMALIZED``/
    ``ADAGRAD_NORMALIZED``) are rmsprop and adagrad with $G$ replaced, in the accumulator and the numerator,
    by $S = G / (\|G\|_F + 10^{-25})$, the leaf's gradient over its own Frobenius norm:
    $A \leftarrow b_2 A + (1-b_2) S^2$, $P^{graft} = S/(\sqrt{\hat A}+\epsilon)$,
    resp. $A \leftarrow A + S^2$, $P^{graft} = S/(\sqrt{A}+\epsilon)$ (on preconditioned leaves;
    the Adam-routed leaves keep Adam's raw-gradient EMA whatever the grafting, so their update is Adam's).
    ``graft_bias_correction=False`` drops the second-moment bias correction of the EMA graftings
    (``"adam"``, ``"adam_normalized"``, ``"rmsprop[_normalized]"``): $\hat A = A$ instead of
    $A / (1 - b_2^t)$, as Distributed Shampoo's RMSprop grafting, so the grafted step is
    $1/\sqrt{1-b_2^t}$ times larger (10x at $t = 1$, 1.6x at $t = 50$, 1.07x at $t = 200$ for the default
    $b_2 = 0.99$): an implicit decay of the step over the first $\sim 1/(1-b_2)$ steps (a warmup absorbs it).
    Optional momentum: $M \leftarrow \mu M + P$, then
    $P + \mu M$ (Nesterov) or $M$. The factor EMAs have no bias correction (the grafting rescale
    makes the scale of $\bar L, \bar R$ irrelevant).

    Layout: leaves are squeezed (unit dims dropped); ≥3-D leaves are viewed as matrices by the shape rule
    below; a leaf whose (viewed) side
    exceeds ``max_precondition_dim`` (a vocabulary embedding, a wide conv view), 1-D leaves and scalars go to
    Adam (``one_dim="adam"``) or, for vectors with ``one_dim="shampoo"``, to stacked ``(B, 1)`` blocks with a
    left factor only and root 2. Ragged edges are kept as smaller blocks grouped by shape. The block partition
    is static (from shapes), every factor stack is one ``(N, z, z)`` array and each refresh is one batched
    inverse-root solve per stack with the ``inverse_root`` solver (as `matrix_inverse_root`,
    without its residual).

    Shape rule for ≥3-D leaves (``merge_small_dims=True``, default; as Distributed Shampoo's
    ``merge_small_dims``, then a 2-D view because DASH's factors are per matrix side): (1) drop unit dims;
    (2) merge adjacent dims left to right while their product stays ``<= block_size``; (3) if more than two
    dims remain, split them into ``(prod(leading), prod(trailing))`` at the point where the longer side is
    shortest, ties to the later point; if (2) left a single dim (the leaf has at most ``block_size`` entries),
    make that split over the dims of (1). A conv kernel ``(kh, kw, cin, cout) = (3, 3, 64, 64)`` with
    ``block_size=128`` merges to ``(9, 64, 64)`` and is preconditioned as the ``(576, 64)`` matrix
    ``(kh*kw*cin, cout)``; ``(3, 3, 3, 64)`` merges to ``(27, 64)``; an attention kernel ``(256, 4, 64)``
    becomes ``(256, 256)``. ``merge_small_dims=False`` keeps the DASH paper's ``(d0, prod(rest))`` view
    (``(3, 12288)`` for that conv, whose 12288 side exceeds ``max_precondition_dim`` and sends it to Adam).

    Statistics dtype: ``statistics_dtype="bfloat16"`` stores the factor stacks $L_i, R_i$ in bfloat16
    (half their bytes); each EMA step and each inverse root is computed in float32 from the upcast stack and
    the roots stay float32. bfloat16 keeps 8 significant bits, so a stored factor is resolved down to
    eigenvalues of about 1e-2 of its largest: on a small problem the update stays within 1e-2 (relative) of
    the float32-statistics one once the factors average a few steps (tested from step 2 on), while a nearly
    singular factor (one square gradient block's $G G^\top$ at step 1) can get an O(1) different
    root. Not for ``factor_decay=1`` (warns: a bfloat16 sum stops growing).

    Non-finite gradients: ``nonfinite="skip"`` (default) leaves the whole state unchanged and returns a zero
    update when any gradient entry is NaN/inf, or when a finite but huge gradient (entries past about
    $\sqrt{\text{float max}}$, ~1e19 in float32) would overflow the statistics $G G^\top$,
    $G^2$ or the update (the preconditioners are never poisoned, and later steps equal a run without
    that step); ``"raise"`` raises through ``eqx.error_if`` in both cases; ``"ignore"`` does nothing.

    Sharding: with ``mesh`` and ``mesh_axis``, every factor/root stack is padded to a multiple of the axis
    size and constrained to ``NamedSharding(mesh, P(mesh_axis))``, and each refresh runs inside
    ``jax.shard_map`` over that axis, so each device computes the inverse roots of its own share of blocks
    (chunked by ``root_chunk_size`` within that share); the result equals the single-device one.

    Defaults, measured: ``benchmarks/optim_suite.py --quick --seeds 3 --variants``
    (``benchmarks/results/optim_suite.json``) runs every optimizer at its best peak learning rate of one grid (linear
    decay to 0, mean over 3 seeds) on matrix regressions $\min_W \|AWB - C\|^2$ (Hessian condition $\kappa^2$,
    $\kappa \in \{10, 10^2, 10^3\}$, ragged shapes 64x48 at block 32 and 96x64 at block 64), a 64-64-10 MLP and a
    small CNN on scikit-learn's digits (full batch), and a character-level LM. Against JAX Distributed Shampoo at its
    recommended settings ($\beta_2 = 0.999$, roots every 10 steps, RMSprop-normalized grafting), DASH at its defaults
    ends no worse on any row: 9.6e-10 / 6.4e-10 vs 1.1e-9 / 1.3e-9 at $\kappa = 10$, 4.8e-5 / 3.7e-7 vs 1.8e-3 /
    1.7e-4 at $\kappa = 10^2$, 1.7e-2 / 2.2e-3 vs 7.8e-2 / 3.5e-2 at $\kappa = 10^3$, a float32 zero vs 3.0e-6 on the
    MLP, a float32 zero on the CNN (as Shampoo), 2.069 vs 2.133 on the LM's validation loss. Each default, against
    the same run with that one setting changed: ``momentum=0.9`` on the grafted direction with ``b1=0`` (the gradient
    itself as the Shampoo numerator) instead of the gradient EMA ``b1=0.9`` without momentum: 43-99x lower at
    $\kappa = 10$ (4.1e-8 / 6.3e-8 without), 2.5e-5 -> 0 on the MLP, 2.09 -> 2.07 on the LM, mixed at $\kappa = 10^2$,
    1.6-3.0x higher at $\kappa = 10^3$ (still below Shampoo). ``grafting="rmsprop_normalized"`` instead of ``"adam"``:
    Adam grafting reaches 2e-13 at $\kappa = 10$ but 4.2e-3 on the MLP and is 63-1,900x higher at $\kappa = 10^2$: a
    normalized grafting's step norm is set by the schedule alone, Adam grafting's shrinks with the gradient, which
    stalls the networks. ``graft_bias_correction=False``: with the correction $\kappa = 10$ ends at 7.1e-9 / 5.2e-9,
    above Shampoo (the uncorrected step's early excess, $1/\sqrt{1-b_2^t}$, adds a decay that the normalized
    grafting's constant step norm needs there), but the LM at 1.98. ``b2=0.99`` instead of Distributed Shampoo's
    0.999: 0.999 ends the 64x48 $\kappa = 10$ row at 1.2e-9 (above Shampoo) and the LM at 2.15; 0.95 ends both
    $\kappa = 10$ rows at 1.3e-9 / 2.1e-9. ``factor_decay=0.95`` instead of 0.999: 0.999 ends the 64x48 $\kappa = 10$
    row at 1.5e-9. The previous defaults (``b2=0.999``, bias-corrected) end the LM at 1.982 but the 96x64
    $\kappa = 10$ row at 4.6e-9, 3.6x Shampoo: these defaults trade 4% of the LM's loss for no row behind Shampoo.
    Against Adam, at $\kappa = 10$ the defaults end 7x / 4.7x above its 1.4e-10 (the normalized grafting's plateau:
    ``benchmarks/optim_dash_kappa10.py``), 8-32,000x below it at $\kappa \ge 10^2$, level on the LM (2.069 vs
    2.082). Best peak learning rates on the networks: 1e-3 to 3e-3, 10-100x below Adam's.

    Failed refreshes: when a block's refreshed inverse root has a non-finite entry (e.g. its statistic
    overflowed, or came from non-finite gradients under ``nonfinite="ignore"``) or its solver reports
    divergence (`CoupledNewton`'s ``diverged``; reaching ``max_steps`` is not a failure),
    that block keeps its previous inverse root, as Distributed Shampoo does, and
    ``DashState.root_failures`` (an int32 total over blocks and steps) is incremented by one per such block.
    Other blocks of the same stack are not affected (every solver works per matrix).

    Args:
      block_size: block side ``B`` (static), or ``None`` (default) to choose by backend when the
        transformation is built (``jax.default_backend()``): 128 on CPU, 1024 (the paper's) on GPU/TPU. A
        refresh inverts every ``B x B`` factor, so for a fixed parameter count its cost grows about linearly
        with ``B``; on a GPU the batched solve of large blocks fills the device, on a CPU it is a long serial
        computation, so small blocks keep a CPU refresh short (smaller blocks are a coarser, block-diagonal
        preconditioner). An explicit ``block_size`` whose factors exceed 512 on the CPU backend warns once.
      b1: gradient EMA $\beta_G$ (0, the default, disables it: the momentum below acts on the grafted
        direction instead).
      b2: grafting second-moment EMA $\beta_{graft}$ (and Adam's $\beta_2$ on the leaves DASH does not precondition).
      factor_decay: Kronecker-factor EMA $\beta_{LR}$; 1.0 gives a plain sum (AdaGrad-style).
      eps: grafting epsilon.
      grafting: ``"rmsprop_normalized"`` (default), ``"adam"``, ``"adam_normalized"``, ``"adagrad"``,
        ``"rmsprop"``, ``"adagrad_normalized"``, ``"sgd"`` or ``"none"``.
      graft_bias_correction: divide the grafting's second moment by $1 - b_2^t$ (``True``) or not (``False``,
        default, as Distributed Shampoo's RMSprop grafting). Static.
      momentum: heavy-ball $\mu$ on the grafted direction (0 disables the buffer). With the default 0.9 the
        step at a steady direction is about $1/(1-\mu) = 10$ times the grafted one, so DASH's best learning
        rates sit 10-100x below Adam's (``benchmarks/results/optim_suite.json``: 1e-3 to 3e-3 on the networks,
        where Adam's are 1e-2 to 1e-1).
      nesterov: Nesterov form of the momentum.
      precondition_frequency: refresh period $f$ of the inverse roots (static).
      start_preconditioning_step: first preconditioned step $t_0 \ge 1$ (static).
      inverse_root: the solver, an `AbstractInverseRoot` (default
        ``NewtonDB(num_steps=10)``; e.g. ``Chebyshev(degree=40)``, ``CoupledNewton(max_steps=100)``, ``Eigh()``)
        carrying its own settings (steps, scaling, relative ridge, matmul dtype), or a shorthand
        ``"newton_db"``, ``"coupled_newton"``, ``"chebyshev"``, ``"eigh"`` for the default object.
      root_epsilon: absolute ridge of the inverse root (every solver).
      root_chunk_size: ``"auto"`` (default), ``None`` or a positive integer ``k``. ``None`` solves each
        factor stack in one batched call (what fills a GPU); ``k`` solves it ``k`` blocks at a time inside
        one compiled ``lax.map`` loop (same roots up to float rounding); ``"auto"`` picks, at trace time,
        ``k = max(1, 65536 // (z * z * itemsize))`` for a stack of ``z x z`` factors on the CPU backend
        (``k = 1`` for ``z >= 128`` in float32) and ``None`` on GPU/TPU and for ``Eigh`` (rule:
        ``chunk_size`` of `matrix_inverse_root`). On CPU the chunked refresh is the faster
        one because a chunk's working set stays in cache (measurements: ``benchmarks/results/dash_step*.json``).
        With ``mesh`` the chunking applies to each device's share.
      one_dim: ``"adam"`` or ``"shampoo"`` for 1-D leaves.
      max_precondition_dim: leaves with a side longer than this get the diagonal (Adam/grafting) update instead
        of Kronecker factors, as Distributed Shampoo's ``skip_preconditioning_dim_size_gt`` (same default,
        4096): their factors would cost ``ceil(side / B)`` blocks of ``B x B`` each for little gain. ``None``
        preconditions every matrix.
      merge_small_dims: view ≥3-D leaves by the shape rule above (``True``, default) or as
        ``(d0, prod(rest))`` (``False``). Static.
      statistics_dtype: ``None`` (default: the factor dtype, float32, or float64 for float64 parameters),
        ``"float32"`` or ``"bfloat16"`` (also as ``jnp.bfloat16``): the storage dtype of the factor stacks.
        Static.
      nonfinite: ``"skip"``, ``"raise"`` or ``"ignore"``.
      mesh: optional ``jax.sharding.Mesh`` to shard the stacks over.
      mesh_axis: the mesh axis name (required with ``mesh``).
      inverse_exponent_override: per-dimension exponents, as Distributed Shampoo's: ``{order: e}`` or
        ``{order: {dim: e}}`` with ``order`` 2 for matrix blocks (dim 0 the left factor $L$, dim 1 the
        right factor $R$) and 1 for the vector blocks of ``one_dim="shampoo"``; that side is
        preconditioned by $F^{-e}$ instead of the default $F^{-1/4}$ (matrices) or
        $F^{-1/2}$ (vectors). ``1/e`` must be a positive integer the solver supports (``NewtonDB``: 2 or
        4), or ``e = 0`` for no factor on that side (e.g. ``{2: {1: 0}}`` preconditions rows only, and
        ``{2: {0: 0.5, 1: 0}}`` is one-sided Shampoo $L^{-1/2}G$). Static.

    Returns:
      An ``optax.GradientTransformation`` whose state is a `DashState`.

    Raises:
      ValueError: invalid hyperparameters (at construction), naming the argument: out-of-range or NaN
        ``b1``/``b2``/``factor_decay``/``momentum``/``eps``, a negative ``root_epsilon``, an unknown
        ``grafting`` or ``statistics_dtype``, a non-bool ``merge_small_dims``, a structural
        argument given as an array (use ``optax.inject_hyperparams(..., static_args=DASH_STATIC_ARGS)``).

      TypeError: a non-bool ``graft_bias_correction``.

    Warns:
      UserWarning: once per factor side, an explicit ``block_size`` giving factors larger than 512 on the
        CPU backend (slow refreshes); ``statistics_dtype="bfloat16"`` with ``factor_decay=1``.

    References:
      Modoranu et al., DASH, arXiv:2602.02016. Gupta et al., Shampoo, arXiv:1802.09568. Shi et al.,
      Distributed Shampoo, arXiv:2309.06497.

    Examples:
      >>> import jax, jax.numpy as jnp, optax
      >>> from icmlx.optim import NewtonDB, scale_by_dash
      >>> params = {"w": jnp.ones((6, 4)), "b": jnp.zeros(4)}
      >>> tx = optax.chain(scale_by_dash(block_size=4, inverse_root=NewtonDB(num_steps=12)), optax.scale(-0.1))
      >>> state = tx.init(params)
      >>> grads = jax.tree.map(lambda p: 0.5 * jnp.ones_like(p), params)
      >>> updates, state = jax.jit(tx.update)(grads, state, params)
      >>> print(updates["w"].shape, int(state[0].count))
      (6, 4) 1
    """
    explicit_block = block_size is not None
    if block_size is None:
        block_size = _default_block_size()
    _check_settings(block_size, b1, b2, factor_decay, eps, momentum, grafting, one_dim, nonfinite,
                    precondition_frequency, start_preconditioning_step, root_epsilon, root_chunk_size, mesh,
                    mesh_axis, max_precondition_dim, merge_small_dims)
    if not isinstance(graft_bias_correction, (bool, np.bool_)):
        raise TypeError(f"graft_bias_correction must be True or False, got {graft_bias_correction=}")
    sdt_setting = _statistics_dtype(statistics_dtype, factor_decay, "scale_by_dash")
    solver = as_inverse_root(inverse_root, "inverse_root")
    plan_roots = _override_roots(inverse_exponent_override, solver)
    num_shards = 1 if mesh is None else int(mesh.shape[mesh_axis])
    use_momentum = not (_is_number(momentum) and momentum == 0.0)
    use_mu = not (_is_number(b1) and b1 == 0.0)  # b1 = 0: the "EMA" is the gradient itself, not stored
    graft_moment = grafting == "adam_normalized"

    def _constrain(x: Array) -> Array:
        if mesh is None:
            return x
        spec = jax.sharding.PartitionSpec(mesh_axis, *([None] * (x.ndim - 1)))
        return jax.lax.with_sharding_constraint(x, jax.sharding.NamedSharding(mesh, spec))

    def _solve(f: Array, root: int) -> tuple[Array, Array]:
        def local(fl):
            return _inverse_root_impl(fl, root, solver, float(root_epsilon), root_chunk_size)

        if mesh is None:
            return local(f)
        # Each device solves its own share of the stack (and chunks that share when chunking is on).
        spec = jax.sharding.PartitionSpec(mesh_axis)
        return jax.shard_map(local, mesh=mesh, in_specs=spec, out_specs=(spec, spec), check_vma=False)(f)

    def _roots(factors: tuple[Array, ...], old: tuple[Array, ...], plan: BlockPlan):
        out, n_failed = [], jnp.zeros([], jnp.int32)
        for f, r_old, (_, root, _, _) in zip(factors, old, plan.stacks):
            r, failed = _solve(_constrain(f.astype(r_old.dtype)), root)  # roots from float32/64 statistics
            # Distributed-Shampoo policy: a block whose refresh failed keeps its previous inverse root.
            out.append(_constrain(jnp.where(failed[:, None, None], r_old, r)))
            n_failed = n_failed + jnp.sum(failed, dtype=jnp.int32)
        return tuple(out), n_failed

    def init_fn(params):
        leaves, _ = jax.tree.flatten(params)
        _check_leaf_dtypes("scale_by_dash", leaves, "params")
        plan = _plan_for(leaves, block_size, one_dim, num_shards, max_precondition_dim, merge_small_dims,
                         plan_roots)
        if explicit_block:
            _warn_large_cpu_blocks(plan, "scale_by_dash", block_size)
        fdt = _factor_dtype(leaves)
        sdt = fdt if sdt_setting is None else sdt_setting
        if mesh is None and all(_on_host_ok(x) for x in leaves):
            # Concrete parameters: the state is built in NumPy and transferred, so an eager init compiles no
            # programs (one per leaf shape and stack otherwise, each paid again in a fresh process).
            mu = jax.tree.map(_host_zeros_like, params) if use_mu else ()
            nu = jax.tree.map(_host_zeros_like, params)
            mom = jax.tree.map(_host_zeros_like, params) if use_momentum else ()
            factors = tuple(jax.device_put(np.zeros((npad, z, z), sdt)) for z, _, _, npad in plan.stacks)
            roots = tuple(jax.device_put(np.tile(np.eye(z, dtype=fdt), (npad, 1, 1)))
                          for z, _, _, npad in plan.stacks)
            zero = jax.device_put(np.zeros((), np.int32))
            gmu = jax.tree.map(_host_zeros_like, params) if graft_moment else ()
            return DashState(zero, mu, nu, mom, factors, roots, jax.device_put(np.zeros((), np.int32)), gmu)
        mu = jax.tree.map(jnp.zeros_like, params) if use_mu else ()
        nu = jax.tree.map(jnp.zeros_like, params)
        mom = jax.tree.map(jnp.zeros_like, params) if use_momentum else ()
        factors = tuple(_constrain(jnp.zeros((npad, z, z), sdt)) for z, _, _, npad in plan.stacks)
        roots = tuple(
            _constrain(jnp.broadcast_to(jnp.eye(z, dtype=fdt), (npad, z, z))) for z, _, _, npad in plan.stacks
        )
        gmu = jax.tree.map(jnp.zeros_like, params) if graft_moment else ()
        return DashState(jnp.zeros([], jnp.int32), mu, nu, mom, factors, roots, jnp.zeros([], jnp.int32), gmu)

    def update_fn(updates, state, params=None):
        del params
        leaves, treedef = jax.tree.flatten(updates)
        _check_leaf_dtypes("scale_by_dash", leaves, "updates")
        plan = _plan_for(leaves, block_size, one_dim, num_shards, max_precondition_dim, merge_small_dims,
                         plan_roots)
        fdt = _factor_dtype(leaves)
        if nonfinite == "raise":
            bad = ~_all_finite(leaves)
            leaves = [eqx.error_if(g, bad, "scale_by_dash: non-finite gradient (NaN/inf entries)") for g in leaves]
            updates = jax.tree.unflatten(treedef, leaves)
        count = optax.safe_increment(state.count)
        t = count  # 1-based step of this update
        t0 = start_preconditioning_step

        gmu_in = treedef.flatten_up_to(state.graft_mu) if graft_moment else None
        mu, nu, graft_leaves, adam_leaves, gmu = moments_and_graft(
            leaves, treedef.flatten_up_to(state.mu) if use_mu else leaves, treedef.flatten_up_to(state.nu), t, b1,
            b2, eps, grafting,
            fdt, [lp.kind != ADAM for lp in plan.leaves], gmu_in, graft_bias_correction)
        mu, nu = jax.tree.unflatten(treedef, mu), jax.tree.unflatten(treedef, nu)
        gmu = jax.tree.unflatten(treedef, [m.astype(g.dtype) for m, g in zip(gmu, leaves)]) if graft_moment else ()
        factors = _update_factors(plan, leaves, state.factors, factor_decay, fdt, _constrain)

        # Inverse roots, refreshed only on refresh steps (one batched solve per stack).
        refresh = (t >= t0) & ((t == t0) | (t % precondition_frequency == 0))
        if plan.stacks:
            roots, n_failed = lax.cond(
                refresh, lambda f, r: _roots(f, r, plan), lambda f, r: (r, jnp.zeros([], jnp.int32)),
                factors, state.roots,
            )
        else:
            roots, n_failed = state.roots, jnp.zeros([], jnp.int32)

        shampoo = _shampoo_direction(plan, roots, treedef.flatten_up_to(mu), graft_leaves, grafting, fdt)
        # Adam-routed leaves take Adam's direction; before t0 the others take the grafting direction.
        shampoo = [a if lp.kind == ADAM else s for a, s, lp in zip(adam_leaves, shampoo, plan.leaves)]
        pre = [a if lp.kind == ADAM else p for a, p, lp in zip(adam_leaves, graft_leaves, plan.leaves)]
        active = t >= t0
        direction = jax.tree.unflatten(treedef, [jnp.where(active, s, p) for s, p in zip(shampoo, pre)])
        out, mom = _with_momentum(direction, state.momentum, momentum, nesterov, use_momentum)

        out = jax.tree.map(lambda o, g: o.astype(g.dtype), out, updates)
        mu = jax.tree.map(lambda m, g: m.astype(g.dtype), mu, state.mu) if use_mu else ()
        nu = jax.tree.map(lambda m, g: m.astype(g.dtype), nu, state.nu)
        new_state = DashState(count, mu, nu, mom, factors, tuple(roots), state.root_failures + n_failed, gmu)
        if nonfinite != "ignore":
            finite = _all_finite(leaves) & _all_finite(
                jax.tree.leaves((factors, treedef.flatten_up_to(nu), treedef.flatten_up_to(out))))
            out, new_state = _guard_nonfinite(out, new_state, state, finite, nonfinite, "scale_by_dash")
        return out, new_state

    return optax.GradientTransformation(init_fn, update_fn)


@_check_static_args
def dash(
    learning_rate: optax.ScalarOrSchedule,
    block_size: int | None = None,
    b1: float | Array = 0.0,
    b2: float | Array = 0.99,
    factor_decay: float | Array = 0.95,
    eps: float | Array = 1e-8,
    weight_decay: float | Array = 0.0,
    weight_decay_mask: Any = None,
    *,
    grafting: str = "rmsprop_normalized",
    graft_bias_correction: bool = False,
    momentum: float | Array = 0.9,
    nesterov: bool = True,
    precondition_frequency: int = 10,
    start_preconditioning_step: int = 1,
    inverse_root: AbstractInverseRoot | str = DEFAULT_INVERSE_ROOT,
    root_epsilon: float = 1e-10,
    root_chunk_size: int | Literal["auto"] | None = "auto",
    one_dim: str = "adam",
    max_precondition_dim: int | None = 4096,
    merge_small_dims: bool = True,
    statistics_dtype: str | type | np.dtype | None = None,
    nonfinite: str = "skip",
    mesh: jax.sharding.Mesh | None = None,
    mesh_axis: str | None = None,
    inverse_exponent_override: dict | None = None,
) -> optax.GradientTransformation:
    r"""DASH optimizer: `scale_by_dash`, decoupled weight decay, then the learning rate.

    $$
    W \leftarrow W - \eta_t\,(P_t + \lambda W)
    $$

    where $P_t$ is the `scale_by_dash` direction and $\lambda$ = ``weight_decay`` is applied
    (by default) only to leaves with ``ndim >= 2`` (DASH decays matrices only).

    With ``optax.inject_hyperparams`` (which injects every numeric argument, defaults included), pass the
    structural integers as static: ``optax.inject_hyperparams(dash, static_args=DASH_STATIC_ARGS)``, where
    ``DASH_STATIC_ARGS`` is exported next to this function; ``learning_rate``, ``b1``, ``b2``,
    ``factor_decay``, ``eps``, ``weight_decay`` and ``momentum`` can then be injected or scheduled. The
    ``inverse_root`` solver object is neither a number nor callable, so it passes through unchanged.

    Args:
      learning_rate: a float or an optax schedule (e.g. from `icmlx.optim`).
      block_size: block side ``B``, or ``None`` (default) for 128 on CPU and 1024 on GPU/TPU (as in
        `scale_by_dash`, which explains the choice).
      b1: gradient EMA.
      b2: grafting second-moment EMA.
      factor_decay: Kronecker-factor EMA.
      eps: grafting epsilon.
      weight_decay: decoupled weight decay $\lambda$.
      weight_decay_mask: pytree/callable mask for the decay (default: ``ndim >= 2`` leaves).
      grafting: as in `scale_by_dash`.
      graft_bias_correction: as in `scale_by_dash`.
      momentum: as in `scale_by_dash`.
      nesterov: as in `scale_by_dash`.
      precondition_frequency: as in `scale_by_dash`.
      start_preconditioning_step: as in `scale_by_dash`.
      inverse_root: as in `scale_by_dash`.
      root_epsilon: as in `scale_by_dash`.
      root_chunk_size: as in `scale_by_dash`.
      one_dim: as in `scale_by_dash`.
      max_precondition_dim: as in `scale_by_dash`.
      merge_small_dims: as in `scale_by_dash`.
      statistics_dtype: as in `scale_by_dash`.
      nonfinite: as in `scale_by_dash`.
      mesh: as in `scale_by_dash`.
      mesh_axis: as in `scale_by_dash`.
      inverse_exponent_override: as in `scale_by_dash`.

    Returns:
      An ``optax.GradientTransformation``.

    Raises:
      ValueError: invalid hyperparameters, naming the argument: a negative or NaN ``learning_rate``,
        ``weight_decay`` or ``eps``, a negative ``root_epsilon``, or (under ``optax.inject_hyperparams``
        without ``static_args=DASH_STATIC_ARGS``) a structural argument that arrived as an array.

    References:
      Modoranu et al., DASH, arXiv:2602.02016.

    Examples:
      >>> import jax, jax.numpy as jnp, optax
      >>> from icmlx.optim import dash
      >>> params = jnp.ones((8, 8))
      >>> opt = dash(1e-2, block_size=4)
      >>> state = opt.init(params)
      >>> loss = lambda w: jnp.sum((w - 2.0) ** 2)
      >>> update = jax.jit(opt.update)
      >>> for _ in range(3):
      ...     updates, state = update(jax.grad(loss)(params), state, params)
      ...     params = optax.apply_updates(params, updates)
      >>> print(round(float(params[0, 0]), 3))
      1.643
    """
    _check_numeric("learning_rate", learning_rate, schedule=True)
    _check_numeric("weight_decay", weight_decay)
    if not callable(learning_rate):
        lr = _concrete(learning_rate)
        descent = " (dash already descends: pass the step size, not its negative)"
        _check_nonnegative("learning_rate", learning_rate, descent if lr is not None and np.any(lr < 0) else "")
    _check_nonnegative("weight_decay", weight_decay)
    if weight_decay_mask is None:
        weight_decay_mask = lambda p: jax.tree.map(lambda x: x.ndim >= 2, p)
    return optax.chain(
        scale_by_dash(
            block_size, b1, b2, factor_decay, eps, grafting=grafting, graft_bias_correction=graft_bias_correction,
            momentum=momentum, nesterov=nesterov,
            precondition_frequency=precondition_frequency,
            start_preconditioning_step=start_preconditioning_step, inverse_root=inverse_root,
            root_epsilon=root_epsilon, root_chunk_size=root_chunk_size, one_dim=one_dim, nonfinite=nonfinite,
            max_precondition_dim=max_precondition_dim, merge_small_dims=merge_small_dims,
            statistics_dtype=statistics_dtype, mesh=mesh, mesh_axis=mesh_axis,
            inverse_exponent_override=inverse_exponent_override,
        ),
        optax.add_decayed_weights(weight_decay, weight_decay_mask),
        optax.scale_by_learning_rate(learning_rate),
    )
