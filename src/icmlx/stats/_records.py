"""What the result records of :mod:`icmlx.stats` share: labels carried from a pandas Series, short reprs (private)."""

from typing import Any

import jax
import numpy as np

from .._repr import record_repr

__all__: list[str] = []


def rejected_labels(reject: Any, labels: Any) -> Any:
    """The labels (Series index) of the rejected tests, or their positions when the input had no labels.

    One row: a pandas Index (labels) or an int array (positions). A batch of rows: a list with one per row.
    """
    rej = np.asarray(reject)
    if rej.ndim == 1:
        return labels.index[rej] if labels is not None else np.flatnonzero(rej)
    return [np.flatnonzero(r) for r in rej.reshape(-1, rej.shape[-1])]


def summary_repr(obj: Any, fields: list[str]) -> str:
    """``Name(num_tests=n, num_rejected=..., <fields>)``; arrays by value when small, else dtype and shape."""
    if isinstance(obj.reject, jax.core.Tracer):
        return record_repr(obj, ["reject", *fields])
    return record_repr(obj, ["num_tests", "num_rejected", *fields])
