"""Classical Krylov solvers in JAX (baselines for G-RANS): CG, BiCGStab and restarted GMRES."""

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
from jaxtyping import Array

from ..._checks import check_values, is_traced
from ..._progress import in_program_reporter, resolve_progress
from ..._results import RESULTS, raise_if_failed
from .._convert import (
    as_sparse_matrix,
    as_vector,
    check_square,
    check_tolerances,
    is_jax_sparse,
    is_scipy_sparse,
    positive_int,
    power_of_two_exponent,
)
from .._solution import LinearSolution
from .._sparse import SparseMatrix, bucket_size
from ._batching import one_at_a_time

__all__ = ["cg", "gmres", "bicgstab"]

Operator = Any  # a matrix (SciPy sparse, BCOO, dense, SparseMatrix, EllMatrix), a lineax operator or ``x -> A x``

VectorLike = Any  # a float[n] vector: JAX or NumPy array, list, or pandas Series (converted by ``as_vector``)

_PROGRESS_EVERY = 10  # Krylov steps between progress lines (progress=True)


def _operator(A: Operator) -> tuple[Operator, Callable[[Array], Array], int | None, Any]:
    """``(A, mv, n, dtype)``: matrices converted (`as_sparse_matrix`), operators and callables kept."""
    if isinstance(A, SparseMatrix) or is_scipy_sparse(A) or is_jax_sparse(A):
        A = _bucketed(as_sparse_matrix(A, name="A", allow_complex=True))
        return A, A.mv, A.shape[0], A.dtype
    if isinstance(A, (np.ndarray, jax.Array)):  # dense: a matrix product (traceable)
        M = jnp.asarray(A)
        if M.ndim != 2:
            raise ValueError(f"A must be a 2-D matrix, got an array of shape {M.shape}")
        n = check_square(M.shape, "A")
        if not jnp.issubdtype(M.dtype, jnp.inexact):
            M = M.astype(jnp.result_type(float))
        M = check_values(M, lambda xp, v: ~xp.isfinite(v),
                         "A has NaN or Inf entries; fix or drop them before solving")
        op = lx.MatrixLinearOperator(M)
        return op, op.mv, n, M.dtype
    if isinstance(A, lx.AbstractLinearOperator):
        n_in, n_out = A.in_size(), A.out_size()
        if n_in != n_out:
            check_square((n_out, n_in), "A")
        return A, A.mv, n_in, A.in_structure().dtype
    if hasattr(A, "mv") and hasattr(A, "shape"):  # EllMatrix and friends
        n = check_square(A.shape, "A")
        if hasattr(A, "idx") and hasattr(A, "val"):  # an EllMatrix (duck-typed: cg does not load the multigrid)
            idx = check_values(A.idx, lambda xp, i: (i < 0) | (i >= n), f"A: EllMatrix indices (idx) out of "
                               f"range: they must lie in [0, {n}); rebuild it with EllMatrix.from_scipy")
            val = check_values(A.val, lambda xp, v: ~xp.isfinite(v), "A has NaN or Inf entries; fix them first")
            A = eqx.tree_at(lambda m: (m.idx, m.val), A, (idx, val))
        dtype = getattr(getattr(A, "val", None), "dtype", None)
        return A, A.mv, n, dtype
    if callable(A):
        return A, A, None, None
    raise TypeError(f"A: cannot use a {type(A).__module__}.{type(A).__name__} as a linear operator; pass a SciPy "
                    "sparse matrix, a BCOO, a dense array, a SparseMatrix, a lineax operator or a callable x -> A x")


def _bucketed(A: SparseMatrix) -> SparseMatrix:
    """``A`` with its entries padded (value 0 at (0, 0)) to `bucket_size` of ``nnz``, so matrices of similar
    size reuse the compiled Krylov loop; traced matrices are left alone (their shapes are fixed already)."""
    nnz = A.vals.shape[0]
    pad = bucket_size(nnz) - nnz
    if pad == 0 or is_traced(A.vals):
        return A
    zi = jnp.zeros((pad,), A.rows.dtype)
    return SparseMatrix(jnp.concatenate([A.rows, zi]), jnp.concatenate([A.cols, zi]),
                        jnp.concatenate([A.vals, jnp.zeros((pad,), A.vals.dtype)]), A.shape, A.tags)


def _prepare(A: Operator, b: Any, x0: Any):
    """Convert ``A``, ``b`` and ``x0``: ``(A, mv, b, x0)`` with ``b`` in ``A``'s dtype (when known)."""
    A, mv, n, dtype = _operator(A)
    b = as_vector(b, n, name="b", dtype=dtype, allow_complex=True)
    x = jnp.zeros_like(b) if x0 is None else as_vector(x0, b.shape[0], name="x0", dtype=b.dtype, matrix="A")
    return A, mv, b, x


def _preconditioner(P: Any, A: Operator, n: int, name: str) -> Callable[[Array], Array]:
    """``r -> M⁻¹ r`` from a preconditioner argument."""
    if P is None:
        return _identity
    if isinstance(P, str):
        if P != "jacobi":
            raise ValueError(f"unknown {name}={P!r}; use None, 'jacobi', a MultilevelHierarchy "
                             "(smoothed_aggregation(A)) or a callable r -> M⁻¹ r")
        if isinstance(A, SparseMatrix) or (callable(getattr(A, "diagonal", None))
                                           and not isinstance(A, lx.AbstractLinearOperator)):
            d = A.diagonal()  # SparseMatrix, EllMatrix
        elif isinstance(A, lx.AbstractLinearOperator):
            d = lx.diagonal(A)
        else:
            raise TypeError(f"{name}='jacobi' needs A as a matrix (SciPy, BCOO, dense or SparseMatrix), "
                            "not a callable: its diagonal is not known")
        d = check_values(d, lambda xp, v: v == 0, f"{name}='jacobi' needs a nonzero diagonal, but A has a zero "
                         "diagonal entry; use another preconditioner (smoothed_aggregation(A)) or None")
        return jax.tree_util.Partial(_scale, 1.0 / d)  # a pytree: the compiled loop is reused
    if hasattr(P, "as_preconditioner"):  # a MultilevelHierarchy or an AMGSolver: its cycle on n-vectors
        M = P.as_preconditioner(n)
        return M.mv if isinstance(M, lx.AbstractLinearOperator) else M
    if isinstance(P, lx.AbstractLinearOperator):
        return P.mv
    if callable(P):
        return P
    raise TypeError(f"{name} must be None, 'jacobi', a MultilevelHierarchy or a callable r -> M⁻¹ r, "
                    f"got {type(P).__name__}")


def _identity(r):
    return r


def _scale(d, r):
    return d * r


def _real_dtype(dtype: Any) -> Any:  # float32 for complex64
    return jnp.finfo(dtype).dtype


def _tol(value: Any, b: Array) -> Array:
    """A tolerance as an array of ``b``'s real dtype, so a new value does not compile the loop again."""
    return jnp.asarray(value, _real_dtype(b.dtype))


def _norm2(r: Array) -> Array:  # ‖r‖₂² = rᴴ r, real (the real part drops a rounding-level imaginary part)
    return jnp.real(jnp.vdot(r, r))


def _reporter(show: bool, desc: str, total: int):
    """A ``report(step, **scalars)`` (behind ``it % every == 0``) when ``show``, else ``None``."""
    if not show:
        return None
    report = in_program_reporter(desc, every=_PROGRESS_EVERY, total=total)

    def maybe(step, **values):
        jax.lax.cond(step % _PROGRESS_EVERY == 0, lambda: report(step, **values), lambda: None)

    return maybe


def _finish(mv, b, x, it, ok, breakdown, hist, stalled=None):
    """``(x, result, stats)``: ``successful`` exactly when the iteration's stopping rule ``ok`` held (on the true
    residual: CG/BiCGStab by residual replacement, GMRES after each cycle), with the true ``‖b − A x‖₂`` in
    ``stats["residual_norm"]``."""
    res = jnp.linalg.norm(b - mv(x))
    failed = RESULTS.where(breakdown, RESULTS.breakdown, RESULTS.max_steps_reached)
    if stalled is not None:
        failed = RESULTS.where(stalled, RESULTS.accuracy_limit, failed)
    result = RESULTS.where(ok, RESULTS.successful, failed)
    # a NaN/Inf from the operator or preconditioner (a callable, a lineax operator) ends the loop: say so
    result = RESULTS.where(jnp.isfinite(res) & jnp.all(jnp.isfinite(x)), result, RESULTS.nonfinite)
    return x, result, {"num_steps": it, "residual_norm": res, "residual_history": hist}


def _run(loop, A, b, x0, preconditioner, rtol, atol, max_steps, throw, progress, where, *static) -> LinearSolution:
    """Check the inputs, solve the system scaled by a power of two (``b / s``, exact), and scale back.

    The scaling keeps ``‖b‖`` and the inner products finite and normal for any finite ``b`` (float32 overflows
    at ``‖b‖ ≈ 1e19`` and underflows below ``1e-19``); the iterates are those of the unscaled system."""
    rtol, atol = check_tolerances(rtol, atol, where)
    max_steps = positive_int(max_steps, "max_steps", where, minimum=0)
    A, mv, b, x = _prepare(A, b, x0)
    if b.shape[0] == 0:  # an empty system: x = [] solves it
        stats = {"num_steps": jnp.array(0, jnp.int32), "residual_norm": jnp.zeros((), b.dtype),
                 "residual_history": jnp.zeros((1,), b.dtype)}
        return LinearSolution(b, RESULTS.successful, stats)
    M = _preconditioner(preconditioner, A, b.shape[0], "preconditioner")
    show = resolve_progress(progress, in_program=True)
    x, result, stats = implicit_solve(loop, mv, M, _matrix_entries(A), b, x, _tol(rtol, b), _tol(atol, b), static,
                                     max_steps, show, loop is cg_loop, throw)
    return raise_if_failed(LinearSolution(x, result, stats), result, throw)


@eqx.filter_jit
def implicit_solve(loop, mv, M, entries, b, x, rtol, atol, static: tuple, max_steps: int, show: bool,
                  symmetric: bool = False, throw: bool = True):
    r"""Solve ``A x = b`` with ``loop`` in one compiled program, differentiable by the implicit function theorem.

    The solve is a ``jax.lax.custom_linear_solve``: a tangent or cotangent of ``b`` or of the arrays ``mv`` closes
    over (the matrix values) never enters the iteration. Forward mode solves $A\,\dot x = \dot b - \dot A x$ and
    reverse mode the adjoint system $A^\top \lambda = \bar x$, giving $\bar b = \lambda$ and
    $\bar A_{rc} = -\lambda_r x_c$, each with the same ``loop`` (``symmetric``: ``A`` and ``M`` are their own
    transposes, as for CG; otherwise the adjoint runs on the transposed product and preconditioner). A failed
    adjoint solve raises like a failed solve with ``throw``, and is NaN otherwise.
    """
    def forward(matvec, rhs):
        return _power_scaled(loop, matvec, M, entries, rhs, x, rtol, atol, static, max_steps, show)

    def adjoint(vecmat, g):
        Mt = M if symmetric else transposed_preconditioner(M, g)
        lam, (result, stats) = _power_scaled(loop, vecmat, Mt, entries, g, jnp.zeros_like(g), rtol, atol, static,
                                             max_steps, False)
        if throw:
            lam = raise_if_failed(lam, result, True)
        else:
            lam = jnp.where(result == RESULTS.successful, lam, jnp.nan)
        return lam, (result, stats)

    # a Hermitian A is not its own transpose when complex (Aᵀ = conj A): the adjoint then runs on the transposed
    # product and preconditioner (conj A is Hermitian positive definite too, so CG still applies)
    symmetric = symmetric and not jnp.iscomplexobj(b)
    x, (result, stats) = jax.lax.custom_linear_solve(mv, b, forward, adjoint, symmetric=symmetric, has_aux=True)
    return x, result, jax.lax.stop_gradient(stats)


def _power_scaled(loop, mv, M, entries, b, x, rtol, atol, static: tuple, max_steps: int, show: bool):
    """Solve ``(A / 2^ka) x' = b / 2^kb`` and return ``(2^(kb − ka) x', (result, stats))`` (exact scalings; ``ka``
    from the matrix entries when they are known, else 0)."""
    kb = power_of_two_exponent(b)
    if entries is not None:
        ka = power_of_two_exponent(jax.lax.stop_gradient(entries))
        mv = jax.tree_util.Partial(_ldexp_after, mv, -ka)
        M = M if M is _identity else jax.tree_util.Partial(_ldexp_after, M, ka)
    ka = ka if entries is not None else jnp.zeros((), jnp.int32)
    s = jnp.ldexp(jnp.ones((), _real_dtype(b.dtype)), kb)
    sb = s.astype(b.dtype) if jnp.iscomplexobj(b) else s
    x, result, stats = one_at_a_time(loop, mv, M, b / sb, x / sb, rtol, atol / s, static, max_steps, show)
    x = _ldexp(x, kb - ka)  # (under vmap the loop runs per member: `._batching.one_at_a_time`)
    result = RESULTS.where(jnp.all(jnp.isfinite(x)), result, RESULTS.nonfinite)
    return x, (result, {**stats, "residual_norm": stats["residual_norm"] * s})


def transposed_preconditioner(M, like):
    """The transpose ``r ↦ Mᵀ r`` of a linear preconditioner (``M`` itself when its transpose cannot be traced, as
    for a preconditioner with a data-dependent loop: any fixed preconditioner keeps the adjoint iteration exact,
    only its speed depends on it)."""
    if M is _identity:
        return M
    try:
        Mt = jax.linear_transpose(M, like)
    except (NotImplementedError, TypeError, ValueError):
        return M
    return jax.tree_util.Partial(_first, Mt)


def _first(f, v):
    return f(v)[0]


def _matrix_entries(A: Any) -> Any:
    """The entries of a matrix (their scale is known), or ``None`` for an operator of unknown scale."""
    for field in ("vals", "val", "matrix"):  # SparseMatrix, EllMatrix, lx.MatrixLinearOperator
        v = getattr(A, field, None)
        if isinstance(v, jax.Array) and jnp.issubdtype(v.dtype, jnp.inexact):
            return v
    return None


def _ldexp(v, k):  # v · 2^k exactly (a complex v: its two parts apart)
    if jnp.iscomplexobj(v):
        return jax.lax.complex(jnp.ldexp(jnp.real(v), k), jnp.ldexp(jnp.imag(v), k))
    return jnp.ldexp(v, k)


def _ldexp_after(f, k, v):
    return _ldexp(f(v), k)


def _replace_residual(mv, b, x, r, tol2, last):
    """Residual replacement (van der Vorst & Ye 2000) at convergence: once the recursive residual ``r`` meets the
    tolerance, compute the true one ``b − A x`` (one extra product, only then) and continue from it. Rounding
    makes the two drift apart (in float32 visibly, on ill-conditioned systems), and ``successful`` must mean that
    the true residual met the tolerance.
    When the working precision cannot reach the tolerance the true residual stops improving: a replacement whose
    true residual norm has not halved since the previous one stops the iteration (``RESULTS.accuracy_limit``)
    instead of cycling to ``max_steps``. Returns ``(r, replaced, stalled, last)``, ``replaced`` true when the
    true residual still misses the tolerance and ``last`` the squared true norm at the latest replacement."""
    converged = _norm2(r) <= tol2
    r = jax.lax.cond(converged, lambda: b - mv(x), lambda: r)
    rr = _norm2(r)
    replaced = converged & (rr > tol2)
    stalled = replaced & (rr > 0.25 * last)
    return r, replaced, stalled, jnp.where(replaced, rr, last)


def _history(b, r, length: int):
    """A ``length`` buffer of NaN with ``‖r‖/‖b‖`` in slot 0, and the denominator."""
    bn = jnp.linalg.norm(b)
    denom = jnp.where(bn > 0, bn, jnp.ones((), bn.dtype))
    return jnp.full((length,), jnp.nan, bn.dtype).at[0].set(jnp.linalg.norm(r) / denom), denom


def cg(
    A: Operator,
    b: VectorLike,
    x0: VectorLike | None = None,
    *,
    rtol: float = 1e-5,
    atol: float = 0.0,
    max_steps: int = 10_000,
    preconditioner: Any = None,
    throw: bool = True,
    progress: bool | None = None,
) -> LinearSolution:
    r"""Preconditioned conjugate gradients for symmetric (complex: Hermitian) positive definite ``A``.

    Stops when $\|r_k\|_2 \le \max(\mathrm{rtol}\,\|b\|_2, \mathrm{atol})$ for the true residual
    $r_k = b - A x_k$: the recursive residual is tracked as in ``scipy.sparse.linalg.cg``, and when it meets
    the tolerance the true one is computed and, if rounding has made them drift apart, the iteration continues
    from it (residual replacement). The iteration always uses ``A`` itself; the preconditioner only shapes the
    search directions.

    Args:
      A: the n × n SPD matrix (complex Hermitian positive definite: the inner products are $u^H v$): a SciPy
        sparse matrix or array in any format, a ``jax.experimental.sparse``
        BCOO, a dense NumPy/JAX array, a ``SparseMatrix``, a lineax operator or a callable ``x -> A x``.
      b: right-hand side ``float[n]`` or ``complex[n]`` (NumPy, JAX or a pandas Series; cast to ``A``'s dtype when
        known; a complex ``b`` needs a complex ``A``).
      x0: initial guess (zeros if ``None``).
      rtol: tolerances.
      atol: tolerances.
      max_steps: iteration cap.
      preconditioner: ``None``; ``"jacobi"`` (needs ``A`` as a matrix); a ``MultilevelHierarchy``
        (``smoothed_aggregation(A)``: padding is done inside, one V-cycle per step); or a callable
        ``r -> M⁻¹ r`` on n-vectors (SPD).
      throw: raise (via ``eqx.error_if``, under ``jit`` too) unless ``result`` is ``RESULTS.successful``.
      progress: None shows progress in an interactive terminal for loops driven from Python; a loop inside
        one compiled program reports only with progress=True (this one: a line every 10 steps).

    Returns:
      A `LinearSolution` (stats ``num_steps``, ``residual_norm``: the true final
      ``‖b − A x‖₂``, ``residual_history``: ``‖r_k‖/‖b‖`` for ``k = 0..max_steps``, recursive except at a
      replacement, NaN after the last step); ``result`` is ``successful`` exactly when the stopping rule above
      held, ``accuracy_limit`` when the true residual stopped improving at a replacement (the tolerance is below
      what the working precision reaches for this system: enable x64 or loosen ``rtol``), ``nonfinite`` when
      the operator or preconditioner produced NaN/Inf (a callable or lineax ``A`` is not checked up front), else
      ``breakdown`` (a non-positive curvature ``pᵀAp``) or ``max_steps_reached``. The system is solved for
      ``b / s`` with ``s`` a power of two near ``max|b|`` (exact), so any finite ``b`` works, ``1e36`` in
      float32 included.

    Raises:
      ValueError: ``A`` not square (or with indices outside its shape), ``b``/``x0`` of the wrong length,
        NaN/Inf in ``A``, ``b`` or ``x0`` (at call time for concrete input), ``rtol``/``atol`` negative or NaN,
        ``max_steps`` not an int ``>= 0``, an unknown preconditioner name, ``"jacobi"`` on a zero diagonal.
      TypeError: an ``A`` or preconditioner of an unsupported type.

    References:
      Hestenes & Stiefel (1952); Saad, *Iterative Methods for Sparse Linear Systems*, Alg. 9.1.

    Examples:
      >>> import numpy as np, scipy.sparse as sp
      >>> from icmlx.solvers import cg
      >>> A = sp.csr_array(np.array([[4.0, 1.0], [1.0, 3.0]]))
      >>> sol = cg(A, np.array([1.0, 2.0]), rtol=1e-6)
      >>> [round(float(v), 4) for v in sol.value]
      [0.0909, 0.6364]
    """
    return _run(cg_loop, A, b, x0, preconditioner, rtol, atol, max_steps, throw, progress, "cg")


@eqx.filter_jit
def cg_loop(mv, M, b, x, rtol, atol, max_steps: int, show: bool):
    """The CG iteration, compiled once per operator structure, size and ``max_steps``."""
    report = _reporter(show, "cg", max_steps)
    r = b - mv(x)
    z = M(r)
    tol = jnp.maximum(rtol * jnp.linalg.norm(b), atol)
    tol2 = tol**2
    hist, denom = _history(b, r, max_steps + 1)

    def cond(c):
        _, r, _, _, _, it, bad, _, _, stall = c
        return (_norm2(r) > tol2) & (it < max_steps) & ~bad & ~stall

    def body(c):
        x, r, z, p, rz, it, _, hist, last, _ = c
        Ap = mv(p)
        pAp = jnp.vdot(p, Ap)  # pᴴ A p: real and positive for Hermitian positive definite A
        bad = ~(jnp.real(pAp) > 0)
        alpha = jnp.where(bad, 0.0, rz / jnp.where(bad, 1.0, pAp))
        x = x + alpha * p
        r, replaced, stall, last = _replace_residual(mv, b, x, r - alpha * Ap, tol2, last)
        z = M(r)
        rz_new = jnp.vdot(r, z)
        p = jnp.where(replaced, z, z + (rz_new / rz) * p)  # restart the directions from the true residual
        rel = jnp.linalg.norm(r) / denom
        if report is not None:
            report(it + 1, relative_residual=rel)
        return x, r, z, p, rz_new, it + 1, bad, hist.at[it + 1].set(rel), last, stall

    inf = jnp.full((), jnp.inf, tol2.dtype)
    init = (x, r, z, z, jnp.vdot(r, z), jnp.array(0, jnp.int32), jnp.array(False), hist, inf, jnp.array(False))
    x, r, _, _, _, it, bad, hist, _, stall = jax.lax.while_loop(cond, body, init)
    return _finish(mv, b, x, it, _norm2(r) <= tol2, bad, hist, stall)


def bicgstab(
    A: Operator,
    b: VectorLike,
    x0: VectorLike | None = None,
    *,
    rtol: float = 1e-5,
    atol: float = 0.0,
    max_steps: int = 10_000,
    preconditioner: Any = None,
    throw: bool = True,
    progress: bool | None = None,
) -> LinearSolution:
    r"""BiCGStab (van der Vorst) for general nonsingular ``A``, optionally right-preconditioned.

    Stops when the true residual meets $\|r_k\|_2 \le \max(\mathrm{rtol}\,\|b\|_2, \mathrm{atol})$
    (residual replacement as in ``cg``); a zero inner product is reported as ``RESULTS.breakdown``. With a
    preconditioner ``M`` it iterates on $A M y = b$, $x = M y$ (right preconditioning), so ``r_k``
    is the residual of ``A`` itself.

    Args:
      A: as in ``cg`` (any square matrix type, a lineax operator or a callable).
      b: right-hand side ``float[n]`` or ``complex[n]`` (as in ``cg``).
      x0: initial guess.
      preconditioner: as in ``cg`` (need not be symmetric).
      rtol: as in ``cg``.
      atol: as in ``cg``.
      max_steps: as in ``cg``.
      throw: as in ``cg``.
      progress: as in ``cg``.

    Returns:
      A `LinearSolution`, as in ``cg``.

    Raises:
      ValueError, TypeError: as in ``cg``.

    References:
      van der Vorst, SIAM J. Sci. Stat. Comput. 13 (1992).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.solvers import SparseMatrix, bicgstab
      >>> A = SparseMatrix.from_dense(jnp.array([[4.0, 1.0], [-1.0, 3.0]]))
      >>> [round(float(v), 4) for v in bicgstab(A, jnp.array([1.0, 2.0]), rtol=1e-6).value]
      [0.0769, 0.6923]
    """
    return _run(bicgstab_loop, A, b, x0, preconditioner, rtol, atol, max_steps, throw, progress, "bicgstab")


@eqx.filter_jit
def bicgstab_loop(mv, M, b, x, rtol, atol, max_steps: int, show: bool):
    """The BiCGStab iteration, compiled once per operator structure, size and ``max_steps``."""
    report = _reporter(show, "bicgstab", max_steps)
    r = b - mv(x)
    rhat = r
    tol = jnp.maximum(rtol * jnp.linalg.norm(b), atol)
    tol2 = tol**2
    one = jnp.ones((), b.dtype)
    hist, denom = _history(b, r, max_steps + 1)

    def cond(c):
        r, it, bad, stall = c[1], c[7], c[8], c[11]
        return (_norm2(r) > tol2) & (it < max_steps) & ~bad & ~stall

    def body(c):
        x, r, p, v, rho, alpha, omega, it, _, hist, last, _ = c
        rho_new = jnp.vdot(rhat, r)
        beta = (rho_new / rho) * (alpha / omega)
        p = r + beta * (p - omega * v)
        phat = M(p)
        v = mv(phat)
        den = jnp.vdot(rhat, v)
        bad = (den == 0) | (rho_new == 0)
        alpha = rho_new / jnp.where(den == 0, one, den)
        s = r - alpha * v
        shat = M(s)
        t = mv(shat)
        tt = jnp.vdot(t, t)
        omega = jnp.where(jnp.real(tt) > 0, jnp.vdot(t, s) / jnp.where(jnp.real(tt) > 0, tt, one), 0.0)
        x = x + alpha * phat + omega * shat
        r, replaced, stall, last = _replace_residual(mv, b, x, s - omega * t, tol2, last)
        bad = bad | (omega == 0) & (_norm2(r) > tol2)
        rel = jnp.linalg.norm(r) / denom
        if report is not None:
            report(it + 1, relative_residual=rel)
        # after a replacement restart from the true residual (p = v = 0, rho = alpha = omega = 1 gives p = r)
        p, v = jnp.where(replaced, 0.0, p), jnp.where(replaced, 0.0, v)
        rho_new, alpha, omega = (jnp.where(replaced, one, q) for q in (rho_new, alpha, omega))
        return x, r, p, v, rho_new, alpha, omega, it + 1, bad, hist.at[it + 1].set(rel), last, stall

    z = jnp.zeros_like(b)
    inf = jnp.full((), jnp.inf, tol2.dtype)
    init = (x, r, z, z, one, one, one, jnp.array(0, jnp.int32), jnp.array(False), hist, inf, jnp.array(False))
    out = jax.lax.while_loop(cond, body, init)
    x, r, it, bad, hist, stall = out[0], out[1], out[7], out[8], out[9], out[11]
    return _finish(mv, b, x, it, _norm2(r) <= tol2, bad, hist, stall)


def gmres(
    A: Operator,
    b: VectorLike,
    x0: VectorLike | None = None,
    *,
    rtol: float = 1e-5,
    atol: float = 0.0,
    restart: int = 30,
    max_steps: int = 10_000,
    preconditioner: Any = None,
    throw: bool = True,
    progress: bool | None = None,
) -> LinearSolution:
    r"""Restarted GMRES(m) with modified Gram–Schmidt Arnoldi, optionally right-preconditioned.

    Each cycle builds an orthonormal Krylov basis $Q_j$ of $\mathcal K_j(A M, r_0)$ (``M = I``
    without a preconditioner), $j \le m$, minimises $\|\beta e_1 - \bar H_j y\|_2$ (Givens rotations keep
    that least-squares residual current at every step) and sets $x \leftarrow x + M Q_j y$. A cycle ends after
    ``restart`` steps, when the least-squares residual meets the tolerance, or when ``max_steps`` Arnoldi steps
    have been taken in all; the true residual of ``A`` is then computed and decides convergence. ``num_steps``
    is the number of Arnoldi steps (products with ``A``) taken, never more than ``max_steps``.

    Args:
      A: as in ``cg`` (any square matrix type, a lineax operator or a callable).
      b: right-hand side ``float[n]`` or ``complex[n]`` (as in ``cg``).
      x0: initial guess.
      rtol: as in ``cg``.
      atol: as in ``cg``.
      throw: as in ``cg``.
      progress: as in ``cg`` (a line per restart cycle).
      restart: Krylov dimension per cycle (static).
      max_steps: cap on Arnoldi steps over all cycles (exact: ``max_steps=1`` takes one step).
      preconditioner: as in ``cg`` (need not be symmetric; applied on the right).

    Returns:
      A `LinearSolution`, as in ``cg``: ``residual_history[k]`` is the least-squares residual
      ``‖r_k‖/‖b‖`` after ``k`` Arnoldi steps, replaced by the true ``‖b − A x‖/‖b‖`` at the end of each cycle.
      ``accuracy_limit`` when two cycles in a row ended on the least-squares estimate while the true residual
      missed the tolerance and did not halve (the working precision cannot reach it).

    Raises:
      ValueError, TypeError: as in ``cg``; ``restart < 1``.

    References:
      Saad & Schultz, SIAM J. Sci. Stat. Comput. 7 (1986).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.solvers import SparseMatrix, gmres
      >>> A = SparseMatrix.from_dense(jnp.array([[4.0, 1.0], [-1.0, 3.0]]))
      >>> [round(float(v), 4) for v in gmres(A, jnp.array([1.0, 2.0]), restart=2).value]
      [0.0769, 0.6923]
    """
    restart = positive_int(restart, "restart", "gmres")
    return _run(gmres_loop, A, b, x0, preconditioner, rtol, atol, max_steps, throw, progress, "gmres", restart)


@eqx.filter_jit
def gmres_loop(mv, M, b, x, rtol, atol, restart: int, max_steps: int, show: bool):
    """The restarted GMRES iteration, compiled once per operator structure, size, ``restart`` and ``max_steps``:
    cycles of at most ``min(restart, max_steps − steps so far)`` Arnoldi steps (see ``gmres``)."""
    m = restart
    rdt = _real_dtype(b.dtype)
    tol = jnp.maximum(rtol * jnp.linalg.norm(b), atol)
    report = _reporter(show, "gmres", max_steps)
    tiny, zero, one = jnp.finfo(b.dtype).tiny, jnp.zeros((), b.dtype), jnp.ones((), b.dtype)

    def cycle(x, r, beta, steps, hist):
        """At most ``m`` Arnoldi steps from ``x`` (residual ``r``, ``‖r‖ = beta``): ``(x, steps, hist)``."""
        Q = jnp.zeros((m + 1, b.shape[0]), b.dtype).at[0].set(r / jnp.maximum(beta, tiny).astype(b.dtype))
        R = jnp.zeros((m, m), b.dtype)  # the rotated (upper triangular) Hessenberg matrix
        g = jnp.zeros((m + 1,), b.dtype).at[0].set(beta.astype(b.dtype))
        cs = jnp.zeros((m,), b.dtype)  # (real values, held in b's dtype)
        sn = jnp.zeros((m,), b.dtype)
        limit = jnp.minimum(m, max_steps - steps)

        def cond(c):
            j, est = c[0], c[6]
            return (j < limit) & (est > tol)

        def arnoldi(c):
            j, Q, R, g, cs, sn, _, hist = c
            w = mv(M(Q[j]))

            def mgs(i, wh):
                w, h = wh
                hij = jnp.where(i <= j, jnp.vdot(Q[i], w), zero)
                return w - hij * Q[i], h.at[i].set(hij)

            w, h = jax.lax.fori_loop(0, m, mgs, (w, jnp.zeros((m + 1,), b.dtype)))
            hn = jnp.linalg.norm(w)
            Q = Q.at[j + 1].set(jnp.where(hn > tiny, w / jnp.maximum(hn, tiny).astype(b.dtype), zero))
            h = h.at[j + 1].set(hn.astype(b.dtype))

            def rotate(i, h):  # the earlier rotations, applied to the new column
                a, c2, use = h[i], h[i + 1], i < j
                return h.at[i].set(jnp.where(use, cs[i] * a + sn[i] * c2, a)).at[i + 1].set(
                    jnp.where(use, -jnp.conj(sn[i]) * a + cs[i] * c2, c2))

            h = jax.lax.fori_loop(0, m, rotate, h)
            # the rotation that zeroes h[j + 1] (a complex Givens rotation [[c, s], [-conj s, c]], c real)
            a, c2 = h[j], h[j + 1]
            rho = jnp.sqrt(jnp.abs(a) ** 2 + jnp.abs(c2) ** 2)
            safe = rho > 0
            aa = jnp.abs(a)
            phase = jnp.where(aa > 0, a / jnp.where(aa > 0, aa, 1.0).astype(b.dtype), one)
            c_j = jnp.where(safe, aa / jnp.where(safe, rho, 1.0), 1.0).astype(b.dtype)
            s_j = jnp.where(safe, phase * jnp.conj(c2) / jnp.where(safe, rho, 1.0).astype(b.dtype), zero)
            h = h.at[j].set(jnp.where(safe, phase * rho.astype(b.dtype), a)).at[j + 1].set(zero)
            gj = g[j]
            g = g.at[j].set(c_j * gj).at[j + 1].set(-jnp.conj(s_j) * gj)
            est = jnp.abs(g[j + 1])
            hist = hist.at[steps + j + 1].set(est / denom)
            return j + 1, Q, R.at[:, j].set(h[:m]), g, cs.at[j].set(c_j), sn.at[j].set(s_j), est, hist

        init = (jnp.array(0, jnp.int32), Q, R, g, cs, sn, beta, hist)
        k, Q, R, g, _, _, est, hist = jax.lax.while_loop(cond, arnoldi, init)
        # solve R[:k, :k] y = g[:k]; the unused columns get a unit diagonal and a zero right-hand side (y = 0)
        used = jnp.arange(m, dtype=jnp.int32) < k
        diag = jnp.diagonal(R)
        diag = jnp.where(diag == 0, jnp.asarray(tiny, b.dtype), diag)
        R = R.at[jnp.arange(m), jnp.arange(m)].set(jnp.where(used, diag, one))
        y = jax.scipy.linalg.solve_triangular(R, jnp.where(used, g[:m], zero), lower=False)
        return x + M(Q[:m].T @ y), steps + k, hist, est <= tol

    def cond(c):
        _, _, res, steps, _, _, stall = c
        return (res > tol) & (steps < max_steps) & ~stall

    def body(c):
        x, r, res, steps, hist, last, _ = c
        x, steps, hist, estimated = cycle(x, r, res, steps, hist)
        r = b - mv(x)
        res = jnp.linalg.norm(r)
        hist = hist.at[steps].set(res / denom)  # the true residual at the end of each cycle
        # the least-squares residual met the tolerance but the true one did not (rounding): a second such cycle
        # that has not halved the true residual means the working precision cannot reach the tolerance
        early = estimated & (res > tol)
        stall = early & (res > 0.5 * last)
        if report is not None:
            report(steps, relative_residual=res / denom)
        return x, r, res, steps, hist, jnp.where(early, res, last), stall

    r0 = b - mv(x)
    hist, denom = _history(b, r0, max_steps + 1)
    init = (x, r0, jnp.linalg.norm(r0), jnp.array(0, jnp.int32), hist, jnp.full((), jnp.inf, rdt),
            jnp.array(False))
    x, _, res, steps, hist, _, stall = jax.lax.while_loop(cond, body, init)
    return _finish(mv, b, x, steps, res <= tol, jnp.array(False), hist, stall)
