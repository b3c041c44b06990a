"""Batched inverse p-th roots of symmetric PSD matrices (the DASH solvers): `matrix_inverse_root`.

All methods work on a stack ``(..., n, n)`` in one batched call: leading dimensions are flattened into a single
batch axis and every iteration is a batched matmul (or one batched ``eigh``), so ``N`` same-shaped Shampoo blocks
cost one kernel launch per iteration rather than ``N``. The methods are the solver objects of
`._root_methods`; their kernels live in `._root_kernels`.
"""

from typing import Literal

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, ArrayLike, Float

from .._checks import check_int, check_values
from .._results import RESULTS, Solution, raise_if_failed
from ._root_kernels import _eye_like, _floor, _matpow, _power_iteration, _symmetrize
from ._root_methods import DEFAULT_INVERSE_ROOT, AbstractInverseRoot, _check_nonneg, as_inverse_root

__all__ = ["InverseRootSolution", "matrix_inverse_root", "power_iteration"]


def _check_square(A, where: str) -> Array:
    A = jnp.asarray(A)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"{where}: A must have shape (..., n, n) (a stack of square matrices), got {A.shape=}")
    if not jnp.issubdtype(A.dtype, jnp.floating):
        raise TypeError(
            f"{where}: A must have a real floating dtype (float32/float64; bfloat16/float16 are computed in "
            f"float32), got {A.dtype=}"
        )
    return A


def _working_dtype(dtype):
    """Half-precision inputs are solved in float32 (the iterations need more than 8-11 mantissa bits)."""
    return jnp.float32 if jnp.finfo(dtype).bits < 32 else dtype


def _check_finite(A, where: str) -> Array:
    return check_values(
        A, lambda xp, a: ~xp.isfinite(a),
        f"{where}: A has non-finite (NaN/inf) entries; check the matrices before solving.",
    )


def power_iteration(
    A: ArrayLike,  # (*batch, n, n) floating: checked by _check_square with a message naming A
    *,
    num_steps: int = 10,
    num_vectors: int = 16,
    damping: float = 1e-6,
) -> Float[Array, "*batch"]:
    r"""Multi-vector power-iteration estimate of $\lambda_{\max}$ for a batch of PSD matrices.

    Runs $V \leftarrow (A + dI)V$ with column normalisation for ``num_steps`` steps from ``num_vectors``
    fixed random starting vectors and returns the largest Rayleigh quotient
    $\max_j v_j^\top (A + dI) v_j$. Using several vectors avoids locking onto a non-top eigenvector.
    The iteration runs on $A/c + dI$ with $c = \max_{ij}|A_{ij}|$ and $d$ = ``damping``, so
    an all-zero block gives a tiny finite estimate rather than NaN.

    Args:
      A: symmetric PSD matrices, shape ``(..., n, n)``, floating dtype, NumPy or JAX.
      num_steps: power steps (static).
      num_vectors: starting vectors, capped at ``n`` (static).
      damping: relative diagonal damping (see above).

    Returns:
      The estimates, shape ``(...)``, dtype of ``A``. They lie in $[0, \lambda_{\max}(A) + cd]$.

    Raises:
      ValueError: if ``A`` is not a stack of square matrices, is empty (``n = 0``), has non-finite entries
        (on the host for a concrete ``A``, via ``eqx.error_if`` when traced), or a setting is out of range.
      TypeError: a non-floating ``A``.

    References:
      Modoranu et al., DASH, arXiv:2602.02016 (multi-vector power iteration for matrix scaling).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.optim import power_iteration
      >>> print(round(float(power_iteration(jnp.diag(jnp.array([3.0, 1.0, 0.5])), num_steps=20)), 3))
      3.0
    """
    A = _check_square(A, "power_iteration")
    for name, value in (("num_steps", num_steps), ("num_vectors", num_vectors)):
        check_int(value, name, where="power_iteration", minimum=1)
    _check_nonneg("power_iteration", "damping", damping)
    if A.shape[-1] == 0:
        raise ValueError(f"power_iteration: A is empty (n = 0) and has no eigenvalues, got {A.shape=}")
    A = _check_finite(A, "power_iteration")
    batch = A.shape[:-2]
    a = A.reshape((-1,) + A.shape[-2:])
    lam = _power_iteration(_symmetrize(a.astype(_working_dtype(a.dtype))), int(num_steps), int(num_vectors),
                           float(damping), None)
    return lam.astype(A.dtype).reshape(batch)


# ---------------------------------------------------------------------------------------------------- dispatch


def _inverse_root_core(a: Array, p: int, method: AbstractInverseRoot, epsilon: float) -> tuple[Array, ...]:
    """Unchecked core on a stack (N, n, n) -> (X, ridge (N,), steps (), status (N,)): the solver's own ``solve``.

    ``ridge`` is the diagonal shift the method effectively inverts (X ~ (A + ridge I)^{-1/p}); ``steps`` the
    iteration count; ``status`` per matrix: 0 ok, 1 max_steps reached, 2 diverged, 5 accuracy limit.
    """
    return method.solve(_symmetrize(a), p, epsilon)


#: Bytes of one chunk of matrices (chunk * n * n * itemsize) that ``chunk_size="auto"`` aims for on CPU.
_CPU_CHUNK_BYTES = 64 * 1024


def _check_chunk_size(name: str, value) -> None:
    if value is None or (isinstance(value, str) and value == "auto"):
        return
    check_int(value, name, minimum=1)


def _resolve_chunk_size(chunk_size, method: AbstractInverseRoot | str, n: int, dtype) -> int | None:
    """The chunk actually used: ``"auto"`` -> a cache-sized chunk on CPU for the matmul methods, else ``None``.

    Decided in Python (at trace time) from ``jax.default_backend()``: on CPU one batched call over a large
    stack streams every ``(N, n, n)`` operand from memory at each of the iteration's matmuls, while a chunk of
    ``k`` matrices with ``k * n^2 * itemsize <= 64 KiB`` (the few live operands of a Newton step then stay in
    L2) is reused from cache; on GPU/TPU the whole stack (``None``) is what fills the device. ``eigh`` is
    LAPACK/cuSOLVER per matrix either way: ``None``.
    """
    if not (isinstance(chunk_size, str) and chunk_size == "auto"):
        return chunk_size
    if not as_inverse_root(method).cache_chunks or jax.default_backend() != "cpu":
        return None
    return max(1, _CPU_CHUNK_BYTES // (n * n * jnp.dtype(dtype).itemsize))


def _inverse_root_full(
    a: Array, p: int, method: AbstractInverseRoot, epsilon: float, chunk_size: int | str | None = None
) -> tuple[Array, ...]:
    """`_inverse_root_core`, optionally over chunks of ``chunk_size`` matrices with ``lax.map``.

    Chunking runs the chunks one after another inside one compiled loop: the same maths per matrix (coupled
    Newton stops per matrix in both layouts), with a working set of ``chunk_size`` blocks that stays in cache.
    ``"auto"`` picks between the two layouts (`_resolve_chunk_size`). Returns ``(X, ridge (N,),
    steps (), status (N,))``.
    """
    n_batch, n = a.shape[0], a.shape[-1]
    chunk_size = _resolve_chunk_size(chunk_size, method, n, a.dtype)
    if chunk_size is None or chunk_size >= n_batch:
        return _inverse_root_core(a, p, method, epsilon)
    m = -(-n_batch // chunk_size)
    pad = m * chunk_size - n_batch
    if pad:
        a = jnp.concatenate([a, jnp.broadcast_to(_eye_like(a), (pad, n, n))], axis=0)
    x, ridge, steps, status = lax.map(
        lambda c: _inverse_root_core(c, p, method, epsilon), a.reshape(m, chunk_size, n, n)
    )
    x = x.reshape(m * chunk_size, n, n)[:n_batch]
    ridge = ridge.reshape(m * chunk_size)[:n_batch]
    status = status.reshape(m * chunk_size)[:n_batch]
    return x, ridge, jnp.max(steps), status


def _inverse_root_impl(
    a: Array, p: int, method: AbstractInverseRoot, epsilon: float, chunk_size: int | str | None = None
) -> tuple[Array, Array]:
    """Unchecked inverse roots of a stack (N, n, n) and a per-matrix failure flag (N,) bool.

    Used by DASH inside jit (no value checks, no residual). A matrix fails when its root has a non-finite entry
    or the method reports divergence for it (coupled Newton's status 2); ``max_steps`` reached is not a failure
    (the best iterate is returned).
    """
    x, _, _, status = _inverse_root_full(a, p, method, epsilon, chunk_size)
    failed = (~jnp.all(jnp.isfinite(x), axis=(-2, -1))) | (status == 2)
    return x, failed


# ------------------------------------------------------------------------------------------------------ public


class InverseRootSolution(Solution):
    r"""What `matrix_inverse_root` returns.

    Attributes:
      value: $X \approx A^{-1/p}$, shape ``(..., n, n)``, dtype of ``A``.
      result: an `icmlx.RESULTS` item for the whole batch (the worst one): ``successful``,
        ``max_steps_reached`` or ``diverged`` (coupled Newton), ``inaccurate`` (Newton–DB, Chebyshev), or
        ``nonfinite``. The fixed-work solvers (Newton–DB, Chebyshev) are ``successful`` only when every root is
        finite and its true residual ``stats["residual"]`` is at most the solver's ``rtol`` (default 1e-3),
        else ``inaccurate`` (too few steps or too low a degree for the spectrum, or an input that is not PSD);
        eigh is ``successful`` when the root is finite and the spectrum it inverts (after its heuristic) spans
        less than $1/(n\,\epsilon_{\text{dtype}})$, else ``accuracy_limit`` (a singular or very
        ill-conditioned input whose small eigenvalues are rounding noise: raise ``relative_epsilon`` or use
        float64). Coupled Newton is ``successful`` when every matrix met its criterion
        $\max|M - I| \le$ ``rtol`` on the coupled iterate $M$ (which equals $X^p A_\epsilon$
        up to rounding; ``stats["residual"]`` recomputes that product, whose float32 rounding floor can sit
        above a small ``rtol``).
      stats: ``"num_steps"`` (int32 scalar: coupled Newton's loop count, the maximum over chunks; Newton–DB
        ``num_steps`` per pass times the passes; Chebyshev ``degree``; eigh 0), ``"residual"`` (per matrix,
        $\max_{ij}|X^p A_\epsilon - I|$ with $A_\epsilon = A + rI$ the regularised matrix that was
        inverted, shape ``(...)``) and ``"ridge"`` (the shift $r$ per matrix, shape ``(...)``).
    """

    @property
    def residual(self) -> Array:
        """``stats["residual"]``."""
        return self.stats["residual"]

    @property
    def ridge(self) -> Array:
        """``stats["ridge"]``."""
        return self.stats["ridge"]


def _solve_impl(a: Array, p: int, method: AbstractInverseRoot, epsilon: float, chunk_size):
    x, ridge, steps, status = _inverse_root_full(a, p, method, epsilon, chunk_size)
    a_eps = _symmetrize(a) + ridge[:, None, None] * _eye_like(a)
    # The residual on the rescaled pair (X c^{1/p}, A_eps / c), c = max|A_eps|: the same number without the
    # overflow of X^p for a tiny A (X^4 ~ 1e40 for A ~ 1e-10 in float32).
    c = jnp.maximum(jnp.max(jnp.abs(a_eps), axis=(-2, -1)), _floor(a.dtype))[:, None, None]
    xs = x * c ** (1.0 / p)
    residual = jnp.max(jnp.abs(_matpow(xs, p, None) @ (a_eps / c) - _eye_like(a)), axis=(-2, -1))
    status = method.check_accuracy(status, residual)
    finite = jnp.all(jnp.isfinite(x))
    worst = jnp.zeros([], jnp.int32)
    for c in (5, 4, 1, 2):  # later codes take precedence: diverged > max_steps > inaccurate > accuracy_limit
        worst = jnp.where(jnp.any(status == c), c, worst)
    code = jnp.where(finite, worst, 3).astype(jnp.int32)
    return x, code, steps, residual, ridge


_solve_jit = jax.jit(_solve_impl, static_argnames=("p", "method", "epsilon", "chunk_size"))
_CODES = (RESULTS.successful, RESULTS.max_steps_reached, RESULTS.diverged, RESULTS.nonfinite, RESULTS.inaccurate,
          RESULTS.accuracy_limit)


def _code_to_result(code: Array) -> RESULTS:
    res = RESULTS.nonfinite
    for i in (5, 4, 2, 1, 0):
        res = RESULTS.where(code == i, _CODES[i], res)
    return res


def matrix_inverse_root(
    A: ArrayLike,  # (*batch, n, n) floating: checked by _check_square with a message naming A
    p: int,
    *,
    method: AbstractInverseRoot | str = DEFAULT_INVERSE_ROOT,
    epsilon: float = 1e-10,
    chunk_size: int | Literal["auto"] | None = "auto",
    throw: bool = True,
) -> InverseRootSolution:
    r"""Inverse p-th root $A^{-1/p}$ of a batch of symmetric PSD matrices, one batched call.

    The input is symmetrised and regularised, $A_\epsilon = A + (\epsilon + \epsilon_{rel}\hat\lambda)I$
    with $\hat\lambda$ the scale estimate of the solver's ``scaling``, then solved by ``method``:

    * `NewtonDB` (default): coupled inverse-free Newton–Denman–Beavers on
      $\hat A = A_\epsilon/s$, a fixed ``num_steps`` per pass, matmul only ($p \in \{2, 4\}$).
    * `CoupledNewton`: Higham's coupled Newton iteration
      $M' = (1+\tfrac1p)I - \tfrac1p M,\ X \leftarrow XM',\ M \leftarrow M'^p M$, each matrix stopping
      on its own when $\max|M - I| \le$ ``rtol`` (at most ``max_steps``).
    * `Chebyshev`: degree-``degree`` Chebyshev expansion of $x^{-1/p}$, evaluated
      by the matrix Clenshaw recurrence.
    * `Eigh`: eigendecomposition with a Shampoo spectrum heuristic.

    The scale is $s = c\,\hat\lambda_{\max}$ (`PowerScaling`, $c = 2$) or
    $s = \|A\|_F$ (`FrobeniusScaling`, which over-estimates and costs extra
    Newton–DB steps).

    **Epsilon policy.** A solver's ``relative_epsilon=None`` picks its own ridge (``Eigh`` 0, ``NewtonDB`` and
    ``CoupledNewton`` 1e-6, ``Chebyshev`` 1e-2, all times $\hat\lambda$; at least
    ``eps(matmul_dtype) / 8``, about 1e-3, with bfloat16 matmuls) plus an absolute floor
    $\sqrt{\text{tiny}}$, so an exactly singular or all-zero input gives a finite, symmetric PSD result
    for any iteration count (plain Newton–DB with no ridge goes indefinite and then NaN past ~15 steps).

    Args:
      A: symmetric PSD matrices, shape ``(..., n, n)``, float32/float64 (any leading batch shape), NumPy or JAX;
        bfloat16/float16 are solved in float32 and returned in their own dtype; an empty stack or ``n = 0``
        returns the empty answer.
      p: the root, a positive integer (``NewtonDB``: 2 or 4).
      method: a solver object (an `AbstractInverseRoot`), or the shorthand
        ``"newton_db"``, ``"coupled_newton"``, ``"chebyshev"`` or ``"eigh"`` for its default object.
      epsilon: absolute ridge added to the diagonal (static).
      chunk_size: ``None`` solves the whole flattened batch in one batched call; an integer ``k`` solves it
        ``k`` matrices at a time in one compiled ``lax.map`` loop (the same arithmetic per matrix, so the
        same result up to float rounding of the matmul kernels). ``"auto"`` (default) decides at trace time:
        on the CPU backend (``jax.default_backend() == "cpu"``) and for the matmul methods,
        ``k = max(1, 65536 // (n * n * itemsize))``, i.e. one chunk of matrices takes at most 64 KiB
        (``k = 1`` for ``n >= 128`` in float32, ``4`` for ``n = 64``, ``16`` for ``n = 32``), so the
        iteration's few live operands stay in cache; on GPU/TPU, and for ``Eigh``, ``None``. Measurements:
        ``benchmarks/results/dash_step*.json``.
      throw: raise when ``result`` is not ``RESULTS.successful`` (on the host for an eager call, via
        ``eqx.error_if`` when traced): non-finite output for every method; for ``CoupledNewton`` also
        ``max_steps`` reached or divergence; for ``NewtonDB``/``Chebyshev`` a residual above their ``rtol``.
        With ``throw=False`` the best iterate is returned and the caller inspects ``result``.

    Returns:
      An `InverseRootSolution`: ``value`` $\approx A^{-1/p}$ (per the method), same shape and
      dtype as ``A``; ``result``; ``stats`` with ``num_steps``, ``residual`` and ``ridge``.

    Raises:
      ValueError: bad shape, ``p``, method, ``epsilon`` or ``chunk_size``, or non-finite entries in ``A``
        (checked on the host for a concrete ``A``; via ``eqx.error_if`` at run time when ``A`` is traced); with
        ``throw=True``, at run time, a non-successful ``result``.
      TypeError: non-floating ``A``.

    References:
      Modoranu et al., DASH: Faster Shampoo via batched block preconditioning and efficient inverse-root
      solvers, arXiv:2602.02016. Higham, Functions of Matrices (2008), eq. 7.18. Shi et al., Distributed
      Shampoo, arXiv:2309.06497 (eigenvalue heuristics).

    Examples:
      >>> import jax.numpy as jnp
      >>> import icmlx
      >>> from icmlx.optim import CoupledNewton, NewtonDB, matrix_inverse_root
      >>> A = jnp.stack([jnp.diag(jnp.array([16.0, 1.0])), jnp.diag(jnp.array([81.0, 4.0]))])
      >>> X = matrix_inverse_root(A, 4, method=NewtonDB(num_steps=15)).value
      >>> print(jnp.round(jnp.diagonal(X, axis1=-2, axis2=-1), 3))
      [[0.5   1.   ]
       [0.333 0.707]]
      >>> sol = matrix_inverse_root(A, 2, method=CoupledNewton(max_steps=100, rtol=1e-6), throw=False)
      >>> print(sol.result == icmlx.RESULTS.successful, int(sol.num_steps) > 0, bool(sol.residual.max() < 1e-4))
      True True True
    """
    A = _check_square(A, "matrix_inverse_root")
    method = as_inverse_root(method)
    check_int(p, "p", where="matrix_inverse_root", minimum=1)
    roots = type(method).supported_roots
    if roots is not None and p not in roots:
        raise ValueError(f"method={type(method).__name__}() supports p in {roots}, got {p=}; use CoupledNewton()")
    _check_chunk_size("chunk_size", chunk_size)
    _check_nonneg("matrix_inverse_root", "epsilon", epsilon)
    batch = A.shape[:-2]
    if A.size == 0:  # no matrices, or 0 x 0 ones: the (empty) answer needs no solve
        zeros = jnp.zeros(batch, A.dtype)
        stats = {"num_steps": jnp.zeros([], jnp.int32), "residual": zeros, "ridge": zeros}
        return InverseRootSolution(value=A, result=RESULTS.successful, stats=stats)
    A = _check_finite(A, "matrix_inverse_root")
    a = A.reshape((-1,) + A.shape[-2:])
    a = a.astype(_working_dtype(a.dtype))
    x, code, steps, residual, ridge = _solve_jit(
        a, p=int(p), method=method, epsilon=float(epsilon),
        chunk_size=_resolve_chunk_size(chunk_size, method, a.shape[-1], a.dtype),
    )
    result = _code_to_result(code)
    x = raise_if_failed(x, result, throw).astype(A.dtype).reshape(A.shape)
    stats = {"num_steps": steps, "residual": residual.reshape(batch), "ridge": ridge.astype(A.dtype).reshape(batch)}
    return InverseRootSolution(value=x, result=result, stats=stats)
