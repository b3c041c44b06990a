"""Self-supervised training of the G-RANS basis generator by progressive bootstrap."""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import Array, Float

from ..._checks import check_int, check_number, check_values
from ..._progress import ProgressBar, resolve_progress
from ..._repr import record_repr
from ..._types import PRNGKey
from .._amg._relaxation import JacobiRelaxation
from .._convert import as_vector
from ._network import GRANSNet
from ._operator import GRANSOperator
from ._outer import AbstractOuterStep, ThreeTermStep, _outer3
from ._precondition import _basis, _iterate, _precondition_with
from ._smoothers import AbstractSmoother, ChebyshevSmoother, MultilevelSmoother
from ._weights import save_weights

__all__ = ["TrainResult", "train_grans", "grans_loss"]


class TrainResult(eqx.Module):
    """Result record of ``train_grans``.

    Attributes:
      net: the trained ``GRANSNet``.
      initial_net: the network before training (for ablations).
      losses: ``float[steps]`` training loss per step (mean log reduction per iteration, ``grans_loss``).
      stage_of_step: ``int[steps]`` bootstrap stage of each step.
      eval_before: mean one-iteration log reduction (``grans_loss``) of the initial net over all stages'
        states of the training operators (lower is better; these are training matrices: evaluate held-out
        matrices with ``grans_loss`` for a generalisation figure).
      eval_after: the same for the trained net.
    """

    net: GRANSNet
    initial_net: GRANSNet
    losses: Float[Array, " steps"]
    stage_of_step: Any
    eval_before: float
    eval_after: float

    def __repr__(self) -> str:
        return record_repr(self)


_TRAIN_OUTER = ThreeTermStep(norm="residual")


def _smoother_of(op: GRANSOperator | None, smoother: Any) -> Any:
    """``smoother``, or for ``None`` the one ``op`` was set up for (a V-cycle when it carries a hierarchy)."""
    if smoother is not None:
        return smoother
    return MultilevelSmoother() if op is not None and op.hierarchy is not None else ChebyshevSmoother()


_LOSSES = ("auto", "residual", "energy")


def _training_modes(op: GRANSOperator | None, smoother: Any, outer: Any, where: str):
    """``(smoother, outer)`` for `_iterate` from the strategy objects; ``outer`` is a ``NoOuterStep`` or a
    ``ThreeTermStep`` (resolved per operator by `_step_mode`)."""
    smoother = _smoother_of(op, smoother)
    if not isinstance(smoother, AbstractSmoother):
        raise ValueError(f"{where}: smoother must be a ChebyshevSmoother(...) or MultilevelSmoother(...), "
                         f"got smoother={smoother!r}")
    if op is not None and smoother.uses_hierarchy != (op.hierarchy is not None):
        raise ValueError(f"{where}: smoother={smoother!r} does not match the operator, which was set up "
                         f"{'with' if op.hierarchy is not None else 'without'} a multilevel hierarchy")
    if not (isinstance(outer, AbstractOuterStep) and outer.trainable):
        raise ValueError(f"{where}: the loss trains through ThreeTermStep(norm='residual'|'energy'|'auto') or "
                         f"NoOuterStep(), got outer={outer!r}")
    return smoother, outer


def _step_mode(op: GRANSOperator, outer: AbstractOuterStep, loss: str, where: str) -> tuple[str, str]:
    """``(step, norm)`` on ``op``: the outer step ``"none" | "residual" | "energy"`` (``norm="auto"``: energy
    exactly when ``op`` is SPD-like, as in the solver) and the norm the loss measures (``loss="auto"``: energy
    with the energy-norm step, else residual)."""
    if loss not in _LOSSES:
        raise ValueError(f"{where}: loss must be 'auto', 'residual' or 'energy', got loss={loss!r}")
    step = outer.trained_step(op.spd_like)
    if (step == "energy" or loss == "energy") and not op.spd_like:
        raise ValueError(f"{where}: the energy norm (outer={outer!r}, loss={loss!r}) needs a symmetric "
                         "positive-definite-like matrix (symmetric, positive diagonal, non-negative row sums); "
                         "this one is not: use ThreeTermStep(norm='auto'|'residual') and loss='auto'|'residual'")
    norm = loss if loss != "auto" else ("energy" if step == "energy" else "residual")
    return step, norm


def grans_loss(net: GRANSNet, op: GRANSOperator, r: Float[Array, "batch npad"],
               p: Float[Array, "batch npad"], Ap: Float[Array, "batch npad"], *,
               smoother: AbstractSmoother | None = None,
               outer: AbstractOuterStep = _TRAIN_OUTER, loss: str = "auto", unroll: int = 1
               ) -> Float[Array, ""]:
    r"""Self-supervised loss: mean log reduction of one G-RANS iteration (no solutions used).

    Residual norm (``loss="residual"``, and ``"auto"`` with a residual-norm or no outer step):

    $$
    L(\theta) = \frac1B\sum_b \log\frac{\|r^+_b\|_{D^{-1}}}{\|r_b\|_{D^{-1}}}
    $$

    Energy norm (``loss="energy"``, and ``"auto"`` with the energy-norm step ``ThreeTermStep(norm="energy")``,
    or ``norm="auto"`` on an SPD-like matrix — what the solver runs there):

    $$
    L(\theta) = \frac1B\sum_b \tfrac12\log\frac{r^{+\top}_b S\, r^+_b}{r_b^\top S\, r_b}
    $$

    with ``S`` the smoother (the V-cycle ``B ≈ A⁻¹``; no learned part). The energy-norm step minimises
    $\|x^* - x\|_A$ and the solver's safeguard keeps it monotone, so that is the quantity whose
    per-iteration reduction sets the iteration count; $r^\top S r$ is its computable proxy, since
    $\lambda_{\min}(SA)\,\|e\|_A^2 \le r^\top S r \le \lambda_{\max}(SA)\,\|e\|_A^2$ for
    $e = A^{-1} r$ (a V-cycle has ``eig(SA)`` within a small interval, about ``[0.37, 1]`` on P1 Poisson),
    where the ``D⁻¹``-norm of the residual weights the smooth error the V-cycle leaves (the part a coarse basis
    should remove) by its small eigenvalues and hardly sees it.

    With ``unroll=K > 1`` the loss is the mean log reduction per iteration over ``K`` iterations that share one
    basis, built from ``r`` (what the solver runs by default with the V-cycle, ``refresh=None``: the basis of the
    initial residual throughout), each with the outer step and the solver's safeguard,
    $L = \frac{1}{BK}\sum_b \log(\|r^{(K)}_b\| / \|r_b\|)$ in the chosen norm. One iteration rewards
    a basis that helps the next step; ``K`` iterations of the recurrence reward one that helps the accelerated
    solve, whose iteration count depends on the whole spectrum of the preconditioned operator.

    The state ``(r, p, Ap)`` is data (gradients stop there); the gradient flows through the basis,
    the exact projection and the outer step(s).

    Args:
      net: the basis generator.
      op: a ``GRANSOperator``.
      r: batches of residuals, previous updates and their images under ``A`` (padded length).
      p: batches of residuals, previous updates and their images under ``A`` (padded length).
      Ap: batches of residuals, previous updates and their images under ``A`` (padded length).
      smoother: the solver's smoother; ``None`` (default): the one ``op`` was set up for
        (``MultilevelSmoother()`` when it carries a V-cycle hierarchy, else ``ChebyshevSmoother(degree=3)``, the
        shipped weights').
      outer: ``ThreeTermStep(norm="residual")`` (default; the shipped weights'), ``ThreeTermStep(norm="auto")``
        (the solver's step with the V-cycle: energy norm on SPD-like matrices, residual norm otherwise),
        ``ThreeTermStep(norm="energy")`` (SPD-like only) or ``NoOuterStep()`` (the ablation).
      loss: ``"auto"`` (default: the energy norm with the energy-norm step, else the residual norm),
        ``"residual"`` or ``"energy"`` (SPD-like only), as above.
      unroll: iterations per state sharing one basis (a positive int, static; 1: the fresh-basis one-step loss).

    Returns:
      The scalar loss.

    Raises:
      ValueError: an outer step the loss does not train through (``FlexibleGCR``), the energy norm on a matrix
        that is not SPD-like, an unknown ``loss``, a smoother that does not match ``op``, states of the wrong
        shape, with NaN/Inf entries, or a zero residual.
      TypeError: ``op`` is not a ``GRANSOperator``.
    """
    if not isinstance(op, GRANSOperator):
        raise TypeError(f"grans_loss: op must be a GRANSOperator (GRANS.setup(A)), got {type(op).__name__}")
    smoother, outer = _training_modes(op, smoother, outer, "grans_loss()")
    step, norm = _step_mode(op, outer, loss, "grans_loss()")
    _check_unroll(unroll, "grans_loss")
    r, p, Ap = _states(op, r, p, Ap)
    return _loss(net, op, r, p, Ap, smoother, step, norm, unroll)


def _check_unroll(unroll, where: str):
    check_int(unroll, "unroll", where=where, minimum=1)


def _sq_norm(op: GRANSOperator, r, smoother: AbstractSmoother, norm: str):
    """``rᵀ S r`` (``norm="energy"``, ``S`` the smoother: the energy-norm proxy) or ``rᵀ D⁻¹ r``."""
    if norm == "energy":
        return jnp.maximum(jnp.vdot(r, smoother.smooth(op, r)), jnp.finfo(r.dtype).tiny)
    return jnp.sum(jnp.abs(r) ** 2 / jnp.abs(op.A.diagonal()))  # (|r|²: a complex residual too)


def _loss(net: GRANSNet, op: GRANSOperator, r, p, Ap, smoother: AbstractSmoother, step: str, norm: str,
          unroll: int = 1):
    """`grans_loss` without the input checks (what the training step differentiates)."""
    if unroll > 1:
        return jnp.mean(jax.vmap(lambda r, p, Ap: _unrolled(net, op, r, p, Ap, smoother, step, norm, unroll))(
            r, p, Ap))

    def one(r, p, Ap):
        _, Adx = _iterate(net, op, r, jnp.zeros_like(r), r, p, Ap, smoother=smoother,
                          galerkin=op.spd_like, outer=step)
        rn = r - Adx
        return 0.5 * (jnp.log(_sq_norm(op, rn, smoother, norm)) - jnp.log(_sq_norm(op, r, smoother, norm)))

    return jnp.mean(jax.vmap(one)(r, p, Ap))


def _accepted(step: str, dx, r, rn):
    """The solver's safeguard for one proposed step ``dx`` (residual ``r`` → ``rn``): with the energy-norm step the
    error energy may not grow (``‖e‖²_A − ‖e'‖²_A = dxᵀ(r + r') ≥ 0``), otherwise the residual norm may not."""
    if step == "energy":
        return jnp.vdot(dx, r + rn) >= 0
    return jnp.linalg.norm(rn) <= jnp.linalg.norm(r)


def _unrolled(net, op: GRANSOperator, r, p, Ap, smoother: AbstractSmoother, step: str, norm: str, unroll: int):
    """Mean log reduction per iteration over ``unroll`` safeguarded iterations with one basis (from ``r``)."""
    galerkin = op.spd_like
    basis = _basis(net, op, r, smoother=smoother, galerkin=galerkin)

    def body(c, _):
        r, p, Ap = c
        u, Au, e1, Ae1 = _precondition_with(op, basis, r, smoother=smoother, galerkin=galerkin)
        if step == "none":
            dx, Adx = u, Au
        else:
            dx, Adx = _outer3(u, Au, e1, Ae1, p, Ap, r, energy=step == "energy")
        rn = r - Adx
        ok = _accepted(step, dx, r, rn)
        return (jnp.where(ok, rn, r), jnp.where(ok, dx, p), jnp.where(ok, Adx, Ap)), None

    (rk, _, _), _ = jax.lax.scan(body, (r, p, Ap), None, length=unroll)
    return 0.5 * (jnp.log(_sq_norm(op, rk, smoother, norm)) - jnp.log(_sq_norm(op, r, smoother, norm))) / unroll


def _states(op: GRANSOperator, r, p, Ap):
    """``(r, p, Ap)`` checked: ``[batch, n_pad]`` each, finite, and no zero residual (its log reduction is
    undefined)."""
    if not isinstance(op, GRANSOperator):
        raise TypeError(f"grans_loss: op must be a GRANSOperator (GRANS.setup(A)), got {type(op).__name__}")
    out = []
    for name, v in (("r", r), ("p", p), ("Ap", Ap)):
        v = v if isinstance(v, jax.core.Tracer) else jnp.asarray(v)
        if v.ndim != 2 or v.shape[1] != op.padded_size:
            raise ValueError(f"grans_loss: {name} must have shape [batch, {op.padded_size}] (the operator's "
                             f"padded_size), got shape {v.shape}")
        out.append(check_values(v, lambda xp, x: ~xp.isfinite(x), f"grans_loss: {name} has NaN or Inf entries"))
    if out[1].shape != out[0].shape or out[2].shape != out[0].shape:
        raise ValueError(f"grans_loss: r, p and Ap must have the same shape, got {r.shape}, {p.shape}, {Ap.shape}")
    out[0] = check_values(out[0], lambda xp, x: xp.all(x == 0, axis=1),
                          "grans_loss: a residual r (a row) is zero; its log reduction is undefined: drop it")
    return out


def _check_training(operators, rhs, learning_rate, stages, states_per_operator) -> list:
    """The inputs of `train_grans`, checked before anything is compiled; returns the rhs as arrays."""
    if len(operators) == 0 or len(operators) != len(rhs):
        raise ValueError(f"train_grans: need matching non-empty operators and rhs, got {len(operators)} and "
                         f"{len(rhs)}")
    check_number(learning_rate, "learning_rate", where="train_grans", minimum=0, open_minimum=True)
    states_per_operator = check_int(states_per_operator, "states_per_operator", where="train_grans", minimum=1)
    stages = [check_int(K, "stages", where="train_grans", minimum=0) for K in stages]
    out = []
    for i, (op, b) in enumerate(zip(operators, rhs)):
        if not isinstance(op, GRANSOperator):
            raise TypeError(f"train_grans: operators[{i}] must be a GRANSOperator (GRANS.setup(A)), got "
                            f"{type(op).__name__}")
        out.append(as_vector(b, op.n, name=f"rhs[{i}]", matrix=f"operators[{i}]",
                             allow_complex=bool(jnp.iscomplexobj(op.A.vals))))
    return out


def _initial_states(key, op: GRANSOperator, b, count: int):
    """D0: the problem's b, white noise, and A·(Jacobi-smoothed noise) (algebraically smooth)."""
    dt = op.A.dtype
    npad = op.padded_size
    keys = jax.random.split(key, count)
    dinv = 1.0 / op.A.diagonal()
    mask = op.mask.astype(dt)  # (complex for a complex A: the states are complex)
    jacobi = JacobiRelaxation(omega=2.0 / 3.0, num_steps=10)  # with ρ = 1: ten classical ω = 2/3 sweeps

    def make(k, i):
        k1, k2 = jax.random.split(k)
        white = jax.random.normal(k1, (npad,), dt) * mask
        e = jax.random.normal(k2, (npad,), dt) * mask
        # the error of ten Jacobi sweeps on A x = 0 from x = e
        smooth = op.A.mv(jacobi.relax(op.A, dinv, 1.0, None, jnp.zeros_like(e), e, zero=False))
        bp = jnp.zeros((npad,), dt).at[: op.n].set(b.astype(dt))
        r = jnp.stack([bp, white, smooth])[i % 3]
        return r / jnp.linalg.norm(r).astype(dt)

    return jax.vmap(make)(keys, jnp.arange(count))


@eqx.filter_jit
def _rollout(net: GRANSNet, op: GRANSOperator, r0, steps, smoother: AbstractSmoother, step: str = "residual"):
    """Run the frozen solver ``steps`` iterations from residuals r0 (x0 = 0, b = r0); normalised states.

    ``step``: the outer step (``"residual"`` or ``"energy"``; ``"none"`` rolls out the residual-norm step, as
    the solver has no step-less mode worth bootstrapping from) with the solver's safeguard for its norm: the
    residual norm may not grow, or the error energy (``‖e‖²_A − ‖e'‖²_A = dxᵀ(r + r')``) may not grow."""
    step = "residual" if step == "none" else step

    def run(r):
        z = jnp.zeros_like(r)

        def body(_, c):
            r, p, Ap = c
            dx, Adx = _iterate(net, op, r, z, r, p, Ap, smoother=smoother, galerkin=op.spd_like,
                               outer=step)
            rn = r - Adx
            ok = _accepted(step, dx, r, rn)
            rn = jnp.where(ok, rn, r)
            dx = jnp.where(ok, dx, p)
            Adx = jnp.where(ok, Adx, Ap)
            s = (1.0 / jnp.linalg.norm(rn)).astype(rn.dtype)
            return rn * s, dx * s, Adx * s

        r, p, Ap = jax.lax.fori_loop(0, steps, body, (r, z, z))
        return r, p, Ap

    return jax.vmap(run)(r0)


def train_grans(
    key: PRNGKey,
    operators: Sequence[GRANSOperator],
    rhs: Sequence[Float[Array, " n"]],
    *,
    net: GRANSNet | None = None,
    hidden: int = 16,
    layers: int = 3,
    channels: int = 2,
    stages: Sequence[int] = (0, 1, 2, 4, 8),
    steps_per_stage: int = 40,
    batch: int = 4,
    states_per_operator: int = 12,
    learning_rate: float = 1e-3,
    smoother: AbstractSmoother | None = None,
    outer: AbstractOuterStep = _TRAIN_OUTER,
    loss: str = "auto",
    unroll: int = 1,
    progress: bool | None = None,
    checkpoint_dir: str | Path | None = None,
) -> TrainResult:
    r"""Train the G-RANS basis generator without reference solutions (progressive bootstrap).

    Stage 0 trains on initial residuals (the problems' ``b``, white noise, and ``A`` applied to
    Jacobi-smoothed noise). Stage ``s`` runs the *current* frozen solver ``K_s = stages[s]``
    iterations from those residuals and adds the normalised states it produces to a replay buffer;
    each step draws half its batch from the newest stage and half from all stages, on one randomly
    chosen operator. Optimiser: Adam with cosine decay and global-norm clipping 1.0 (optax). The loss
    is ``grans_loss`` with ``outer`` and ``loss``; the roll-outs run the same outer step with the solver's
    safeguard for its norm.

    Args:
      key: JAX PRNG key.
      operators: ``GRANSOperator``\ s from ``GRANS.setup`` (same ``channels`` as the network).
      rhs: their right-hand sides (unpadded).
      net: starting network (default ``GRANSNet.init(key, hidden, layers, channels)``).
      hidden: architecture when ``net`` is None.
      layers: architecture when ``net`` is None.
      channels: architecture when ``net`` is None.
      stages: rollout lengths ``K_s`` (0 = initial residuals).
      steps_per_stage: optimiser steps per stage.
      batch: states per step.
      states_per_operator: initial residuals per operator.
      learning_rate: peak Adam learning rate.
      smoother: the solver's smoother; ``None`` (default): the one the operators were set up for (a
        ``MultilevelSmoother`` when they carry a V-cycle hierarchy, else ``ChebyshevSmoother(degree=3)``, with
        which the shipped weights were trained).
      outer: the outer step trained through and rolled out: ``ThreeTermStep(norm="residual")`` (default; the
        shipped weights'), ``ThreeTermStep(norm="auto")`` (the solver's with the V-cycle: energy norm on the
        SPD-like operators, residual norm on the others), ``ThreeTermStep(norm="energy")`` or ``NoOuterStep()``.
      loss: the norm of the loss, ``"auto"`` (default), ``"residual"`` or ``"energy"`` (see ``grans_loss``).
      unroll: iterations per training state sharing one basis (see ``grans_loss``; 1: one fresh-basis step).
      progress: None shows progress in an interactive terminal for loops driven from Python; a loop inside one
        compiled program reports only with progress=True. (This loop is driven from Python: one bar over all
        optimiser steps, with the stage, its rollout length ``K`` and the mean of the last 10 losses.)
      checkpoint_dir: if given, ``stage_<s>.eqx`` weight files are written there after each stage.

    Returns:
      A ``TrainResult``.

    Raises:
      ValueError: empty or mismatched inputs, an rhs of the wrong length or with NaN/Inf, a ``learning_rate``,
        ``stages``, ``states_per_operator``, ``steps_per_stage`` or ``batch`` out of range, a channel mismatch,
        or a smoother that does not match the operators.
      TypeError: an operator that is not a ``GRANSOperator``.
    """
    smoother = _smoother_of(operators[0] if len(operators) and isinstance(operators[0], GRANSOperator)
                            else None, smoother)
    smoother, outer = _training_modes(None, smoother, outer, "train_grans()")
    rhs = _check_training(operators, rhs, learning_rate, stages, states_per_operator)
    _check_unroll(unroll, "train_grans")
    modes = [(*_step_mode(op, outer, loss, f"train_grans(): operators[{i}]"), int(unroll))
             for i, op in enumerate(operators)]
    if steps_per_stage < 1 or batch < 1 or not stages:
        raise ValueError(f"bad schedule: {steps_per_stage=}, {batch=}, {stages=}")
    kinit, kdata, kloop = jax.random.split(key, 3)
    if net is None:
        net = GRANSNet.init(kinit, hidden=hidden, layers=layers, channels=channels)
    for op in operators:
        if op.colidx.shape[1] != 2 * net.channels:
            raise ValueError("operator was set up for a different number of channels")
        _training_modes(op, smoother, _TRAIN_OUTER, "train_grans()")
    initial = net
    total = steps_per_stage * len(stages)
    sched = optax.cosine_decay_schedule(learning_rate, total, alpha=0.01)
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(sched))
    params, static = eqx.partition(net, eqx.is_array)
    opt_state = opt.init(params)

    @eqx.filter_jit
    def step(params, opt_state, op, r, p, Ap, mode):
        def lossf(params):
            return _loss(eqx.combine(params, static), op, r, p, Ap, smoother, *mode)

        loss, grads = jax.value_and_grad(lossf)(params)
        # optax's Adam bias correction computes float ** int32, which strict promotion rejects
        with jax.numpy_dtype_promotion("standard"):
            updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    eval_loss = eqx.filter_jit(lambda net, op, r, p, Ap, mode: _loss(net, op, r, p, Ap, smoother, *mode))
    dkeys = jax.random.split(kdata, len(operators))
    r0 = [_initial_states(k, op, b, states_per_operator) for k, op, b in zip(dkeys, operators, rhs)]
    buffers: list[list[tuple]] = [[] for _ in operators]  # per operator: list of (r, p, Ap) per stage
    losses, stage_of = [], []
    rng = np.random.default_rng(int(jax.random.randint(kloop, (), 0, 2**31 - 1)))
    with ProgressBar("train_grans", total=total, enabled=resolve_progress(progress), unit="step") as bar:
        for s, K in enumerate(stages):  # Python loop over stages and steps: host-side driver, not traced
            cur = eqx.combine(params, static)
            for i, op in enumerate(operators):
                if K == 0:
                    z = jnp.zeros_like(r0[i])
                    buffers[i].append((r0[i], z, z))
                else:
                    buffers[i].append(_rollout(cur, op, r0[i], jnp.asarray(K, jnp.int32), smoother,
                                               modes[i][0]))
            for _ in range(steps_per_stage):
                i = int(rng.integers(len(operators)))
                newest = buffers[i][-1]
                allst = [jnp.concatenate(x) for x in zip(*buffers[i])]
                half = batch // 2
                j1 = rng.integers(newest[0].shape[0], size=batch - half)
                j2 = rng.integers(allst[0].shape[0], size=half)
                r, p, Ap = (jnp.concatenate([newest[k][j1], allst[k][j2]]) for k in range(3))
                params, opt_state, value = step(params, opt_state, operators[i], r, p, Ap, modes[i])
                losses.append(float(value))
                stage_of.append(s)
                if bar.enabled:  # (the float() above already synchronised; the mean is host-side)
                    bar.update(1, stage=s, K=K, loss=float(np.mean(losses[-10:])))
            if checkpoint_dir is not None:
                Path(checkpoint_dir).mkdir(parents=True, exist_ok=True)
                save_weights(Path(checkpoint_dir) / f"stage_{s}.eqx", eqx.combine(params, static),
                             {"stage": s, "K": K, "step": len(losses)})
    trained = eqx.combine(params, static)

    def evaluate(n):
        vals = []
        for i, op in enumerate(operators):
            r, p, Ap = (jnp.concatenate(x) for x in zip(*buffers[i]))
            vals.append(float(eval_loss(n, op, r, p, Ap, modes[i])))
        return float(np.mean(vals))

    return TrainResult(net=trained, initial_net=initial, losses=jnp.asarray(losses),
                       stage_of_step=np.asarray(stage_of), eval_before=evaluate(initial),
                       eval_after=evaluate(trained))
