"""What users hold, turned into what the solvers use: one conversion for every entry point of ``icmlx.solvers``.

Accepted matrices: SciPy sparse in any format (csr, csc, coo, bsr, lil, dok, dia; ``sparray`` and ``spmatrix``),
``jax.experimental.sparse`` BCOO/BCSR, dense NumPy/JAX arrays, `SparseMatrix` and
(for the Krylov solvers) lineax operators and callables. SciPy is detected by the object's module or by a
``tocoo`` method without BCOO's ``n_batch``, so it is never imported here. The matrix conversion itself lives in
``_sparse`` (``SparseMatrix.from_scipy`` & co. use it); this module adds the SciPy-side and vector conversions.
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_int, check_number, check_values, is_traced
from ._sparse import (
    _ACCEPTED,
    COMPLEX_ENTRY_POINTS,
    SparseMatrix,
    _float_dtype,
    as_sparse_matrix,
    check_square,
    is_jax_sparse,
    is_scipy_sparse,
)

__all__ = ["as_sparse_matrix", "as_scipy_csr", "as_vector", "check_square", "check_tolerances", "is_jax_sparse",
           "is_scipy_sparse", "power_of_two_exponent", "power_of_two_scale", "positive_int"]


def as_scipy_csr(A: Any, *, name: str = "A", square: bool = True, allow_complex: bool = False) -> Any:
    """``A`` as a float64 ``scipy.sparse.csr_matrix`` for the eager NumPy/SciPy set-up routines (complex128 for a
    complex ``A`` with ``allow_complex``, else a complex ``A`` is refused)."""
    import scipy.sparse as sp  # set-up only

    if isinstance(A, SparseMatrix) or is_jax_sparse(A):
        if is_traced(A):
            raise TypeError(f"{name}: this set-up is eager (NumPy/SciPy); call it outside jax.jit")
        A = as_sparse_matrix(A, name=name, square=square, allow_complex=allow_complex).to_scipy()
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
    cplx = np.iscomplexobj(getattr(A, "data", np.zeros(0)))
    if cplx and not allow_complex:
        raise TypeError(f"this set-up works with real matrices, got a complex {name}; complex systems are solved "
                        f"by {COMPLEX_ENTRY_POINTS}")
    out = sp.csr_matrix(A, dtype=np.complex128 if cplx else np.float64)
    if square:
        check_square(out.shape, name)
    if not np.all(np.isfinite(out.data)):
        raise ValueError(f"{name} has NaN or Inf entries; fix or drop them before the set-up")
    return out


def as_vector(b: Any, n: int | None, *, name: str = "b", dtype: Any = None, matrix: str = "A",
              allow_complex: bool = False) -> jax.Array:
    """The right-hand side as a 1-D floating JAX array of length ``n`` (NaN/Inf checked on the host); complex with
    ``allow_complex`` when ``dtype`` (the matrix's) is complex or unknown."""
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
        if not allow_complex:
            raise TypeError(f"{name} is complex ({b.dtype}); this entry point works with real systems (complex "
                            f"systems: {COMPLEX_ENTRY_POINTS})")
        if dtype is not None and not np.issubdtype(np.dtype(dtype), np.complexfloating):
            raise TypeError(f"{name} is complex ({b.dtype}) but {matrix} is real ({np.dtype(dtype)}); pass {matrix} "
                            f"as a complex matrix (e.g. {matrix}.astype(complex)) to solve a complex system")
    target = dtype if dtype is not None else _float_dtype(b.dtype, allow_complex)
    b = check_values(b, lambda xp, v: ~xp.isfinite(v),
                     f"{name} has NaN or Inf entries; fix them before solving")
    return jnp.asarray(b, target)


def positive_int(value: Any, name: str, where: str, *, minimum: int = 1) -> int:
    """``value`` as an int ``>= minimum`` (a static setting): `icmlx._checks.check_int`."""
    return check_int(value, name, where=where, minimum=minimum)


def check_real(value: Any, name: str, where: str) -> None:
    """A concrete ``value`` must be a real number or real array (else the shared ``TypeError`` naming it); the
    range is the caller's to check, and a traced value passes."""
    if is_traced(value):
        return
    try:
        check_number(value, name, where=where, allow_inf=True, allow_array=True)
    except ValueError:  # NaN: reported by the caller's range check
        pass


def check_tolerances(rtol: Any, atol: Any, where: str) -> tuple[Any, Any]:
    """``(rtol, atol)`` checked to be finite and non-negative (on the host, or by ``eqx.error_if`` when traced)."""
    out = []
    for name, value in (("rtol", rtol), ("atol", atol)):
        check_real(value, name, where)
        shown = "a traced value" if is_traced(value) else f"{name}={value!r}"
        out.append(check_values(value, lambda xp, t: ~(xp.isfinite(t) & (t >= 0)),
                                f"{where}: {name} must be a finite number >= 0, got {shown}"))
    return out[0], out[1]


def power_of_two_exponent(b: jax.Array) -> jax.Array:
    """``k`` (int32) with ``max|b| / 2^k`` in ``[1, 2)``, 0 for ``b = 0``: scaling by ``2^-k`` is exact, and it
    keeps the norms of a solve away from float overflow (``‖b‖²`` of ``b ≈ 1e20`` in float32) and underflow
    (``1e-30``)."""
    m = jnp.max(jnp.abs(b), initial=0.0)
    _, e = jnp.frexp(m)
    return jnp.where(m > 0, e - 1, 0).astype(jnp.int32)


def power_of_two_scale(b: jax.Array) -> jax.Array:
    """``s = 2^k`` for the ``k`` of `power_of_two_exponent` (1 for ``b = 0``), in ``b``'s (real) dtype."""
    return jnp.ldexp(jnp.ones((), jnp.finfo(b.dtype).dtype), power_of_two_exponent(b))
