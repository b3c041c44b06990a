"""Sparse matrices in COO form as lineax operators, with segment-sum matvecs, and the conversion of what users hold."""

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
from jaxtyping import Array, Inexact, Int

from .._buckets import size_bucket
from .._checks import check_int, check_values, default_float_dtype, is_traced

__all__ = ["SparseMatrix", "bucket_size"]


def bucket_size(n: int, *, minimum: int = 64) -> int:
    """Padded size bucket: the next power of two, or the next multiple of a quarter power of two.

    Buckets are ``2^k`` and ``1.25, 1.5, 1.75 × 2^k``, so padding wastes at most 25% and a new matrix of
    similar size reuses the compiled solver.

    Args:
      n: the size to pad (a Python int).
      minimum: the smallest bucket.

    Returns:
      The bucket, an int ``>= n``.

    Examples:
      >>> from icmlx.solvers import bucket_size
      >>> bucket_size(961), bucket_size(1100), bucket_size(65025)
      (1024, 1280, 65536)
    """
    n = int(n) if isinstance(n, float) and n.is_integer() else n  # a whole float, e.g. from n ** 2 / 4
    n = check_int(n, "n", where="bucket_size", minimum=0)
    minimum = check_int(minimum, "minimum", where="bucket_size", minimum=1)
    return size_bucket(n, minimum=minimum, steps=4)


def _frozen_tags(tags: Any) -> frozenset:
    """A tag, an iterable of tags or None as a frozenset (the form lineax keeps tags in)."""
    if tags is None:
        return frozenset()
    if isinstance(tags, frozenset):
        return tags
    if isinstance(tags, (set, list, tuple)):
        return frozenset(tags)
    return frozenset([tags])


class SparseMatrix(lx.AbstractLinearOperator):
    r"""A square or rectangular sparse matrix in COO form, usable as a ``lineax`` operator.

    $$
    (A x)_i = \sum_{e:\ \mathrm{rows}_e = i} \mathrm{vals}_e\, x_{\mathrm{cols}_e}
    $$

    computed with ``jax.ops.segment_sum`` (duplicates are summed, as in COO). Padding entries may use
    value 0 anywhere.

    Attributes:
      rows: ``int32[nnz]`` row indices.
      cols: ``int32[nnz]`` column indices.
      vals: ``float[nnz]`` or ``complex[nnz]`` values (float32, float64, complex64 or complex128).
      shape: static ``(n_rows, n_cols)``.
      tags: static ``frozenset`` of lineax tags (``lx.symmetric_tag``, ``lx.positive_semidefinite_tag``, ...)
        that ``lx.is_symmetric`` & co. report, so lineax's own solvers (``lx.CG`` needs a positive
        semidefinite tag) accept the matrix. Tags are promises the user makes; they are not checked.

    Examples:
      >>> import jax.numpy as jnp, lineax as lx
      >>> from icmlx.solvers import SparseMatrix
      >>> A = SparseMatrix.from_dense(jnp.array([[2.0, -1.0], [-1.0, 2.0]]))
      >>> A.mv(jnp.array([1.0, 1.0]))
      Array([1., 1.], dtype=float32)
      >>> A
      SparseMatrix(shape=(2, 2), nnz=4, dtype=float32)
      >>> op = A.with_tags(lx.positive_semidefinite_tag)
      >>> lx.linear_solve(op, jnp.array([1.0, 1.0]), lx.CG(rtol=1e-6, atol=1e-6)).value
      Array([1., 1.], dtype=float32)
    """

    rows: Int[Array, " nnz"]
    cols: Int[Array, " nnz"]
    vals: Inexact[Array, " nnz"]
    shape: tuple[int, int] = eqx.field(static=True)
    tags: frozenset = eqx.field(static=True, default=frozenset(), converter=_frozen_tags)

    def __check_init__(self):
        if len(self.shape) != 2 or min(self.shape) < 0:
            raise ValueError(f"SparseMatrix shape must be (n_rows, n_cols) with sizes >= 0, got {self.shape=}")
        if not (self.rows.shape == self.cols.shape == self.vals.shape) or self.vals.ndim != 1:
            raise ValueError(
                "SparseMatrix rows/cols/vals must be 1-D of equal length, got "
                f"{self.rows.shape=}, {self.cols.shape=}, {self.vals.shape=}"
            )

    # -- constructors -------------------------------------------------------------------------------
    @classmethod
    def from_coo(cls, rows: Any, cols: Any, vals: Any, shape: tuple[int, int], *,
                 tags: Any = ()) -> "SparseMatrix":
        """Build from COO triplets (NumPy or JAX arrays); ``tags`` as in the class docstring."""
        vals = jnp.asarray(vals)
        if not jnp.issubdtype(vals.dtype, jnp.inexact):
            raise TypeError(f"SparseMatrix values must be floating or complex, got {vals.dtype=}; "
                            "cast them (e.g. vals.astype(float)) first")
        shape = (int(shape[0]), int(shape[1]))
        rows, cols = jnp.asarray(rows, jnp.int32), jnp.asarray(cols, jnp.int32)
        if rows.shape != cols.shape or rows.shape != vals.shape:
            raise ValueError(f"SparseMatrix.from_coo: rows, cols and vals must have the same length, got "
                             f"{rows.shape}, {cols.shape} and {vals.shape}")
        return _in_range(cls(rows, cols, vals, shape, tags), "SparseMatrix.from_coo")

    @classmethod
    def from_dense(cls, matrix: Any, *, tags: Any = ()) -> "SparseMatrix":
        """Build from a dense 2-D array, keeping its nonzeros (eager; not jit-traceable)."""
        m = np.asarray(matrix)
        if m.ndim != 2:
            raise ValueError(f"from_dense needs a 2-D matrix, got {m.shape=}")
        r, c = np.nonzero(m)
        return cls.from_coo(r, c, jnp.asarray(matrix)[r, c], m.shape, tags=tags)

    @classmethod
    def from_bcoo(cls, matrix: Any, *, tags: Any = ()) -> "SparseMatrix":
        """Build from a ``jax.experimental.sparse.BCOO`` (or BCSR) matrix (2-D, no batch dimensions)."""
        return as_sparse_matrix(matrix, name="matrix", square=False, check_finite=False, tags=tags,
                                allow_complex=True)

    @classmethod
    def from_scipy(cls, matrix: Any, dtype: Any = None, *, tags: Any = ()) -> "SparseMatrix":
        """Build from a SciPy sparse matrix or array in any format (csr, csc, coo, bsr, lil, dok, dia).

        Integer values become JAX's default float; ``dtype`` casts the values. SciPy is not imported (any
        object with ``.tocoo()`` works)."""
        return as_sparse_matrix(matrix, name="matrix", dtype=dtype, square=False, check_finite=False, tags=tags,
                                allow_complex=True)

    @classmethod
    def from_any(cls, matrix: Any, *, dtype: Any = None, tags: Any = ()) -> "SparseMatrix":
        """Build from what users hold: SciPy sparse (any format), BCOO/BCSR, a dense array, or a SparseMatrix.

        Args:
          matrix: the matrix (concrete, not traced, unless it is already a ``SparseMatrix``).
          dtype: cast the values (default: keep a floating dtype, JAX's default float otherwise).
          tags: lineax tags (see the class docstring).

        Returns:
          A ``SparseMatrix``.

        Raises:
          TypeError: an unsupported type (the message lists what is accepted).

        Examples:
          >>> import numpy as np, scipy.sparse as sp
          >>> from icmlx.solvers import SparseMatrix
          >>> SparseMatrix.from_any(sp.eye(3, format="lil")).shape
          (3, 3)
        """
        return as_sparse_matrix(matrix, name="matrix", dtype=dtype, square=False, check_finite=False, tags=tags,
                                allow_complex=True)

    def with_tags(self, tags: Any) -> "SparseMatrix":
        """The same matrix carrying ``tags`` (a lineax tag or an iterable of them) in addition to its own."""
        return SparseMatrix(self.rows, self.cols, self.vals, self.shape, self.tags | _frozen_tags(tags))

    def to_bcoo(self) -> Any:
        """Return the same matrix as a ``jax.experimental.sparse.BCOO`` (imported lazily: it pulls scipy)."""
        from jax.experimental import sparse as jsparse

        idx = jnp.stack([self.rows, self.cols], axis=1)
        return jsparse.BCOO((self.vals, idx), shape=self.shape)

    def to_scipy(self) -> Any:
        """Return a ``scipy.sparse.csr_array`` copy (imports scipy lazily; not for traced code)."""
        import scipy.sparse as sp

        return sp.coo_array((np.asarray(self.vals), (np.asarray(self.rows), np.asarray(self.cols))),
                            shape=self.shape).tocsr()

    # -- algebra ------------------------------------------------------------------------------------
    @property
    def dtype(self):
        return self.vals.dtype

    @property
    def nnz(self) -> int:
        return int(self.vals.shape[0])

    def matvec(self, x: Inexact[Array, " m"]) -> Inexact[Array, " n"]:
        """``A @ x`` via a segment sum over the COO entries."""
        _check_length(x, self.shape[1], "SparseMatrix.mv")
        return jax.ops.segment_sum(self.vals * x[self.cols], self.rows,
                                   num_segments=self.shape[0])

    def rmatvec(self, x: Inexact[Array, " n"]) -> Inexact[Array, " m"]:
        """``Aᵀ @ x`` via a segment sum over the COO entries."""
        _check_length(x, self.shape[0], "SparseMatrix.rmatvec")
        return jax.ops.segment_sum(self.vals * x[self.rows], self.cols,
                                   num_segments=self.shape[1])

    def diagonal(self) -> Inexact[Array, " n"]:
        """The main diagonal (duplicates summed)."""
        n = min(self.shape)
        on = self.rows == self.cols
        return jax.ops.segment_sum(jnp.where(on, self.vals, 0.0), jnp.where(on, self.rows, 0),
                                   num_segments=n)

    def astype(self, dtype: Any) -> "SparseMatrix":
        """Same pattern with values cast to ``dtype``."""
        return SparseMatrix(self.rows, self.cols, self.vals.astype(dtype), self.shape, self.tags)

    def __repr__(self) -> str:
        tags = f", tags={sorted(str(t) for t in self.tags)}" if self.tags else ""
        try:
            dtype = jnp.dtype(self.vals.dtype).name
        except TypeError:  # pragma: no cover - a non-array leaf (e.g. inside a tree transform)
            dtype = "?"
        return f"SparseMatrix(shape={self.shape}, nnz={self.vals.shape[0]}, dtype={dtype}{tags})"

    # -- lineax operator interface ------------------------------------------------------------------
    def mv(self, vector):
        return self.matvec(vector)

    def as_matrix(self) -> Inexact[Array, "n m"]:
        return jnp.zeros(self.shape, self.vals.dtype).at[self.rows, self.cols].add(self.vals)

    def transpose(self) -> "SparseMatrix":
        return SparseMatrix(self.cols, self.rows, self.vals, (self.shape[1], self.shape[0]),
                            lx.transpose_tags(self.tags))

    def in_structure(self):
        return jax.ShapeDtypeStruct((self.shape[1],), self.vals.dtype)

    def out_structure(self):
        return jax.ShapeDtypeStruct((self.shape[0],), self.vals.dtype)


def _check_length(x: Any, n: int, where: str) -> None:
    """A matrix-vector product needs a vector of the matching length (a gather would clamp silently)."""
    if jnp.shape(x) != (n,):
        raise ValueError(f"{where}: x must be a vector of length {n}, got shape {jnp.shape(x)}")


def _in_range(A: SparseMatrix, where: str) -> SparseMatrix:
    """``A`` with its indices checked to lie in its shape (an index outside would be dropped or clamped
    silently by the segment sum and the gather of a product)."""
    n, m = A.shape
    msg = (f"{where}: row indices must lie in [0, {n}) and column indices in [0, {m}) for shape {A.shape}; "
           "fix the indices or the shape")
    rows = check_values(A.rows, lambda xp, r: (r < 0) | (r >= n), msg)
    cols = check_values(A.cols, lambda xp, c: (c < 0) | (c >= m), msg)
    return A if rows is A.rows and cols is A.cols else SparseMatrix(rows, cols, A.vals, A.shape, A.tags)


@lx.linearise.register(SparseMatrix)
def _(operator):
    return operator


@lx.materialise.register(SparseMatrix)
def _(operator):
    return operator


@lx.diagonal.register(SparseMatrix)
def _(operator):
    return operator.diagonal()


def _tagged(*wanted):
    return lambda operator: any(t in operator.tags for t in wanted)


# A structural property holds exactly when the user tagged it (lineax's own convention for matrix operators):
# positive/negative semidefinite imply symmetric (real values), diagonal implies symmetric and (tri)banded.
lx.is_symmetric.register(SparseMatrix)(_tagged(lx.symmetric_tag, lx.diagonal_tag, lx.positive_semidefinite_tag,
                                                lx.negative_semidefinite_tag))
lx.is_diagonal.register(SparseMatrix)(_tagged(lx.diagonal_tag))
lx.is_tridiagonal.register(SparseMatrix)(_tagged(lx.tridiagonal_tag, lx.diagonal_tag))
lx.is_lower_triangular.register(SparseMatrix)(_tagged(lx.lower_triangular_tag, lx.diagonal_tag))
lx.is_upper_triangular.register(SparseMatrix)(_tagged(lx.upper_triangular_tag, lx.diagonal_tag))
lx.is_positive_semidefinite.register(SparseMatrix)(_tagged(lx.positive_semidefinite_tag))
lx.is_negative_semidefinite.register(SparseMatrix)(_tagged(lx.negative_semidefinite_tag))
lx.has_unit_diagonal.register(SparseMatrix)(_tagged(lx.unit_diagonal_tag))


# -- conversion of what users hold (used by every entry point through ._convert) ------------------------------
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


COMPLEX_ENTRY_POINTS = ("solve, amg_setup, GRANS, cg, gmres and bicgstab (with SparseMatrix or any matrix they "
                        "accept)")


def _float_dtype(dtype: Any, allow_complex: bool = False) -> Any:
    """``dtype`` if floating (or complex, with ``allow_complex``), canonicalised to what JAX can hold, else JAX's
    default float."""
    dtype = np.dtype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        if allow_complex:
            return jax.dtypes.canonicalize_dtype(dtype)
        raise TypeError(f"this entry point works with real matrices, got dtype {dtype}; complex systems are "
                        f"solved by {COMPLEX_ENTRY_POINTS}")
    if not np.issubdtype(dtype, np.floating):
        return default_float_dtype()
    return jax.dtypes.canonicalize_dtype(dtype)


def _finite(A: SparseMatrix, name: str) -> SparseMatrix:
    vals = check_values(A.vals, lambda xp, v: ~xp.isfinite(v),
                        f"{name} has NaN or Inf entries; fix or drop them before solving "
                        "(e.g. check how the matrix was assembled)")
    return A if vals is A.vals else SparseMatrix(A.rows, A.cols, vals, A.shape, A.tags)


def as_sparse_matrix(A: Any, *, name: str = "A", dtype: Any = None, square: bool = True,
                     check_finite: bool = True, tags: Any = (), allow_complex: bool = False) -> SparseMatrix:
    """``A`` as a `SparseMatrix` (SciPy any format, BCOO/BCSR, dense, SparseMatrix).

    Integer and boolean values become JAX's default float; a given ``dtype`` casts the values. Complex values are
    kept with ``allow_complex`` (the entry points that solve complex systems), else refused.

    Raises:
      TypeError: an unsupported type (the message lists what is accepted), or complex values.
      ValueError: a non-square matrix (when ``square``), or NaN/Inf values (when ``check_finite``).
    """
    if isinstance(A, SparseMatrix):
        if not allow_complex:
            _float_dtype(A.vals.dtype)  # (refuses complex values)
        out = _in_range(A, name)
        if tags:
            out = out.with_tags(tags)
    elif is_jax_sparse(A):
        if type(A).__name__ != "BCOO" and hasattr(A, "to_bcoo"):  # BCSR and friends
            A = A.to_bcoo()
        data = A.data
        if not jnp.issubdtype(data.dtype, jnp.floating):
            data = data.astype(_float_dtype(data.dtype, allow_complex))
        if A.ndim != 2 or A.n_batch != 0 or A.n_dense != 0:
            raise ValueError(f"{name}: need a plain 2-D BCOO (no batch or dense dimensions), got "
                             f"{A.shape=}, {A.n_batch=}, {A.n_dense=}")
        r, c = A.indices[:, 0], A.indices[:, 1]
        inside = (r >= 0) & (r < A.shape[0]) & (c >= 0) & (c < A.shape[1])  # outside: BCOO padding, no entry
        out = SparseMatrix.from_coo(jnp.where(inside, r, 0), jnp.where(inside, c, 0),
                                    jnp.where(inside, data, jnp.zeros((), data.dtype)), A.shape, tags=tags)
    elif is_scipy_sparse(A):
        coo = A.tocoo()
        vals = np.asarray(coo.data)
        vals = vals.astype(_float_dtype(vals.dtype, allow_complex), copy=False)
        out = SparseMatrix.from_coo(np.asarray(coo.row), np.asarray(coo.col), vals, coo.shape, tags=tags)
    elif isinstance(A, (np.ndarray, jax.Array)) or (hasattr(A, "__array__") and hasattr(A, "shape")):
        if is_traced(A):
            raise TypeError(f"{name}: a dense matrix traced under jax.jit cannot be converted to a sparse "
                            "matrix; convert it outside jit (SparseMatrix.from_dense) and pass that in")
        m = np.asarray(A)
        if m.ndim != 2:
            raise ValueError(f"{name} must be a 2-D matrix, got an array of shape {m.shape}; pass " + _ACCEPTED)
        r, c = np.nonzero(m)
        vals = m[r, c].astype(_float_dtype(m.dtype, allow_complex), copy=False)
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
