"""Edge stability of PC by the nonparametric bootstrap: how often each adjacency and each orientation appears."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int, PRNGKeyArray

from ..._checks import check_int, default_float_dtype
from .._citests._testers import AbstractCITest
from .._inputs import TableLike
from ._pc import _resolve_ci_test
from ._pc_lockstep import _LOCKSTEP_KWARGS, _lockstep_graphs, _pc_quiet

__all__ = ["BootstrapResult", "bootstrap_pc"]


class BootstrapResult(eqx.Module):
    """Output of `bootstrap_pc`: edge frequencies over the resamples.

    Attributes:
      edge_frequency: ``(d, d)`` symmetric, the fraction of resamples whose CPDAG has ``i`` and ``j`` adjacent.
      directed_frequency: ``(d, d)``, ``[i, j]`` the fraction with ``i -> j``.
      undirected_frequency: ``(d, d)`` symmetric, the fraction with ``i - j``.
      bidirected_frequency: ``(d, d)`` symmetric, the fraction with ``i <-> j`` (collider conflicts).
      num_resamples: the number of resamples.
      names: the variable names (a DataFrame's columns, or ``names=``), or ``None``.

    ``edge_frequency = directed_frequency + directed_frequency.T + undirected_frequency + bidirected_frequency``.
    """

    edge_frequency: Float[Array, "d d"]
    directed_frequency: Float[Array, "d d"]
    undirected_frequency: Float[Array, "d d"]
    bidirected_frequency: Float[Array, "d d"]
    num_resamples: Int[Array, ""]
    names: tuple[str, ...] | None = eqx.field(static=True, default=None)


def bootstrap_pc(
    key: PRNGKeyArray,
    data: Float[ArrayLike, "n d"] | Int[ArrayLike, "n d"] | TableLike,
    num_resamples: int,
    **pc_kwargs,
) -> BootstrapResult:
    r"""PC on ``num_resamples`` bootstrap resamples of the rows: the frequency of every adjacency and orientation.

    Resample $b$ draws $n$ rows with replacement, $x^{(b)} = x_{I_b}$, $I_b \sim \mathrm{Unif}\{1..n\}^n$, and
    runs `icmlx.structure.pc` on it; with $G^{(b)}$ its CPDAG,

    $$\hat f_{ij} = \frac1B \sum_{b=1}^B \mathbf 1[i \text{ and } j \text{ adjacent in } G^{(b)}],$$

    and likewise for ``i -> j``, ``i - j`` and ``i <-> j`` (causal-cmd's ``--numberResampling``). Resample $b$
    takes the rows ``jax.random.randint(jax.random.split(key, num_resamples)[b], (n,), 0, n, jnp.int32)`` (int32
    whether or not float64 is enabled, so the resamples are the same in both modes).

    The data are checked once; the resamples then run PC-stable in lockstep: each keeps its own adjacencies,
    separating sets and largest p-values, and the new tests of one level, of all resamples together, go to the
    tester as one batch through its compiled kernels (Fisher-z reads each resample's own correlation matrix;
    χ²/G², KCI and the mixed-data test see the resamples' columns side by side). Every test reads only its own
    resample, so each resample's CPDAG is the one `icmlx.structure.pc` gives on it (the same tests, the same
    p-values up to the rounding of a differently sized batch). Resamples are taken together up to 2,048 columns
    (``num_resamples * d``) and $2^{26}$ data cells at a time. The original (``stable=False``) PC and function
    testers run ``pc`` resample by resample instead, sharing its compiled programs. Warnings about constant or
    duplicated columns that a resample happens to create (a rare category drawn zero times) are silenced; the
    result counts what each resample's PC found.

    Args:
      key: PRNG key of the resampling.
      data: ``(n, d)`` array or DataFrame, as for `icmlx.structure.pc`.
      num_resamples: number of bootstrap resamples ``B >= 1``.
      **pc_kwargs: keyword arguments of `icmlx.structure.pc` (``ci_test``, ``alpha``, ``colliders``, ...).

    Returns:
      `BootstrapResult`.

    Raises:
      ValueError: ``num_resamples`` not a positive integer, the d-separation oracle (it has no data to
        resample), or anything `icmlx.structure.pc` refuses.
      TypeError: a keyword argument `icmlx.structure.pc` does not take.

    References:
      Friedman, Goldszmidt & Wyner, "Data analysis with Bayesian networks: a bootstrap approach", UAI (1999);
      Efron & Tibshirani, "An Introduction to the Bootstrap" (1993).

    Examples:
      >>> import jax
      >>> from icmlx.structure import bootstrap_pc, random_er_dag, sample_linear_gaussian
      >>> dag = random_er_dag(jax.random.key(0), 5, expected_degree=2.0)
      >>> x = sample_linear_gaussian(jax.random.key(1), dag, 1000)
      >>> res = bootstrap_pc(jax.random.key(2), x, 4, alpha=0.01)
      >>> res.edge_frequency.shape, int(res.num_resamples)
      ((5, 5), 4)
    """
    check_int(num_resamples, "num_resamples", where="bootstrap_pc", minimum=1)
    if "true_dag" in pc_kwargs:
        raise ValueError("bootstrap_pc resamples data; the d-separation oracle (true_dag=) has none")
    test = _resolve_ci_test(pc_kwargs.pop("ci_test", None), data, "bootstrap_pc")
    if not test.uses_alpha:
        raise ValueError(f"bootstrap_pc resamples data; {test!r} has none to resample")
    nan_policy = pc_kwargs.pop("nan_policy", "raise")
    arr, names = test.check_input(data, nan_policy=nan_policy, names=pc_kwargs.pop("names", None))
    arr = np.asarray(arr)
    n, d = arr.shape
    rows = np.asarray(jax.vmap(lambda k: jax.random.randint(k, (n,), 0, n, jnp.int32))(
        jax.random.split(key, num_resamples)))
    counts = np.zeros((3, d, d))
    unknown = set(pc_kwargs) - _LOCKSTEP_KWARGS
    if unknown:
        raise TypeError(f"bootstrap_pc got unexpected keyword arguments {sorted(unknown)} (pc's are "
                        f"{sorted(_LOCKSTEP_KWARGS | {'ci_test', 'nan_policy', 'names'})})")
    lockstep = pc_kwargs.get("stable", True) and d >= 2 and type(test)._prepare_resamples is not \
        AbstractCITest._prepare_resamples
    if lockstep:
        graphs = _lockstep_graphs(test, arr, rows, nan_policy, names, **pc_kwargs)
    else:  # the original (order-dependent) PC, or a tester that takes one sample at a time
        graphs = (_pc_quiet(arr[idx], ci_test=test, nan_policy=nan_policy, names=names, **pc_kwargs) for idx in rows)
    for g in graphs:
        directed = (g.T == 1) & (g == -1)  # g[j, i] = 1, g[i, j] = -1: i -> j
        counts[0] += directed
        counts[1] += (g == -1) & (g.T == -1)
        counts[2] += (g == 1) & (g.T == 1)
    freq = counts / num_resamples
    fdt = default_float_dtype()
    directed, undirected, bidirected = freq
    return BootstrapResult(
        edge_frequency=jax.device_put((directed + directed.T + undirected + bidirected).astype(fdt)),
        directed_frequency=jax.device_put(directed.astype(fdt)),
        undirected_frequency=jax.device_put(undirected.astype(fdt)),
        bidirected_frequency=jax.device_put(bidirected.astype(fdt)),
        num_resamples=jax.device_put(np.asarray(num_resamples, np.int32)),
        names=names,
    )
