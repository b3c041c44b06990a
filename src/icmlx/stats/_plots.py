"""The figure every multiple-testing example draws: the z histogram with the rejection cutoffs (matplotlib, lazily)."""

from typing import Any

import numpy as np

from .._plotting import axes_or_new

__all__ = ["plot_rejections"]


def _cutoff(result: Any) -> float:
    """The |z| cutoff of a threshold test result (one row)."""
    from ._horseshoe import HorseshoeResult
    from ._oracle import OracleResult
    from ._relative_belief import RelativeBeliefResult

    thr = np.ravel(np.asarray(result.threshold))
    if np.ndim(result.reject) != 1:
        raise ValueError(f"plot_rejections draws one row of tests; got reject.shape={np.shape(result.reject)} "
                         "(pass one row of x to the test)")
    if thr.size != 1:
        raise ValueError(f"plot_rejections draws one row of tests; got {thr.size} thresholds (index one row first)")
    if isinstance(result, HorseshoeResult):
        return float(thr[0])  # already a cutoff on |z|
    if isinstance(result, (RelativeBeliefResult, OracleResult)):
        return float(np.sqrt(max(thr[0], 0.0)))  # a cutoff on z^2
    raise TypeError(
        "plot_rejections takes the result of relative_belief_test, bayes_oracle_test or horseshoe_test, got "
        f"{type(result).__name__}"
    )


def plot_rejections(result: Any, *, x: Any, ax: Any = None, bins: int = 60, **kwargs: Any) -> Any:
    r"""Histogram of the z-scores $x/\sigma$, rejected tests in a second colour, and the cutoffs $\pm c$.

    Works for one row of tests from `relative_belief_test`, `bayes_oracle_test` or
    `horseshoe_test` (the ``sigma`` the test used is read from the result when it has one, else 1). Needs
    matplotlib (``pip install 'icmlx[plot]'``), imported only when called.

    Args:
      result: the test result (one row: ``x`` of shape ``(n,)``).
      x: the data passed to the test, shape ``(n,)``.
      ax: matplotlib axes to draw on (default: a new figure).
      bins: number of histogram bins (shared by both groups).
      **kwargs: passed to ``ax.hist``.

    Returns:
      The `matplotlib.axes.Axes` drawn on.

    Raises:
      TypeError: a result of another kind. ValueError: a batch of rows, or ``x`` of another length.

    Examples:
      >>> import jax, matplotlib
      >>> matplotlib.use("Agg")
      >>> from icmlx.stats import plot_rejections, relative_belief_test, simulate_two_groups
      >>> z = simulate_two_groups(jax.random.key(0), 2000, p=0.05, tau2=9.0).x[0]
      >>> ax = plot_rejections(relative_belief_test(z), x=z)
      >>> len(ax.lines)   # the two cutoffs
      2
    """
    cutoff = _cutoff(result)
    xv = np.ravel(np.asarray(getattr(x, "to_numpy", lambda: x)(), dtype=np.float64))
    reject = np.ravel(np.asarray(result.reject))
    if xv.shape != reject.shape:
        raise ValueError(f"plot_rejections: x has {xv.size} values but the result has {reject.size} tests")
    sigma = getattr(result, "sigma", None)
    s = 1.0 if sigma is None else float(np.ravel(np.asarray(sigma))[0])
    z = xv / s
    ax = axes_or_new(ax)
    edges = np.histogram_bin_edges(z, bins=bins)
    ax.hist([z[~reject], z[reject]], bins=edges, stacked=True, label=["not rejected", "rejected"],
            color=["0.65", "C3"], **kwargs)
    for c in (-cutoff, cutoff):
        ax.axvline(c, color="k", linestyle="--", linewidth=1.0)
    ax.set_xlabel("z = x / sigma")
    ax.set_ylabel("count")
    ax.set_title(f"{int(reject.sum())} of {reject.size} rejected (|z| > {cutoff:.3g})")
    ax.legend()
    return ax
