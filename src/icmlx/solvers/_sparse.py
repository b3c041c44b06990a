"""Sparse matrices in COO form as lineax operators, with segment-sum matvecs."""

import math
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
from jaxtyping import Array, Float, Int

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
    if n < 0:
        raise ValueError(f"bucket_size needs a non-negative size, got {n=}")
    if n <= minimum:
        return minimum
    k = 2 ** (math.ceil(math.log2(n)) - 1)
    for frac in (4, 5, 6, 7, 8):
        b = k * frac // 4
        if b >= n:
            return b
    return 2 * k  # pragma: no cover


class SparseMatrix(lx.AbstractLinearOperator):
    r"""A square or rectangular sparse matrix in COO form, usable as a ``lineax`` operator.

    .. math:: (A x)_i = \sum_{e:\ \mathrm{rows}_e = i} \mathrm{vals}_e\, x_{\mathrm{cols}_e}

    computed with ``jax.ops.segment_sum`` (duplicates are summed, as in COO). Padding entries may use
    value 0 anywhere.

    Attributes:
      rows: ``int32[nnz]`` row indices.
      cols: ``int32[nnz]`` column indices.
      vals: ``float[nnz]`` values (float32 or float64).
      shape: static ``(n_rows, n_cols)``.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.solvers import SparseMatrix
      >>> A = SparseMatrix.from_dense(jnp.array([[2.0, -1.0], [-1.0, 2.0]]))
      >>> A.mv(jnp.array([1.0, 1.0]))
      Array([1., 1.], dtype=float32)
    """

    rows: Int[Array, " nnz"]
    cols: Int[Array, " nnz"]
    vals: Float[Array, " nnz"]
    shape: tuple[int, int] = eqx.field(static=True)

    def __check_init__(self):
        if len(self.shape) != 2:
            raise ValueError(f"SparseMatrix shape must be (n_rows, n_cols), got {self.shape=}")
        if not (self.rows.shape == self.cols.shape == self.vals.shape) or self.vals.ndim != 1:
            raise ValueError(
                "SparseMatrix rows/cols/vals must be 1-D of equal length, got "
                f"{self.rows.shape=}, {self.cols.shape=}, {self.vals.shape=}"
            )

    # -- constructors -------------------------------------------------------------------------------
    @classmethod
    def from_coo(cls, rows: Any, cols: Any, vals: Any, shape: tuple[int, int]) -> "SparseMatrix":
        """Build from COO triplets (NumPy or JAX arrays)."""
        vals = jnp.asarray(vals)
        if not jnp.issubdtype(vals.dtype, jnp.floating):
            raise TypeError(f"SparseMatrix values must be floating, got {vals.dtype=}")
        return cls(jnp.asarray(rows, jnp.int32), jnp.asarray(cols, jnp.int32), vals,
                   (int(shape[0]), int(shape[1])))

    @classmethod
    def from_dense(cls, matrix: Any) -> "SparseMatrix":
        """Build from a dense 2-D array, keeping its nonzeros (eager; not jit-traceable)."""
        m = np.asarray(matrix)
        if m.ndim != 2:
            raise ValueError(f"from_dense needs a 2-D matrix, got {m.shape=}")
        r, c = np.nonzero(m)
        return cls.from_coo(r, c, jnp.asarray(matrix)[r, c], m.shape)

    @classmethod
    def from_bcoo(cls, matrix: Any) -> "SparseMatrix":
        """Build from a ``jax.experimental.sparse.BCOO`` matrix (2-D, no batch dimensions)."""
        if matrix.ndim != 2 or matrix.n_batch != 0 or matrix.n_dense != 0:
            raise ValueError(f"from_bcoo needs a plain 2-D BCOO, got {matrix.shape=}, "
                             f"{matrix.n_batch=}, {matrix.n_dense=}")
        return cls.from_coo(matrix.indices[:, 0], matrix.indices[:, 1], matrix.data, matrix.shape)

    @classmethod
    def from_scipy(cls, matrix: Any, dtype: Any = None) -> "SparseMatrix":
        """Build from any object with ``.tocoo()`` (e.g. a SciPy sparse matrix); scipy is not imported."""
        coo = matrix.tocoo()
        vals = np.asarray(coo.data, dtype=dtype) if dtype is not None else coo.data
        return cls.from_coo(coo.row, coo.col, vals, coo.shape)

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

    def matvec(self, x: Float[Array, " m"]) -> Float[Array, " n"]:
        """``A @ x`` via a segment sum over the COO entries."""
        return jax.ops.segment_sum(self.vals * x[self.cols], self.rows,
                                   num_segments=self.shape[0])

    def rmatvec(self, x: Float[Array, " n"]) -> Float[Array, " m"]:
        """``Aᵀ @ x`` via a segment sum over the COO entries."""
        return jax.ops.segment_sum(self.vals * x[self.rows], self.cols,
                                   num_segments=self.shape[1])

    def diagonal(self) -> Float[Array, " n"]:
        """The main diagonal (duplicates summed)."""
        n = min(self.shape)
        on = self.rows == self.cols
        return jax.ops.segment_sum(jnp.where(on, self.vals, 0.0), jnp.where(on, self.rows, 0),
                                   num_segments=n)

    def astype(self, dtype: Any) -> "SparseMatrix":
        """Same pattern with values cast to ``dtype``."""
        return SparseMatrix(self.rows, self.cols, self.vals.astype(dtype), self.shape)

    # -- lineax operator interface ------------------------------------------------------------------
    def mv(self, vector):
        return self.matvec(vector)

    def as_matrix(self) -> Float[Array, "n m"]:
        return jnp.zeros(self.shape, self.vals.dtype).at[self.rows, self.cols].add(self.vals)

    def transpose(self) -> "SparseMatrix":
        return SparseMatrix(self.cols, self.rows, self.vals, (self.shape[1], self.shape[0]))

    def in_structure(self):
        return jax.ShapeDtypeStruct((self.shape[1],), self.vals.dtype)

    def out_structure(self):
        return jax.ShapeDtypeStruct((self.shape[0],), self.vals.dtype)


@lx.linearise.register(SparseMatrix)
def _(operator):
    return operator


@lx.materialise.register(SparseMatrix)
def _(operator):
    return operator


@lx.diagonal.register(SparseMatrix)
def _(operator):
    return operator.diagonal()


for _check in (lx.is_symmetric, lx.is_diagonal, lx.is_tridiagonal, lx.is_lower_triangular,
               lx.is_upper_triangular, lx.is_positive_semidefinite, lx.is_negative_semidefinite,
               lx.has_unit_diagonal):
    _check.register(SparseMatrix)(lambda operator: False)
