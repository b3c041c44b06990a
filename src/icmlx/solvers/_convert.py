"""What users hold, turned into what the solvers use: one conversion for every entry point of ``icmlx.solvers``.

Accepted matrices: SciPy sparse in any format (csr, csc, coo, bsr, lil, dok, dia; ``sparray`` and ``spmatrix``),
``jax.experimental.sparse`` BCOO/BCSR, dense NumPy/JAX arrays, :class:`~icmlx.solvers.SparseMatrix` and
(for the Krylov solvers) lineax operators and callables. SciPy is detected by the object's module or by a
``tocoo`` method without BCOO's ``n_batch``, so it is never imported here.
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_values, is_traced
from ._sparse import SparseMatrix

__all__: list[str] = []

_ACCEPTED = ("a SciPy sparse matrix/array (any format), a jax.experimental.sparse BCOO, a dense 2-D array "
             "or an icmlx SparseMatrix")


def _module(x: Any) -> str:
    return type(x).__module__ or ""


def is_jax_sparse(x: Any) -> bool:
    """A ``jax.experimental.sparse`` matrix (BCOO, BCSR, ...)."""
    return _module(x).startswith("jax.experimental.sparse") or hasattr(x, "n_batch")


def is_scipy_sparse(x: Any) -> bool:
    """A SciPy sparse matrix or array in any format (duck-typed: scipy is not imported)."""
    if _module(x).startswith("scipy.sparse"):
        return hasattr(x, "tocoo")
    return hasattr(x, "tocoo") and not hasattr(x, "n_batch") and hasattr(x, "shape")


def _float_dtype(dtype: Any) -> Any:
    """``dtype`` if floating (canonicalised to what JAX can hold), else JAX's default float."""
    dtype = np.dtype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        raise TypeError(f"icmlx.solvers works with real matrices, got dtype {dtype}; "
                        "split a complex system into its real 2n × 2n form")
    if not np.issubdtype(dtype, np.floating):
        return jnp.result_type(float)
    return jax.dtypes.canonicalize_dtype(dtype)


def _finite(A: SparseMatrix, name: str) -> SparseMatrix:
    vals = check_values(A.vals, lambda xp, v: ~xp.isfinite(v),
                        f"{name} has NaN or Inf entries; fix or drop them before solving "
                        "(e.g. check how the matrix was assembled)")
    return A if vals is A.vals else SparseMatrix(A.rows, A.cols, vals, A.shape, A.tags)


def as_sparse_matrix(A: Any, *, name: str = "A", dtype: Any = None, square: bool = True,
                     check_finite: bool = True, tags: Any = ()) -> SparseMatrix:
    """``A`` as a :class:`SparseMatrix` (SciPy any format, BCOO/BCSR, dense, SparseMatrix).

    Integer and boolean values become JAX's default float; a given ``dtype`` casts the values.

    Raises:
      TypeError: an unsupported type (the message lists what is accepted), or complex values.
      ValueError: a non-square matrix (when ``square``), or NaN/Inf values (when ``check_finite``).
    """
    if isinstance(A, SparseMatrix):
        out = A
        if tags:
            out = out.with_tags(tags)
    elif is_jax_sparse(A):
        if type(A).__name__ != "BCOO" and hasattr(A, "to_bcoo"):  # BCSR and friends
            A = A.to_bcoo()
        data = A.data
        if not jnp.issubdtype(data.dtype, jnp.floating):
            data = data.astype(_float_dtype(data.dtype))
        if A.ndim != 2 or A.n_batch != 0 or A.n_dense != 0:
            raise ValueError(f"{name}: need a plain 2-D BCOO (no batch or dense dimensions), got "
                             f"{A.shape=}, {A.n_batch=}, {A.n_dense=}")
        out = SparseMatrix.from_coo(A.indices[:, 0], A.indices[:, 1], data, A.shape, tags=tags)
    elif is_scipy_sparse(A):
        coo = A.tocoo()
        vals = np.asarray(coo.data)
        vals = vals.astype(_float_dtype(vals.dtype), copy=False)
        out = SparseMatrix.from_coo(np.asarray(coo.row), np.asarray(coo.col), vals, coo.shape, tags=tags)
    elif isinstance(A, (np.ndarray, jax.Array)) or (hasattr(A, "__array__") and hasattr(A, "shape")):
        if is_traced(A):
            raise TypeError(f"{name}: a dense matrix traced under jax.jit cannot be converted to a sparse "
                            "matrix; convert it outside jit (SparseMatrix.from_dense) and pass that in")
        m = np.asarray(A)
        if m.ndim != 2:
            raise ValueError(f"{name} must be a 2-D matrix, got an array of shape {m.shape}; pass " + _ACCEPTED)
        r, c = np.nonzero(m)
        vals = m[r, c].astype(_float_dtype(m.dtype), copy=False)
        out = SparseMatrix.from_coo(r, c, vals, m.shape, tags=tags)
    else:
        raise TypeError(f"{name}: cannot use a {type(A).__module__}.{type(A).__name__} as a matrix; pass "
                        + _ACCEPTED)
    if dtype is not None and out.dtype != jnp.dtype(dtype):
        out = out.astype(dtype)
    if square:
        check_square(out.shape, name)
    if check_finite:
        out = _finite(out, name)
    return out


def check_square(shape: tuple[int, ...], name: str = "A") -> int:
    """``n`` of an ``n × n`` shape, else a two-line ValueError."""
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"{name} must be a square n × n matrix, got shape {tuple(shape)}.\n"
                         "Pass the system matrix itself (for least squares, solve the normal equations AᵀA x = Aᵀb).")
    return int(shape[0])


def as_scipy_csr(A: Any, *, name: str = "A", square: bool = True) -> Any:
    """``A`` as a float64 ``scipy.sparse.csr_matrix`` for the eager NumPy/SciPy set-up routines."""
    import scipy.sparse as sp  # set-up only

    if isinstance(A, SparseMatrix) or is_jax_sparse(A):
        if is_traced(A):
            raise TypeError(f"{name}: this set-up is eager (NumPy/SciPy); call it outside jax.jit")
        A = as_sparse_matrix(A, name=name, square=square).to_scipy()
    elif not is_scipy_sparse(A):
        if is_traced(A):
            raise TypeError(f"{name}: this set-up is eager (NumPy/SciPy); call it outside jax.jit")
        try:
            m = np.asarray(A)
        except Exception as err:
            raise TypeError(f"{name}: cannot use a {type(A).__name__} as a matrix; pass " + _ACCEPTED) from err
        if m.ndim != 2 or not (np.issubdtype(m.dtype, np.number) or m.dtype == bool):
            raise TypeError(f"{name}: cannot use a {type(A).__name__} of shape {m.shape} as a matrix; pass "
                            + _ACCEPTED)
        A = m
    if np.iscomplexobj(getattr(A, "data", np.zeros(0))):
        raise TypeError(f"icmlx.solvers works with real matrices, got a complex {name}")
    out = sp.csr_matrix(A, dtype=np.float64)
    if square:
        check_square(out.shape, name)
    if not np.all(np.isfinite(out.data)):
        raise ValueError(f"{name} has NaN or Inf entries; fix or drop them before the set-up")
    return out


def as_vector(b: Any, n: int | None, *, name: str = "b", dtype: Any = None, matrix: str = "A") -> jax.Array:
    """The right-hand side as a 1-D floating JAX array of length ``n`` (NaN/Inf checked on the host)."""
    if hasattr(b, "to_numpy") and not isinstance(b, (np.ndarray, jax.Array)):  # a pandas Series
        b = b.to_numpy()
    b = jnp.asarray(b) if is_traced(b) else np.asarray(b) if not isinstance(b, jax.Array) else b
    if b.ndim == 2 and 1 in b.shape:
        raise ValueError(f"{name} must be 1-D, got shape {b.shape}; pass {name}.ravel() (one right-hand side "
                         "per solve; vmap the solver for several)")
    if b.ndim != 1:
        raise ValueError(f"{name} must be a 1-D vector, got shape {b.shape}; "
                         "one right-hand side per solve (vmap the solver for several)")
    if n is not None and b.shape[0] != n:
        raise ValueError(f"{name} has length {b.shape[0]} but {matrix} is {n} × {n}.\n"
                         f"Pass a right-hand side with one entry per row of {matrix}.")
    if np.issubdtype(np.dtype(b.dtype), np.complexfloating):
        raise TypeError(f"{name} is complex ({b.dtype}); icmlx.solvers works with real systems")
    target = dtype if dtype is not None else _float_dtype(b.dtype)
    b = check_values(b, lambda xp, v: ~xp.isfinite(v),
                     f"{name} has NaN or Inf entries; fix them before solving")
    return jnp.asarray(b, target)
