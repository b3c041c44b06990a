"""Two-groups simulation and a common-random-numbers risk comparison driver (sharded over devices and processes)."""

import functools
import math
from collections.abc import Callable, Mapping
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from jaxtyping import Array, Bool, Float

from .. import _memory
from .._checks import check_int, default_float_dtype
from .._progress import ProgressBar, resolve_progress
from .._repr import record_repr, summarise
from .._types import PRNGKey, RealScalarLike
from ._checks import check_scalar, positive
from ._oracle import bayes_oracle_test

__all__ = ["TwoGroupsSample", "simulate_two_groups", "RiskComparison", "simulate_risk_ratios"]

Rule = Callable[[Float[Array, "r n"]], Bool[Array, "r n"]]


class TwoGroupsSample(eqx.Module):
    """Draws from the two-groups model (`simulate_two_groups`).

    Attributes:
      x: observations $X=\\mu+\\sigma\\varepsilon$, shape ``(num_replicates, n)``.
      nonnull: $\\nu_i=1\\{\\mu_i\\ne0\\}$, shape ``(num_replicates, n)``.
      mu: means $\\mu_i$, shape ``(num_replicates, n)``.
    """

    x: Float[Array, "r n"]
    nonnull: Bool[Array, "r n"]
    mu: Float[Array, "r n"]

    def __repr__(self) -> str:
        if isinstance(self.x, jax.core.Tracer):
            return record_repr(self)
        r, n = self.x.shape
        num_nonnull = summarise(np.asarray(self.nonnull).sum(-1))
        return f"TwoGroupsSample(num_replicates={r}, n={n}, num_nonnull={num_nonnull}, x={summarise(self.x)})"


def _draw_one(key, n, p, tau, sigma, dt):
    k1, k2, k3 = jax.random.split(key, 3)
    nu = jax.random.bernoulli(k1, p, (n,))
    mu = jnp.where(nu, tau * jax.random.normal(k2, (n,), dt), 0.0)
    x = mu + sigma * jax.random.normal(k3, (n,), dt)
    return x, nu, mu


@functools.partial(jax.jit, static_argnums=(1, 2, 6))
def _draw_many(key, n, num_replicates, p, tau, sigma, dt):
    return jax.vmap(lambda k: _draw_one(k, n, p, tau, sigma, dt))(_rep_keys(key, num_replicates))


#: Refuse draws whose arrays would pass this many bytes in all (x, mu and nonnull); a loop over smaller batches
#: of replicates does the same work in bounded memory.
_MAX_BYTES = 8 * 2**30


def _check_sizes(where: str, n, num_replicates, dtype) -> Any:
    """``(n, num_replicates)`` as positive Python ints and ``dtype`` as a floating dtype, with a memory estimate."""
    for name, v in (("n", n), ("num_replicates", num_replicates)):
        check_int(v, name, where=where, minimum=1)
    dt = jnp.dtype(dtype) if dtype is not None else default_float_dtype()
    if not jnp.issubdtype(dt, jnp.floating):
        raise TypeError(f"{where}: dtype must be a floating dtype (float32, float64), got dtype={dt}")
    need = int(n) * int(num_replicates) * (2 * dt.itemsize + 1)
    if need > _MAX_BYTES:
        raise ValueError(
            f"{where}: n * num_replicates = {int(n) * int(num_replicates):.3g} draws need {need / 2**30:.1f} GiB "
            f"(over {_MAX_BYTES / 2**30:.0f} GiB); lower n or num_replicates, or loop over batches of replicates"
        )
    # the fixed cap keeps the answer the same on every machine; a smaller machine refuses sooner, before allocating
    _memory.check_memory(float(need), f"{where}: n * num_replicates = {int(n) * int(num_replicates):.3g} draws",
                         "lower n or num_replicates, or loop over batches of replicates")
    return int(n), int(num_replicates), dt


def _key_parts(key):
    """``(raw key data, impl)`` so a typed key can enter a program over a multi-process mesh (``impl`` None: raw)."""
    if not hasattr(key, "dtype"):
        raise TypeError(f"key must be a JAX PRNG key (jax.random.key(0)), got key={key!r}")
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return jax.random.key_data(key), jax.random.key_impl(key)
    return key, None


def _replicated(mesh, a):
    """``a`` as an input replicated over ``mesh``; across processes a global array built from this process's copy."""
    if mesh is None or jax.process_count() == 1:
        return a
    return jax.make_array_from_process_local_data(NamedSharding(mesh, P()), np.asarray(a))


def _summarise(loss, num_replicates):
    # eager on purpose: the oracle row's ratio is then exactly mean / mean == 1 (a fused program may divide by a
    # reciprocal)
    loss = loss[:, :num_replicates]
    mean = jnp.mean(loss, axis=-1)
    ratio = mean / mean[0]
    # delta method for a ratio of paired means: sd(L_rule - rho L_BO) / (sqrt(R) mean(L_BO))
    resid = loss - ratio[:, None] * loss[0]
    se = jnp.std(resid, axis=-1, ddof=1) / math.sqrt(num_replicates) / mean[0]
    return loss, mean, ratio, se


def _rep_keys(key, num_replicates):
    # replicate i always gets fold_in(key, i): draws do not depend on padding or device count
    return jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.arange(num_replicates, dtype=jnp.uint32))


def simulate_two_groups(
    key: PRNGKey,
    n: int,
    p: RealScalarLike,
    tau2: RealScalarLike,
    num_replicates: int = 1,
    *,
    sigma: RealScalarLike = 1.0,
    dtype: object = None,
) -> TwoGroupsSample:
    r"""Draw ``num_replicates`` independent data sets of ``n`` tests from the two-groups model.

    $$
    \nu_i\sim\mathrm{Bern}(p),\quad \mu_i=\nu_i\,\tau\,\xi_i,\quad X_i=\mu_i+\sigma\varepsilon_i,
    \quad \xi_i,\varepsilon_i\sim N(0,1).
    $$

    Replicate ``i`` uses ``jax.random.fold_in(key, i)``, so its draw does not depend on ``num_replicates`` (the same
    stream is used by `simulate_risk_ratios`).

    Args:
      key: PRNG key.
      n: number of tests (static int >= 1).
      p: non-null proportion in (0, 1).
      tau2: slab variance > 0.
      num_replicates: number of replicates (static int >= 1).
      sigma: noise standard deviation (> 0).
      dtype: floating dtype of the draws (default: the default float dtype).

    Returns:
      `TwoGroupsSample` with ``x``, ``nonnull`` and ``mu`` of shape ``(num_replicates, n)``.

    Raises:
      ValueError: ``n``/``num_replicates`` not positive ints, or draws over 8 GiB; ``p`` outside (0, 1);
        non-positive or infinite ``tau2``/``sigma``.
      TypeError: a non-floating ``dtype``.

    References:
      Bogdan, Chakrabarti, Frommlet & Ghosh (2011), arXiv:1002.3501.

    Examples:
      >>> import jax
      >>> from icmlx.stats import simulate_two_groups
      >>> s = simulate_two_groups(jax.random.key(0), 1000, p=0.1, tau2=9.0, num_replicates=2)
      >>> s.x.shape, s.nonnull.dtype
      ((2, 1000), dtype('bool'))
    """
    n, num_replicates, dt = _check_sizes("simulate_two_groups", n, num_replicates, dtype)
    pp = check_scalar("p", p, dt, lo=0.0, hi=1.0)
    tau = jnp.sqrt(positive("tau2", tau2, dt))
    s = positive("sigma", sigma, dt)
    x, nu, mu = _draw_many(key, n, num_replicates, pp, tau, s, dt)
    return TwoGroupsSample(x=x, nonnull=nu, mu=mu)


class RiskComparison(eqx.Module):
    """Paired (common-random-numbers) risk comparison from `simulate_risk_ratios`.

    Attributes:
      names: rule names (static); ``names[0]`` is the baseline (the Bayes oracle).
      loss: per-replicate loss $\\delta_0\\#FP+\\delta_A\\#FN$, shape ``(num_rules, num_replicates)``.
      mean_loss: Monte Carlo Bayes risk per rule, shape ``(num_rules,)``.
      ratio: paired ratio ``mean_loss / mean_loss[0]``, shape ``(num_rules,)``.
      ratio_se: delta-method standard error $\\mathrm{sd}(L_r-\\hat\\rho_r L_0)/\\sqrt{R}/\\bar L_0$, shape
        ``(num_rules,)``.
    """

    names: tuple[str, ...] = eqx.field(static=True)
    loss: Float[Array, "k r"]
    mean_loss: Float[Array, " k"]
    ratio: Float[Array, " k"]
    ratio_se: Float[Array, " k"]

    def __repr__(self) -> str:
        if isinstance(self.ratio, jax.core.Tracer):
            return record_repr(self)
        ratios = ", ".join(f"{k}={r:.4g}±{se:.2g}" for k, (r, se) in self.as_dict().items())
        return f"RiskComparison(num_replicates={self.loss.shape[-1]}, ratio={{{ratios}}})"

    def as_dict(self) -> dict[str, tuple[float, float]]:
        """``{name: (ratio, ratio_se)}`` as Python floats (host transfer; for printing)."""
        r = np.asarray(self.ratio)
        se = np.asarray(self.ratio_se)
        return {k: (float(r[i]), float(se[i])) for i, k in enumerate(self.names)}


def simulate_risk_ratios(
    key: PRNGKey,
    rules: Mapping[str, Rule],
    *,
    n: int,
    p: RealScalarLike,
    tau2: RealScalarLike,
    num_replicates: int,
    sigma: RealScalarLike = 1.0,
    delta0: RealScalarLike = 1.0,
    deltaA: RealScalarLike = 1.0,
    dtype: object = None,
    shard: bool = True,
    progress: bool | None = None,
) -> RiskComparison:
    r"""Monte Carlo Bayes risk of several rules on the *same* draws, as paired ratios to the Bayes oracle.

    Every rule sees the same ``(num_replicates, n)`` data (common random numbers; replicate ``i`` is
    ``fold_in(key, i)`` as in `simulate_two_groups`). The per-replicate loss is
    $L=\delta_0\#\{\text{false rejections}\}+\delta_A\#\{\text{false acceptances}\}$, and for each rule

    $$
    \hat\rho = \bar L_\text{rule}/\bar L_\text{BO},\qquad
    \mathrm{se}(\hat\rho) = \frac{\mathrm{sd}(L_\text{rule}-\hat\rho L_\text{BO})}
    {\sqrt{R}\,\bar L_\text{BO}}.
    $$

    The SE is the delta method for a ratio of paired means: $\hat\rho-\rho\approx
    \overline{(L_\text{rule}-\rho L_\text{BO})}/\bar L_\text{BO}$, a mean of $R$ i.i.d. terms. For
    $\hat\rho\approx1$ it is the paired-difference SE $\mathrm{sd}(L_\text{rule}-L_\text{BO})/
    (\sqrt R\,\bar L_\text{BO})$; pairing removes the shared noise of the draws, so it is far below the unpaired SE.

    With more than one device and ``shard=True`` the replicates are split across ``jax.devices()`` with
    ``jax.shard_map``, so rules see row blocks and must act row-wise (all icmlx rules do). The count is padded to a
    multiple of the device count with extra replicates (the next ``fold_in`` indices) that are dropped before any
    mean, so the numbers do not depend on the device count. With ``jax.distributed`` initialised,
    ``jax.devices()`` holds every device of every process: each process must make the same call (same key,
    rules and sizes), the replicates are split over all devices, and the per-device losses are all-gathered
    inside the sharded program, so every process gets the full result as ordinary arrays on its own first device
    (no ``process_allgather`` needed). ``shard=False`` computes everything on the default device of each process.

    Args:
      key: PRNG key.
      rules: ``{name: rule}``; a rule maps ``x`` of shape ``(r, n)`` to boolean rejections ``(r, n)``. The Bayes
        oracle is added first as ``"oracle"`` (a rule with that name is refused).
      n: tests per replicate (static int).
      p: two-groups parameters (Python floats).
      tau2: two-groups parameters (Python floats).
      sigma: two-groups parameters (Python floats).
      num_replicates: replicates R (static int >= 2).
      delta0: loss of a type I error.
      deltaA: loss of a type II error.
      dtype: dtype of the draws (default float dtype).
      shard: split replicates over ``jax.devices()`` (all processes' devices) when there are several.
      progress: show a progress bar (replicates done) on ``sys.stderr``. None shows progress in an interactive
        terminal for loops driven from Python; a loop inside one compiled program reports only with
        progress=True. With progress on, the replicates run in about ten chunks from Python (the same numbers).

    Returns:
      `RiskComparison` (``names``, ``loss``, ``mean_loss``, ``ratio``, ``ratio_se``).

    Raises:
      ValueError: ``"oracle"`` among ``rules``; bad ``n``/``num_replicates`` or parameters.
      TypeError: ``key`` not a JAX PRNG key.

    References:
      Bogdan, Chakrabarti, Frommlet & Ghosh (2011), arXiv:1002.3501.

    Examples:
      >>> import jax
      >>> from icmlx.stats import simulate_risk_ratios, bonferroni, two_sided_pvalues
      >>> rules = {"bonf": lambda x: bonferroni(two_sided_pvalues(x), 0.05).reject}
      >>> cmp = simulate_risk_ratios(jax.random.key(0), rules, n=1000, p=0.03, tau2=9.0, num_replicates=64)
      >>> cmp.names, bool(cmp.ratio[1] > 1.0)
      (('oracle', 'bonf'), True)
    """
    if "oracle" in rules:
        raise ValueError("the name 'oracle' is reserved for the Bayes oracle baseline")
    check_int(num_replicates, "num_replicates", where="simulate_risk_ratios", minimum=2)
    n, num_replicates, dt = _check_sizes("simulate_risk_ratios", n, num_replicates, dtype)
    pp = check_scalar("p", p, dt, lo=0.0, hi=1.0)
    t2 = positive("tau2", tau2, dt)
    s = positive("sigma", sigma, dt)
    d0 = positive("delta0", delta0, dt)
    dA = positive("deltaA", deltaA, dt)
    all_rules: dict[str, Rule] = {
        "oracle": lambda x: bayes_oracle_test(
            x, p=pp, tau2=t2, sigma=s, delta0=d0, deltaA=dA
        ).reject
    }
    all_rules.update(rules)
    names = tuple(all_rules)

    def local(keys):
        x, nu, _ = jax.vmap(lambda k: _draw_one(k, n, pp, jnp.sqrt(t2), s, dt))(keys)
        out = []
        for rule in all_rules.values():  # a fixed, small set of distinct rules (not a data loop)
            rej = rule(x)
            fp = jnp.sum(rej & ~nu, axis=-1).astype(dt)
            fn = jnp.sum(~rej & nu, axis=-1).astype(dt)
            out.append(d0 * fp + dA * fn)
        return jnp.stack(out)

    devices = jax.devices()  # with jax.distributed initialised: every device of every process
    ndev = len(devices) if shard else 1
    mesh = jax.sharding.Mesh(np.array(devices), ("rep",)) if ndev > 1 else None
    kd, impl = _key_parts(key)

    def rows(kd, start, num_rows):
        # rows start, ..., start + num_rows - 1 of the global replicate order: replicate i is fold_in(key, i)
        k = kd if impl is None else jax.random.wrap_key_data(kd, impl=impl)
        idx = start.astype(jnp.uint32) + jnp.arange(num_rows, dtype=jnp.uint32)
        return local(jax.vmap(lambda i: jax.random.fold_in(k, i))(idx))

    def make_program(chunk):
        if mesh is None:
            return jax.jit(lambda kd, start: rows(kd, start, chunk))
        per = chunk // ndev

        def block(kd, start):
            mine = rows(kd, start + jax.lax.axis_index("rep") * per, per)
            # every device ends with every row, so the output is replicated over the (global) mesh
            return jax.lax.all_gather(mine, "rep", axis=1, tiled=True)

        return jax.jit(jax.shard_map(block, mesh=mesh, in_specs=(P(), P()), out_specs=P(), check_vma=False))

    def run(fn, start):
        out = fn(_replicated(mesh, kd), _replicated(mesh, np.int32(start)))
        # a process-local copy of the replicated rows: readable (and usable eagerly) on this process alone
        return out.addressable_data(0) if mesh is not None else out

    if resolve_progress(progress):
        # about ten equal chunks driven from Python (one compiled program), each a multiple of the device count
        chunk = int(math.ceil(math.ceil(num_replicates / 10) / ndev)) * ndev
        num_chunks = int(math.ceil(num_replicates / chunk))
        fn = make_program(chunk)
        parts = []
        with ProgressBar("simulate_risk_ratios", total=num_replicates, unit="replicate") as bar:
            for i in range(num_chunks):
                parts.append(jax.block_until_ready(run(fn, i * chunk)))
                bar.update(min(chunk, num_replicates - i * chunk))
        loss = jnp.concatenate(parts, axis=1)
    else:
        # padded to a multiple of the device count; the padding rows are extra replicates, dropped below
        loss = run(make_program(int(math.ceil(num_replicates / ndev)) * ndev), 0)
    loss, mean, ratio, se = _summarise(loss, num_replicates)
    return RiskComparison(names=names, loss=loss, mean_loss=mean, ratio=ratio, ratio_se=se)
