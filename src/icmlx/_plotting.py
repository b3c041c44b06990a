"""Shared plumbing for the small matplotlib helpers each subpackage offers (``plot_*`` functions).

matplotlib is optional (the ``plot`` extra); it is imported only when a plot helper is called, and a missing
install gives a two-line error saying what to install. Every helper takes ``ax=None`` (draw on the user's axes,
else a new figure) and returns the `matplotlib.axes.Axes` it drew on, so users can restyle and save it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["require_matplotlib", "axes_or_new"]


def require_matplotlib():
    """Return `matplotlib.pyplot`, or raise an ImportError that says how to install it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - exercised only without matplotlib
        raise ImportError(
            "icmlx's plot helpers need matplotlib, which is not installed.\n"
            "Install it with: pip install 'icmlx[plot]'  (or pip install matplotlib)"
        ) from err
    return plt


def axes_or_new(ax: Any = None, **subplot_kw: Any):
    """``ax`` if given, else the axes of a new figure."""
    plt = require_matplotlib()
    if ax is not None:
        return ax
    _, ax = plt.subplots(**subplot_kw)
    return ax
