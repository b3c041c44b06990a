"""What the result records of `icmlx.stats` share: labels carried from a pandas Series, short reprs (private)."""

from typing import Any, ClassVar

import equinox as eqx
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


class TestDecisions(eqx.Module):
    """Base of the decision records (``reject`` over the last axis, labels from a pandas Series): the shared
    ``num_tests``, ``labels`` and ``rejected_labels`` properties and the short repr.

    Subclasses declare the fields ``reject`` and ``_labels`` (static), and list in ``_repr_fields`` what their
    repr shows after ``num_tests`` and ``num_rejected``.
    """

    _repr_fields: ClassVar[tuple[str, ...]] = ()

    @property
    def num_tests(self) -> int:
        """Number of tests per row (the length of the last axis)."""
        return self.reject.shape[-1]

    @property
    def labels(self) -> Any:
        """The pandas index of the Series passed in, or ``None``."""
        return None if self._labels is None else self._labels.index

    @property
    def rejected_labels(self) -> Any:
        """Labels of the rejected tests (a pandas Index for Series input), else their positions (per row)."""
        return rejected_labels(self.reject, self._labels)

    def __repr__(self) -> str:
        return summary_repr(self, list(self._repr_fields))
