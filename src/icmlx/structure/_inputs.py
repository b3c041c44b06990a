"""What users hand to `icmlx.structure.pc` / `icmlx.structure.pc_tree`, turned into what the testers need.

A pandas DataFrame gives its values and its column names (the names travel into the result, its edges, networkx
and DOT output, and can be used in `icmlx.structure.BackgroundKnowledge`); NumPy and JAX arrays pass
through. For the discrete testers, string, object, pandas-categorical and bool columns are coded to integers
``0..K-1`` by their sorted distinct values, the rule causal-learn applies to integer data (``np.unique``). Missing
cells (``NaN``, ``None``, ``pd.NA``) follow ``nan_policy``. All checks run on the host, before anything is traced.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int

from icmlx._inputs import table_values, to_device

__all__ = ["TableLike", "encode_discrete", "validate_data", "prepare_data", "resolve_names"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))



def _outside_stacklevel(frame) -> int:
    """The ``stacklevel``, counted from ``frame`` (the warning's), of the first frame outside icmlx and the
    type-checking wrappers (jaxtyping/beartype) around its functions."""
    level = 1
    while frame is not None and (
        frame.f_code.co_filename.startswith(_PACKAGE_DIR) or "beartype" in frame.f_code.co_filename
        or "jaxtyping" in frame.f_code.co_filename or "equinox" in frame.f_code.co_filename
    ):
        frame, level = frame.f_back, level + 1
    return level


#: What the structure learners accept as data: an ``(n, d)`` NumPy/JAX array or a pandas DataFrame.
TableLike = Any


def resolve_names(names: Sequence[str] | None, from_data: tuple[str, ...] | None, d: int) -> tuple[str, ...] | None:
    """The node names: ``names=`` if given (checked against ``d``), else the DataFrame's columns, else ``None``."""
    if names is None:
        return from_data
    if isinstance(names, str):
        raise TypeError(f"names must be a sequence of {d} strings, got the single string {names!r}")
    out = tuple(str(v) for v in names)
    if len(out) != d:
        raise ValueError(f"names has {len(out)} entries but the data has d={d} columns; pass one name per column")
    if len(set(out)) != d:
        dup = sorted({v for v in out if out.count(v) > 1})
        raise ValueError(f"names must be distinct, got repeated {dup}")
    return out


def display_names(names, d) -> list[str]:
    return list(names) if names is not None else [f"X{j + 1}" for j in range(d)]


def _missing(arr: np.ndarray) -> np.ndarray:
    """Cell-wise missing mask: NaN/Inf for float arrays; ``None``, float NaN, ``pd.NA``/``NaT`` in object arrays."""
    if arr.dtype.kind in "fc":
        return ~np.isfinite(arr)
    if arr.dtype.kind != "O":
        return np.zeros(arr.shape, bool)

    def one(v):
        if v is None:
            return True
        if isinstance(v, float | np.floating):
            return not np.isfinite(v)
        return type(v).__name__ in ("NAType", "NaTType")

    return np.frompyfunc(one, 1, 1)(arr).astype(bool)


def _column_key(col: np.ndarray) -> Any:
    """A hashable key equal for two columns exactly when their values are equal."""
    if col.dtype.kind == "O":
        return tuple(col.tolist())
    return np.ascontiguousarray(col).tobytes()


def _constant_columns(arr: np.ndarray) -> np.ndarray:
    """``(d,)`` bool: columns with one distinct value among their present cells."""
    miss = _missing(arr)
    out = np.zeros(arr.shape[1], bool)
    for j in range(arr.shape[1]):
        col = arr[~miss[:, j], j]
        out[j] = col.size == 0 or bool(np.all(col == col[0]))
    return out


def duplicate_groups(arr: np.ndarray) -> np.ndarray:
    """``(d,)`` int: for each column the first column with exactly the same values (itself if none); constant
    columns are their own group (a constant column is independent of everything, so it needs no grouping)."""
    arr = np.asarray(arr)
    d = arr.shape[1]
    const = _constant_columns(arr)
    cols_t = np.ascontiguousarray(arr.T)
    seen: dict[Any, int] = {}
    group = np.arange(d)
    for j in range(d):  # hashing column bytes: O(nd), unlike a lexicographic unique over rows of length n
        if const[j]:
            continue
        key = _column_key(cols_t[j])
        if key in seen:
            group[j] = seen[key]
        else:
            seen[key] = j
    return group


def validate_data(data, *, nan_policy: str = "raise", names=None) -> np.ndarray:
    """Host-side checks: NaN/Inf (or missing cells) by ``nan_policy``; constant and duplicated columns warned about
    by name.

    A constant column is independent of every other variable (each of its tests gives ``p = 1``), so it ends up
    isolated; of a duplicated pair each column determines the other, so conditioning on one makes the other
    independent of everything, and the pair stays adjacent (causal-learn's χ²/G² give the same).

    Returns the NumPy array, with incomplete rows dropped under ``nan_policy="listwise"`` (kept under
    ``"testwise"``, where each test uses the rows complete in its own variables).
    """
    arr = np.asarray(data)
    if arr.ndim != 2:
        raise ValueError(f"data must be (n, d), got {arr.shape=}")
    n, d = arr.shape
    names = display_names(names, d)
    if nan_policy not in ("raise", "listwise", "testwise"):
        raise ValueError(f"nan_policy must be 'raise', 'listwise' or 'testwise', got {nan_policy=}")
    miss = _missing(arr)
    bad_rows = miss.any(axis=1)
    if bad_rows.any():
        if nan_policy == "raise":
            cols = [names[j] for j in range(d) if miss[:, j].any()]
            raise ValueError(f"data has NaN/Inf in variables {cols}; pass nan_policy='listwise' to drop those rows, "
                             "or 'testwise' to drop them test by test")
        if nan_policy == "listwise":
            arr = arr[~bad_rows]
    if arr.shape[0] < 2:
        raise ValueError(f"need at least 2 complete samples, got {arr.shape[0]}")
    const = _constant_columns(arr)
    stack = _outside_stacklevel(sys._getframe())
    if const.any():
        warnings.warn(
            f"constant columns (no variation): {[names[j] for j in np.flatnonzero(const)]}; each is independent of "
            "every other variable, so it is left without edges",
            UserWarning, stacklevel=stack,
        )
    group = duplicate_groups(arr) if not miss.any() or nan_policy == "listwise" else np.arange(d)
    dup = [(names[int(group[j])], names[j]) for j in range(d) if group[j] != j]
    if dup:
        warnings.warn(
            f"duplicated columns: {dup}; each determines the other, so conditioning on one makes the other "
            "independent of everything else (the pair stays adjacent). Drop one of each pair unless that is meant",
            UserWarning, stacklevel=stack,
        )
    return arr


def column_codes(col: np.ndarray, name: str) -> np.ndarray:
    """``0..K-1`` codes of one column by its sorted distinct values."""
    try:
        return np.unique(col, return_inverse=True)[1].reshape(-1)
    except TypeError:  # mixed types in an object column (e.g. 1 and "a"): order by their text
        return np.unique(col.astype(str), return_inverse=True)[1].reshape(-1)
    except Exception as err:  # pragma: no cover - unorderable exotic objects
        raise TypeError(f"could not code column {name!r} to categories ({err}); pass integer codes") from err


def encode_discrete(
    data: Int[ArrayLike, "n d"] | Float[ArrayLike, "n d"] | TableLike,
) -> Int[Array, "n d"]:
    """Re-code every column to ``0..K_j-1`` by sorted unique values (causal-learn's ``np.unique`` rule).

    Integer, integral-float, bool, string, object and pandas-categorical columns are all accepted (a DataFrame
    is coded column by column), so category labels such as ``"yes"``/``"no"`` need no manual coding.

    Args:
      data: ``(n, d)`` array or DataFrame of categories.

    Returns:
      ``(n, d)`` int32 codes.

    Raises:
      ValueError: if a float value is not integral, or a cell is missing.

    Examples:
      >>> import jax.numpy as jnp
      >>> import numpy as np
      >>> from icmlx.structure import encode_discrete
      >>> encode_discrete(jnp.array([[3, 7], [5, 7], [3, 9]])).tolist()
      [[0, 0], [1, 0], [0, 1]]
      >>> encode_discrete(np.array([["no", "b"], ["yes", "a"], ["no", "a"]])).tolist()
      [[0, 1], [1, 0], [0, 0]]
    """
    return to_device(encode_discrete_host(data), np.int32)


def encode_discrete_host(data, names=None) -> np.ndarray:
    """`encode_discrete`'s codes as a NumPy ``(n, d)`` int array (same checks and messages; ``names``
    name the columns in errors when ``data`` is already an array)."""
    values, from_data = table_values(data)
    arr = np.asarray(values)
    if arr.ndim != 2:
        raise ValueError(f"data must be (n, d), got {arr.shape=}")
    names = display_names(from_data if names is None else names, arr.shape[1])
    miss = _missing(arr)
    if miss.any():
        cols = [names[j] for j in range(arr.shape[1]) if miss[:, j].any()]
        raise ValueError(f"data has missing values in variables {cols}; drop those rows (or nan_policy='listwise')")
    if arr.dtype.kind == "f":
        nonint = [names[j] for j in range(arr.shape[1]) if not np.all(arr[:, j] == np.round(arr[:, j]))]
        if nonint:
            raise ValueError(
                f"discrete CI tests need integer-valued data; non-integer columns {nonint}. "
                "Use ci_test='fisherz' for continuous data, or bin it first"
            )
    elif arr.dtype.kind == "O":
        _check_no_measurements(arr, names)
    elif arr.dtype.kind not in "iubUS":
        raise TypeError(f"discrete CI tests need integer or categorical data, got {arr.dtype=}")
    cols = [column_codes(arr[:, j], names[j]) for j in range(arr.shape[1])]
    return np.stack(cols, axis=1)


def _is_measurement(v) -> bool:
    """A non-integral real number (a float cell that a category coding would make its own category)."""
    return isinstance(v, float | np.floating) and not isinstance(v, bool) and np.isfinite(v) and v != round(v)


def _measurement_columns(arr: np.ndarray, names) -> list[str]:
    """Names of the object columns that hold non-integral numbers."""
    test = np.frompyfunc(_is_measurement, 1, 1)
    return [names[j] for j in range(arr.shape[1]) if test(arr[:, j]).astype(bool).any()]


def _check_no_measurements(arr: np.ndarray, names) -> None:
    """Refuse a mixed table (text and non-integer numbers) for the discrete tests, naming the numeric columns:
    coded as categories, every distinct float would be its own category."""
    bad = _measurement_columns(arr, names)
    if bad:
        raise ValueError(
            f"columns {bad} hold non-integer numbers (measurements), and the discrete CI tests would make every "
            "distinct value its own category. Use ci_test='dg' (DegenerateGaussian, the test for tables that mix "
            "categorical and continuous columns; pc's default for such a DataFrame), or bin them first (pandas.cut)"
        )


_FEW = 5


def _few_levels(arr: np.ndarray) -> bool:
    """Whether every column takes at most ``_FEW`` distinct values (category codes, not measurements)."""
    return all(np.unique(arr[:, j]).size <= _FEW for j in range(arr.shape[1]))


def _as_float(arr: np.ndarray, names, ci_test: str) -> np.ndarray:
    if arr.dtype.kind in "fiub":
        return arr.astype(np.float64) if arr.dtype.kind != "f" else arr
    bad = []
    out = np.empty(arr.shape, np.float64)
    for j in range(arr.shape[1]):
        try:
            out[:, j] = arr[:, j].astype(np.float64)
        except (TypeError, ValueError):
            bad.append(names[j])
    if bad:
        raise TypeError(
            f"ci_test={ci_test!r} needs numeric data; columns {bad} hold text or categories. "
            "Use ci_test='chisq' or 'gsq' for categorical data, or code those columns as numbers"
        )
    return out


def prepare_data(
    data, *, ci_test, nan_policy: str = "raise", names: Sequence[str] | None = None
) -> tuple[np.ndarray, tuple[str, ...] | None]:
    """``(array, names)`` for a tester: DataFrame names kept, rows checked, categories coded for discrete tests.

    ``ci_test`` is the tester object (`._citests._testers.AbstractCITest`); its ``categorical`` flag says how the
    data are prepared. A continuous tester gets float data (bool and integer columns are cast; text columns raise a
    ``TypeError`` that says which columns and what to use instead); a categorical one gets the values as they
    are, for its own coding, after refusing columns of non-integer numbers (by name: coded as categories, every
    distinct float would be its own category). A tester with ``assumes_gaussian`` warns on integer codes of few
    levels.
    """
    test, ci_test = ci_test, ci_test.name
    values, from_data = table_values(data)
    arr = np.asarray(values)
    if arr.ndim != 2:
        raise ValueError(f"data must be an (n, d) array or DataFrame, got shape {arr.shape}")
    if arr.dtype.kind == "c":
        raise TypeError(f"data must be real, got complex {arr.dtype}; pass the real part (or split it into columns)")
    names = resolve_names(names, from_data, arr.shape[1])
    shown = display_names(names, arr.shape[1])
    continuous = not test.categorical
    if arr.dtype.kind == "O" and continuous:
        # convert before the checks, so a column of numbers stored as objects is checked as numbers
        miss = _missing(arr)
        filled = np.where(miss, np.nan, arr)
        arr = _as_float(filled, shown, ci_test)
    arr = validate_data(arr, nan_policy=nan_policy, names=shown)
    if test.assumes_gaussian and arr.dtype.kind in "iub" and _few_levels(arr):
        warnings.warn(
            f"data holds integer codes with at most {_FEW} distinct values per column, but ci_test={ci_test!r} assumes "
            "continuous (Gaussian) data; for categorical data use pc(..., ci_test='chisq' or 'gsq')",
            UserWarning,
            stacklevel=_outside_stacklevel(sys._getframe()),
        )
    if continuous:
        arr = _as_float(arr, shown, ci_test)
    elif arr.dtype.kind == "f":
        nonint = [shown[j] for j in range(arr.shape[1])
                  if not np.all(np.isnan(arr[:, j]) | (arr[:, j] == np.round(arr[:, j])))]
        if nonint:
            raise ValueError(f"ci_test={ci_test!r} needs integer-valued (categorical) data; columns {nonint} hold "
                             "non-integer numbers. Use ci_test='fisherz' for continuous data, or bin them first")
    elif arr.dtype.kind == "O":
        _check_no_measurements(arr, shown)
    return arr, names
