"""Plot helpers for ``icmlx.solvers`` results (matplotlib, imported only when a helper is called)."""

from collections.abc import Mapping
from typing import Any

import numpy as np

from .._plotting import axes_or_new

__all__ = ["plot_residuals"]


def _curve(solution: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, relative residuals)`` of one solution's recorded history (its finite prefix)."""
    stats = getattr(solution, "stats", None)
    if not isinstance(stats, Mapping) or "residual_history" not in stats:
        raise ValueError(f"plot_residuals needs a LinearSolution with stats['residual_history'] (from cg, gmres, "
                         f"bicgstab or GRANS.solve), got {type(solution).__name__}")
    hist = np.asarray(stats["residual_history"], dtype=np.float64)
    if hist.ndim != 1:
        raise ValueError(f"plot_residuals draws one solve at a time; this history has shape {hist.shape} "
                         "(a vmapped solve): pass one of them, e.g. jax.tree.map(lambda x: x[0], sol)")
    finite = np.nonzero(np.isfinite(hist))[0]
    hist = hist[: finite[-1] + 1] if finite.size else hist[:0]
    steps = int(np.asarray(stats.get("num_steps", hist.size - 1)))
    # a history with fewer entries than steps: spread the entries over its num_steps matrix-vector products
    stride = steps // (hist.size - 1) if hist.size > 1 and steps >= hist.size - 1 else 1
    return np.arange(hist.size) * stride, hist


def plot_residuals(solution: Any, *, ax: Any = None, rtol: float | None = None, **kwargs: Any):
    r"""Draw the relative residual $\|r_k\|_2 / \|b\|_2$ of a solve against the step, on a log scale.

    Uses ``stats["residual_history"]``, which every solver of ``icmlx.solvers`` records in a fixed-size buffer
    of its loop state (``max_steps + 1`` entries, NaN after the last step): the true residual for G-RANS and
    GMRES (its least-squares residual per step, the true one at the end of each restart cycle), the recursive one
    for CG and BiCGStab (true at the residual replacement that confirms convergence).

    Args:
      solution: a `LinearSolution`, or a mapping ``{label: solution}`` to compare
        several solves on one axes.
      ax: the matplotlib axes to draw on (default: a new figure).
      rtol: if given, a dashed horizontal line at this tolerance.
      **kwargs: passed to ``ax.semilogy`` (e.g. ``label=``, ``color=``).

    Returns:
      The `matplotlib.axes.Axes`.

    Raises:
      ImportError: matplotlib is not installed (``pip install 'icmlx[plot]'``).
      ValueError: a solution without a residual history, or a batched one.

    Examples:
      >>> import matplotlib; matplotlib.use("Agg")
      >>> import numpy as np, scipy.sparse as sp
      >>> from icmlx.solvers import cg, plot_residuals
      >>> A = sp.diags([-np.ones(49), 2.0 * np.ones(50), -np.ones(49)], [-1, 0, 1])
      >>> ax = plot_residuals(cg(A, np.ones(50)), rtol=1e-5)
      >>> len(ax.lines)  # the history and the tolerance line
      2
    """
    ax = axes_or_new(ax)
    items = list(solution.items()) if isinstance(solution, Mapping) else [(kwargs.pop("label", None), solution)]
    for label, sol in items:
        x, y = _curve(sol)
        ax.semilogy(x, y, label=label, **kwargs)
    if rtol is not None:
        ax.axhline(rtol, color="k", lw=0.8, ls="--", label="rtol")
    ax.set_xlabel("step")
    ax.set_ylabel(r"relative residual $\|r\|/\|b\|$")
    if any(label is not None for label, _ in items):
        ax.legend()
    return ax
