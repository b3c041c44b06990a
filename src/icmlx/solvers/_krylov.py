"""Classical Krylov solvers and smoothers in JAX (baselines for G-RANS)."""

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from .._deprecation import renamed_kwargs
from .._results import RESULTS, raise_if_failed
from ._solution import LinearSolution

__all__ = [
    "cg",
    "gmres",
    "bicgstab",
    "jacobi_smoother",
    "chebyshev_smoother",
    "estimate_lambda_max",
]

Operator = Any  # a SparseMatrix, any lineax operator (``.mv``), or a callable ``x -> A x``


def _mv(A: Operator) -> Callable[[Array], Array]:
    if hasattr(A, "mv"):
        return A.mv
    if callable(A):
        return A
    raise TypeError(f"operator must be a SparseMatrix, a lineax operator or a callable, got {type(A)}")


def _check_vector(b: Array, n: int | None = None) -> Array:
    b = jnp.asarray(b)
    if b.ndim != 1:
        raise ValueError(f"right-hand side must be 1-D, got {b.shape=}")
    if not jnp.issubdtype(b.dtype, jnp.floating):
        raise TypeError(f"right-hand side must be floating, got {b.dtype=}")
    if n is not None and b.shape[0] != n:
        raise ValueError(f"right-hand side has length {b.shape[0]} but the operator has {n} columns")
    return b


def _n_of(A: Operator) -> int | None:
    shape = getattr(A, "shape", None)
    if shape is not None:
        if shape[0] != shape[1]:
            raise ValueError(f"operator must be square, got {shape=}")
        return int(shape[0])
    return None


def _finish(mv, b, x, it, ok, breakdown, throw) -> LinearSolution:
    """The record: ``successful`` exactly when the iteration's stopping rule ``ok`` held (CG/BiCGStab: the
    recursive residual, as SciPy; GMRES: the true residual after a cycle), with the true ``‖b − A x‖₂`` in
    ``stats["residual_norm"]``."""
    res = jnp.linalg.norm(b - mv(x))
    result = RESULTS.where(ok, RESULTS.successful,
                           RESULTS.where(breakdown, RESULTS.breakdown, RESULTS.max_steps_reached))
    sol = LinearSolution(x, result, {"num_steps": it, "residual_norm": res})
    return raise_if_failed(sol, result, throw)


def cg(
    A: Operator,
    b: Float[Array, " n"],
    x0: Float[Array, " n"] | None = None,
    *,
    rtol: float = 1e-5,
    atol: float = 0.0,
    max_steps: int = 10_000,
    preconditioner: Callable[[Array], Array] | str | None = None,
    throw: bool = True,
) -> LinearSolution:
    r"""Preconditioned conjugate gradients for symmetric positive definite ``A``.

    Stops when :math:`\|r_k\|_2 \le \max(\mathrm{rtol}\,\|b\|_2, \mathrm{atol})` (the recursive
    residual, as ``scipy.sparse.linalg.cg``).

    Args:
      A: ``SparseMatrix``, lineax operator or callable ``x -> A x`` (n × n, SPD).
      b: right-hand side ``float[n]``.
      x0: initial guess (zeros if ``None``).
      rtol, atol: tolerances.
      max_steps: iteration cap.
      preconditioner: ``None``, ``"jacobi"`` (needs a ``SparseMatrix``), or a callable ``r -> M⁻¹ r``.
      throw: raise (via ``eqx.error_if``, under ``jit`` too) unless ``result`` is ``RESULTS.successful``.

    Returns:
      A :class:`~icmlx.solvers.LinearSolution` (stats ``num_steps``, ``residual_norm``: the true final
      ``‖b − A x‖₂``); ``result`` is ``successful`` exactly when the stopping rule above held.

    References:
      Hestenes & Stiefel (1952); Saad, *Iterative Methods for Sparse Linear Systems*, Alg. 9.1.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.solvers import SparseMatrix, cg
      >>> A = SparseMatrix.from_dense(jnp.array([[4.0, 1.0], [1.0, 3.0]]))
      >>> sol = cg(A, jnp.array([1.0, 2.0]), rtol=1e-6)
      >>> [round(float(v), 4) for v in sol.value]
      [0.0909, 0.6364]
    """
    n = _n_of(A)
    b = _check_vector(b, n)
    mv = _mv(A)
    if preconditioner == "jacobi":
        dinv = 1.0 / A.diagonal()
        M = lambda r: dinv * r
    elif preconditioner is None:
        M = lambda r: r
    elif callable(preconditioner):
        M = preconditioner
    else:
        raise ValueError(f"unknown preconditioner {preconditioner!r}")
    x = jnp.zeros_like(b) if x0 is None else jnp.asarray(x0, b.dtype)
    r = b - mv(x)
    z = M(r)
    tol = jnp.maximum(rtol * jnp.linalg.norm(b), atol)
    tol2 = tol**2

    def cond(c):
        _, r, _, _, _, it, bad = c
        return (jnp.vdot(r, r) > tol2) & (it < max_steps) & ~bad

    def body(c):
        x, r, z, p, rz, it, _ = c
        Ap = mv(p)
        pAp = jnp.vdot(p, Ap)
        bad = ~(pAp > 0)
        alpha = jnp.where(bad, 0.0, rz / jnp.where(bad, 1.0, pAp))
        x = x + alpha * p
        r = r - alpha * Ap
        z = M(r)
        rz_new = jnp.vdot(r, z)
        p = z + (rz_new / rz) * p
        return x, r, z, p, rz_new, it + 1, bad

    init = (x, r, z, z, jnp.vdot(r, z), jnp.array(0, jnp.int32), jnp.array(False))
    x, r, _, _, _, it, bad = jax.lax.while_loop(cond, body, init)
    return _finish(mv, b, x, it, jnp.vdot(r, r) <= tol2, bad, throw)


def bicgstab(
    A: Operator,
    b: Float[Array, " n"],
    x0: Float[Array, " n"] | None = None,
    *,
    rtol: float = 1e-5,
    atol: float = 0.0,
    max_steps: int = 10_000,
    throw: bool = True,
) -> LinearSolution:
    r"""BiCGStab (van der Vorst) for general nonsingular ``A``, unpreconditioned.

    Stops when :math:`\|r_k\|_2 \le \max(\mathrm{rtol}\,\|b\|_2, \mathrm{atol})`; a zero inner product
    is reported as ``RESULTS.breakdown``.

    Args:
      A: ``SparseMatrix``, lineax operator or callable.
      b: right-hand side ``float[n]``.
      x0: initial guess.
      rtol, atol, max_steps, throw: as in ``cg``.

    Returns:
      A :class:`~icmlx.solvers.LinearSolution`, as in ``cg``.

    References:
      van der Vorst, SIAM J. Sci. Stat. Comput. 13 (1992).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.solvers import SparseMatrix, bicgstab
      >>> A = SparseMatrix.from_dense(jnp.array([[4.0, 1.0], [-1.0, 3.0]]))
      >>> [round(float(v), 4) for v in bicgstab(A, jnp.array([1.0, 2.0]), rtol=1e-6).value]
      [0.0769, 0.6923]
    """
    n = _n_of(A)
    b = _check_vector(b, n)
    mv = _mv(A)
    x = jnp.zeros_like(b) if x0 is None else jnp.asarray(x0, b.dtype)
    r = b - mv(x)
    rhat = r
    tol = jnp.maximum(rtol * jnp.linalg.norm(b), atol)
    tol2 = tol**2
    one = jnp.ones((), b.dtype)

    def cond(c):
        r, it, bad = c[1], c[-2], c[-1]
        return (jnp.vdot(r, r) > tol2) & (it < max_steps) & ~bad

    def body(c):
        x, r, p, v, rho, alpha, omega, it, _ = c
        rho_new = jnp.vdot(rhat, r)
        beta = (rho_new / rho) * (alpha / omega)
        p = r + beta * (p - omega * v)
        v = mv(p)
        den = jnp.vdot(rhat, v)
        bad = (den == 0) | (rho_new == 0)
        alpha = rho_new / jnp.where(den == 0, one, den)
        s = r - alpha * v
        t = mv(s)
        tt = jnp.vdot(t, t)
        omega = jnp.where(tt > 0, jnp.vdot(t, s) / jnp.where(tt > 0, tt, one), 0.0)
        x = x + alpha * p + omega * s
        r = s - omega * t
        bad = bad | (omega == 0) & (jnp.vdot(r, r) > tol2)
        return x, r, p, v, rho_new, alpha, omega, it + 1, bad

    z = jnp.zeros_like(b)
    init = (x, r, z, z, one, one, one, jnp.array(0, jnp.int32), jnp.array(False))
    out = jax.lax.while_loop(cond, body, init)
    x, r, it, bad = out[0], out[1], out[-2], out[-1]
    return _finish(mv, b, x, it, jnp.vdot(r, r) <= tol2, bad, throw)


def gmres(
    A: Operator,
    b: Float[Array, " n"],
    x0: Float[Array, " n"] | None = None,
    *,
    rtol: float = 1e-5,
    atol: float = 0.0,
    restart: int = 30,
    max_steps: int = 10_000,
    throw: bool = True,
) -> LinearSolution:
    r"""Restarted GMRES(m) with modified Gram–Schmidt Arnoldi, unpreconditioned.

    Each cycle builds an orthonormal Krylov basis :math:`Q_m` of :math:`\mathcal K_m(A, r_0)` and
    minimises :math:`\|\beta e_1 - \bar H_m y\|_2`; the true residual is checked after every cycle, so
    ``num_steps`` is a multiple of ``restart`` (capped by ``max_steps`` rounded up to a full cycle).

    Args:
      A: ``SparseMatrix``, lineax operator or callable.
      b: right-hand side ``float[n]``.
      x0: initial guess.
      rtol, atol, throw: as in ``cg``.
      restart: Krylov dimension per cycle (static).
      max_steps: cap on inner steps.

    Returns:
      A :class:`~icmlx.solvers.LinearSolution`, as in ``cg``.

    References:
      Saad & Schultz, SIAM J. Sci. Stat. Comput. 7 (1986).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.solvers import SparseMatrix, gmres
      >>> A = SparseMatrix.from_dense(jnp.array([[4.0, 1.0], [-1.0, 3.0]]))
      >>> [round(float(v), 4) for v in gmres(A, jnp.array([1.0, 2.0]), restart=2).value]
      [0.0769, 0.6923]
    """
    if restart < 1:
        raise ValueError(f"restart must be >= 1, got {restart=}")
    n = _n_of(A)
    b = _check_vector(b, n)
    mv = _mv(A)
    m = restart
    x = jnp.zeros_like(b) if x0 is None else jnp.asarray(x0, b.dtype)
    tol = jnp.maximum(rtol * jnp.linalg.norm(b), atol)
    max_cycles = -(-max_steps // m)
    tiny = jnp.finfo(b.dtype).tiny

    def cycle(x):
        r = b - mv(x)
        beta = jnp.linalg.norm(r)
        Q = jnp.zeros((m + 1, b.shape[0]), b.dtype).at[0].set(r / jnp.maximum(beta, tiny))
        H = jnp.zeros((m + 1, m), b.dtype)

        def arnoldi(j, QH):
            Q, H = QH
            w = mv(Q[j])

            def mgs(i, wh):
                w, h = wh
                use = i <= j
                hij = jnp.where(use, jnp.vdot(Q[i], w), 0.0)
                return w - hij * Q[i], h.at[i].set(hij)

            w, h = jax.lax.fori_loop(0, m, mgs, (w, jnp.zeros((m + 1,), b.dtype)))
            hn = jnp.linalg.norm(w)
            h = h.at[j + 1].set(hn)
            Q = Q.at[j + 1].set(jnp.where(hn > tiny, w / jnp.maximum(hn, tiny), 0.0))
            return Q, H.at[:, j].set(h)

        Q, H = jax.lax.fori_loop(0, m, arnoldi, (Q, H))
        e1 = jnp.zeros((m + 1,), b.dtype).at[0].set(beta)
        y = jnp.linalg.lstsq(H, e1)[0]
        return x + Q[:m].T @ y

    def cond(c):
        x, res, k = c
        return (res > tol) & (k < max_cycles)

    def body(c):
        x, _, k = c
        x = cycle(x)
        return x, jnp.linalg.norm(b - mv(x)), k + 1

    res0 = jnp.linalg.norm(b - mv(x))
    x, res, k = jax.lax.while_loop(cond, body, (x, res0, jnp.array(0, jnp.int32)))
    return _finish(mv, b, x, k * m, res <= tol, jnp.array(False), throw)


@renamed_kwargs(steps="num_steps")
def jacobi_smoother(
    A: Operator,
    r: Float[Array, " n"],
    *,
    omega: float = 2.0 / 3.0,
    num_steps: int = 2,
    l1: bool = False,
) -> Float[Array, " n"]:
    r"""Damped (or ℓ1) Jacobi sweeps on :math:`A e = r` from :math:`e = 0`.

    .. math:: e \leftarrow e + \omega D^{-1}(r - A e), \qquad D = \mathrm{diag}(A)\ \text{or}\
        D_{ii} = \textstyle\sum_j |a_{ij}|\ (\ell_1)

    Args:
      A: ``SparseMatrix`` (n × n).
      r: residual ``float[n]``.
      omega: damping (use 1 with ``l1=True``).
      num_steps: number of sweeps (static; ``steps=`` is a deprecated alias).
      l1: use the ℓ1 row sums, which make the sweep convergent for any SPD ``A``.

    Returns:
      The correction ``e`` (``float[n]``).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.solvers import SparseMatrix, jacobi_smoother
      >>> A = SparseMatrix.from_dense(jnp.array([[2.0, 0.0], [0.0, 4.0]]))
      >>> jacobi_smoother(A, jnp.array([2.0, 4.0]), omega=1.0, num_steps=1)
      Array([1., 1.], dtype=float32)
    """
    if l1:
        d = jax.ops.segment_sum(jnp.abs(A.vals), A.rows, num_segments=A.shape[0])
    else:
        d = A.diagonal()
    dinv = omega / d
    e = dinv * r
    for _ in range(num_steps - 1):  # static, small
        e = e + dinv * (r - A.mv(e))
    return e


@renamed_kwargs(steps="num_steps")
def estimate_lambda_max(A: Operator, *, num_steps: int = 15) -> Float[Array, ""]:
    r"""Power-iteration estimate of :math:`\lambda_{\max}(D^{-1}A)` (deterministic start vector).

    Args:
      A: ``SparseMatrix``.
      num_steps: power iterations (static; ``steps=`` is a deprecated alias).

    Returns:
      The Rayleigh-quotient estimate (a scalar of ``A``'s dtype).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.solvers import SparseMatrix, estimate_lambda_max
      >>> A = SparseMatrix.from_dense(jnp.array([[2.0, -1.0], [-1.0, 2.0]]))
      >>> round(float(estimate_lambda_max(A)), 3)
      1.5
    """
    dinv = 1.0 / A.diagonal()
    n = A.shape[0]
    v = 1.0 + jnp.sin(jnp.arange(n, dtype=A.dtype) * 1.618)

    def body(_, v):
        w = dinv * A.mv(v)
        return w / jnp.linalg.norm(w)

    v = jax.lax.fori_loop(0, num_steps, body, v / jnp.linalg.norm(v))
    w = dinv * A.mv(v)
    return jnp.vdot(v, w) / jnp.vdot(v, v)


def chebyshev_smoother(
    A: Operator,
    r: Float[Array, " n"],
    *,
    lambda_max: Float[Array, ""] | float,
    degree: int = 3,
    ratio: float = 30.0,
    dinv: Float[Array, " n"] | None = None,
) -> Float[Array, " n"]:
    r"""Chebyshev polynomial smoother on :math:`D^{-1}A e = D^{-1} r` from :math:`e = 0`.

    Targets the interval :math:`[\lambda_{\max}/\mathrm{ratio},\ \lambda_{\max}]` with the three-term
    recurrence of Saad (Alg. 12.1); ``degree`` matrix-vector products.

    Args:
      A: ``SparseMatrix`` (n × n, SPD with positive diagonal).
      r: residual ``float[n]``.
      lambda_max: upper bound of the spectrum of ``D⁻¹A`` (e.g. ``1.1 * estimate_lambda_max(A)``).
      degree: polynomial degree (static, ≥ 1).
      ratio: ``lambda_max / lambda_min`` of the targeted interval.
      dinv: precomputed ``1 / diag(A)`` (default: from ``A.diagonal()``); 0 on padding rows keeps them 0.

    Returns:
      The correction ``e`` (``float[n]``).

    References:
      Adams, Brezina, Hu & Tuminaro, J. Comput. Phys. 188 (2003).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.solvers import SparseMatrix, chebyshev_smoother
      >>> A = SparseMatrix.from_dense(jnp.array([[2.0, -1.0], [-1.0, 2.0]]))
      >>> e = chebyshev_smoother(A, jnp.array([1.0, 1.0]), lambda_max=1.6, degree=3)
      >>> bool(jnp.linalg.norm(jnp.array([1.0, 1.0]) - A.mv(e)) < 1.0)
      True
    """
    if degree < 1:
        raise ValueError(f"Chebyshev degree must be >= 1, got {degree=}")
    if dinv is None:
        dinv = 1.0 / A.diagonal()
    lmax = jnp.asarray(lambda_max, r.dtype)
    lmin = lmax / ratio
    theta = 0.5 * (lmax + lmin)
    delta = 0.5 * (lmax - lmin)
    sigma = theta / delta
    rho = 1.0 / sigma
    d = dinv * r / theta
    e = d
    for _ in range(degree - 1):  # static, small
        r = r - A.mv(d)
        rho_new = 1.0 / (2.0 * sigma - rho)
        d = rho_new * rho * d + (2.0 * rho_new / delta) * (dinv * r)
        e = e + d
        rho = rho_new
    return e
