"""Relaxation, one family: the multigrid relaxation strategies (damped Jacobi, Chebyshev, multicolour symmetric
Gauss–Seidel) that smooth one level of a hierarchy and, through `apply`, a whole matrix on their own; the G-RANS
smoothers run the same objects. With them the spectral bound they are scaled by: `estimate_lambda_max` (checked),
and ``power_bound``, the one power iteration of the family (the relaxations, G-RANS's smoother and both set-ups
of the hierarchy use it)."""

import abc
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Inexact, Int

from ..._buckets import round_up
from ..._checks import check_int, check_values, is_traced
from ..._inputs import to_device
from .._convert import as_sparse_matrix, check_real, check_square, positive_int
from .._sparse import SparseMatrix

__all__ = ["estimate_lambda_max", "AbstractRelaxation", "JacobiRelaxation", "ChebyshevRelaxation",
           "GaussSeidelRelaxation"]


def _matrix(A: Any) -> Any:
    """``A`` as a square `SparseMatrix` with finite values; an ``EllMatrix`` is kept (checked alike)."""
    if hasattr(A, "idx") and hasattr(A, "val") and hasattr(A, "mv"):  # EllMatrix (imported here would cycle)
        n = check_square(A.shape, "A")
        check_values(A.idx, lambda xp, i: (i < 0) | (i >= n), f"A: EllMatrix indices must lie in [0, {n})")
        check_values(A.val, lambda xp, v: ~xp.isfinite(v), "A has NaN or Inf entries; fix them first")
        return A
    return as_sparse_matrix(A, name="A")


def _vector(r: Any, A: SparseMatrix, name: str = "r") -> jax.Array:
    r = r if is_traced(r) else jnp.asarray(r)
    if r.shape != (A.shape[0],):
        raise ValueError(f"{name} must be a vector of length {A.shape[0]} (A is {A.shape[0]} × {A.shape[1]}), "
                         f"got shape {r.shape}")
    if not jnp.issubdtype(r.dtype, jnp.floating):
        r = r.astype(A.dtype)
    return check_values(r, lambda xp, v: ~xp.isfinite(v), f"{name} has NaN or Inf entries; fix them first")


def _nonzero(d: jax.Array, what: str) -> jax.Array:
    return check_values(d, lambda xp, v: v == 0, f"A has a zero {what}, and the smoother divides by it; "
                        "fix the matrix (every row needs a nonzero diagonal)")


def _positive(value: Any, name: str, where: str, upper: float | None = None) -> Any:
    check_real(value, name, where)
    hi = "" if upper is None else f" and <= {upper:g}"
    shown = "a traced value" if is_traced(value) else f"{name}={value!r}"
    ok = (lambda xp, t: xp.isfinite(t) & (t > 0)) if upper is None else (lambda xp, t: (t > 0) & (t <= upper))
    return check_values(value, lambda xp, t: ~ok(xp, t), f"{where}: {name} must be a finite number > 0{hi}, "
                        f"got {shown}")


def relaxation_diagonal(A: Any, *, l1: bool = False) -> jax.Array:
    """The ``D`` a relaxation divides by: ``diag(A)``, or with ``l1`` the ℓ1 row sums ``Σ_j |a_ij|`` (unchecked).
    ``A``: a ``SparseMatrix`` or an ``EllMatrix``."""
    if not l1:
        return A.diagonal()
    if not isinstance(A, SparseMatrix):  # EllMatrix: one row per column of val
        return jnp.sum(jnp.abs(A.val), axis=0)
    return jax.ops.segment_sum(jnp.abs(A.vals), A.rows, num_segments=A.shape[0])


def estimate_lambda_max(A: Any, *, num_steps: int = 15) -> Float[Array, ""]:
    r"""Power-iteration estimate of $\lambda_{\max}(D^{-1}A)$ (deterministic start vector).

    The power steps run on the similar matrix $S = |D|^{-1/2}\,\mathrm{sign}(D)\,A\,|D|^{-1/2}$ (the same
    eigenvalues as $D^{-1}A$; symmetric when ``A`` is symmetric with a one-signed diagonal), and the estimate is
    the Rayleigh quotient $x^\top S x / x^\top x$ of the iterate after ``num_steps`` steps. For a symmetric
    ``A`` it never exceeds $\lambda_{\max}$; the safe upper bound the relaxations are scaled by is
    $\min(1.1\,\hat\lambda, \max_i \sum_j |a_{ij}| / |a_{ii}|)$ (the Gershgorin cap).

    Args:
      A: the n × n matrix with a nonzero diagonal (a ``SparseMatrix``, SciPy sparse, BCOO or dense).
      num_steps: power iterations (static, ``>= 0``).

    Returns:
      The Rayleigh-quotient estimate (a scalar of ``A``'s dtype).

    Raises:
      ValueError: an empty matrix, NaN/Inf entries, a zero diagonal entry, ``num_steps < 0``.

    References:
      Adams, Brezina, Hu & Tuminaro, "Parallel multigrid smoothing: polynomial versus Gauss–Seidel",
      *J. Comput. Phys.* 188 (2003) (the 1.1 × power-iteration bound of Chebyshev smoothers).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.solvers import SparseMatrix, estimate_lambda_max
      >>> A = SparseMatrix.from_dense(jnp.array([[2.0, -1.0], [-1.0, 2.0]]))
      >>> round(float(estimate_lambda_max(A)), 3)
      1.5
    """
    A = _matrix(A)
    num_steps = positive_int(num_steps, "num_steps", "estimate_lambda_max", minimum=0)
    if A.shape[0] == 0:  # (an empty power iteration divides 0 by 0)
        raise ValueError("estimate_lambda_max: A is empty (0 × 0); there is no spectrum to estimate")
    d = _nonzero(A.diagonal(), "diagonal entry")
    return lambda_max_bound(A, num_steps=num_steps, d=d)[0]


def power_bound(mv, d, row_abs_sum, start, num_steps: int):
    r"""``(estimate, upper)`` of $\rho(D^{-1}A)$: the one power iteration of the multigrid family (unchecked).

    ``num_steps`` steps of $x \leftarrow Sx / \|Sx\|$ on $S = |D|^{-1/2}\mathrm{sign}(D) A |D|^{-1/2}$ from
    ``start``; ``estimate`` is the Rayleigh quotient of the last iterate (the cap when ``num_steps = 0``) and
    ``upper = min(1.1 * estimate, cap)`` with the Gershgorin cap ``max_i row_abs_sum_i / |d_i|``, which bounds
    $\rho$ for any ``A``, so ``upper`` never exceeds it; an underestimate would make a Chebyshev smoother amplify
    the top of the spectrum. For a positive semi-definite ``S`` the quotients never decrease (the moments
    $x_0^\top S^j x_0$ are log-convex in $j$). ``mv``: the product $v \mapsto Av$ (jit-safe; ``num_steps``
    static). Used by `estimate_lambda_max`, the relaxations' `apply`, G-RANS's smoother, and both set-ups of the
    smoothed-aggregation hierarchy (host and JAX numeric), so each level's bound is the same number everywhere."""
    ad = jnp.abs(d)
    tiny = jnp.finfo(ad.dtype).tiny
    s = 1.0 / jnp.sqrt(ad)
    cap = jnp.max(row_abs_sum / ad)

    def body(_, c):
        x, _lam = c
        y = jnp.sign(d) * s * mv(s * x)
        lam = jnp.real(jnp.vdot(x, y)) / jnp.maximum(jnp.real(jnp.vdot(x, x)), tiny)
        return y / jnp.maximum(jnp.linalg.norm(y), tiny), lam.astype(ad.dtype)

    x0 = start / jnp.maximum(jnp.linalg.norm(start), tiny)
    _, lam = jax.lax.fori_loop(0, num_steps, body, (x0.astype(jnp.result_type(start, d)), cap))
    return lam, jnp.minimum(1.1 * lam, cap)


def lambda_max_bound(A: Any, *, num_steps: int = 15, d=None):
    r"""`power_bound` of a ``SparseMatrix`` or ``EllMatrix`` from the deterministic start $1 + \sin(1.618 i)$
    after ``num_steps + 1`` products (unchecked): ``(estimate, upper)``."""
    n = A.shape[0]
    start = 1.0 + jnp.sin(jnp.arange(n, dtype=A.dtype) * 1.618)
    d = A.diagonal() if d is None else d
    return power_bound(A.mv, d, relaxation_diagonal(A, l1=True), start, num_steps + 1)


# -- relaxation strategies of a multigrid cycle ----------------------------------------------------------------------
def _check_int(value: Any, name: str, owner: str) -> None:
    check_int(value, name, where=owner, minimum=1)


def _check_range(value: Any, name: str, owner: str, lo: float, hi: float) -> None:
    check_real(value, name, owner)
    ok = isinstance(value, (int, float, np.floating)) and not isinstance(value, bool) and lo < value <= hi
    if not ok:
        raise ValueError(f"{owner}: {name} must be a number in ({lo:g}, {hi:g}], got {name}={value!r}")


class AbstractRelaxation(eqx.Module):
    """The smoother applied before and after each coarse correction of a multigrid cycle.

    A strategy object (static settings only, hashable): pass one as ``relaxation=`` to
    `amg_setup` or `solve`. Subclasses: `JacobiRelaxation`,
    `ChebyshevRelaxation` (the default for symmetric ``A``) and `GaussSeidelRelaxation`. Each
    carries its behaviour: `relax` smooths one level, `needs_coloring` asks the set-up for a colouring; the
    polynomial ones (Jacobi, Chebyshev) also `apply` to a whole matrix on their own, and G-RANS's
    `ChebyshevSmoother` runs them.
    """

    needs_coloring = False

    @abc.abstractmethod
    def relax(self, A, dinv, lambda_max, colors, b, x, zero: bool):
        """One pre- or post-smoothing of ``A x = b`` from ``x`` on one padded level (``zero``: ``x = 0``, skipping
        a product); ``dinv`` the inverse diagonal, ``lambda_max`` the bound of ``ρ(D⁻¹A)``, ``colors`` the
        `ColorBlocks` of the level (``None`` unless `needs_coloring`)."""


class _PolynomialRelaxation(AbstractRelaxation):
    """A polynomial smoother in ``D⁻¹A``: from ``x`` it equals ``x`` plus the same smoother from 0 applied to the
    residual."""

    @abc.abstractmethod
    def correction(self, A, dinv, lambda_max, r):
        """The smoother from a zero guess applied to ``r`` (unchecked: the kernel of the compiled loops)."""

    def relax(self, A, dinv, lambda_max, colors, b, x, zero: bool):
        r = b if zero else b - A.mv(x)
        e = self.correction(A, dinv, lambda_max, r)
        return e if zero else x + e

    def apply(self, A: Any, r: Float[Array, " n"], *, lambda_max: Float[Array, ""] | float | None = None,
              l1: bool = False) -> Float[Array, " n"]:
        r"""This smoothing of $A e = r$ from $e = 0$, on its own (checked; jit-safe).

        Args:
          A: the n × n matrix (a ``SparseMatrix``, SciPy sparse, BCOO or dense).
          r: residual ``float[n]``.
          lambda_max: the bound $\rho \ge \rho(D^{-1}A)$ the relaxation is scaled by, ``> 0``. ``None``
            (default): 1 with ``l1`` (the ℓ1 row sums bound the spectrum by 1), else
            ``1.1 * estimate_lambda_max(A)`` capped by the Gershgorin bound $\max_i \sum_j |a_{ij}| / |a_{ii}|$.
          l1: take $D_{ii} = \sum_j |a_{ij}|$ (the ℓ1 row sums) in place of the diagonal.

        Returns:
          The correction ``e`` (``float[n]``).

        Raises:
          ValueError: ``r`` of the wrong length, NaN/Inf in ``A`` or ``r``, a zero entry of ``D``, or
            ``lambda_max <= 0`` or NaN.
          TypeError: ``l1`` is not a bool.
        """
        where = f"{type(self).__name__}.apply"
        A = _matrix(A)
        r = _vector(r, A)
        if not isinstance(l1, bool):
            raise TypeError(f"{where}: l1 must be a bool, got l1={l1!r}")
        d = _nonzero(relaxation_diagonal(A, l1=l1), "l1 row sum" if l1 else "diagonal entry")
        if lambda_max is None:
            if A.shape[0] == 0:  # (an empty power iteration divides 0 by 0)
                return r
            lambda_max = 1.0 if l1 else lambda_max_bound(A, d=d)[1]
        else:
            lambda_max = _positive(lambda_max, "lambda_max", where)
        return self.correction(A, 1.0 / d, lambda_max, r)


class JacobiRelaxation(_PolynomialRelaxation):
    r"""Damped Jacobi sweeps $x \leftarrow x + \frac{\omega}{\rho} D^{-1}(b - A x)$, ``ρ ≥ ρ(D⁻¹A)``.

    On a multigrid level ``ρ`` is the set-up's bound; `apply` runs the sweeps on their own (from $e = 0$, so the
    first is $e = \frac{\omega}{\rho} D^{-1} r$), with ``lambda_max=1`` for the classical damped Jacobi
    $e \leftarrow e + \omega D^{-1}(r - A e)$, and ``l1=True`` for ℓ1-Jacobi (convergent for any SPD ``A``
    with ``omega=1``).

    Attributes:
      omega: damping relative to ``1/ρ(D⁻¹A)`` in ``(0, 2]`` (``4/3`` minimises the largest amplification of the
        upper half of the spectrum).
      num_steps: sweeps per pre- and post-smoothing (matrix-vector products: ``num_steps``, the first free
        from a zero guess).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.solvers import JacobiRelaxation, SparseMatrix
      >>> JacobiRelaxation(num_steps=2)
      JacobiRelaxation(num_steps=2)
      >>> A = SparseMatrix.from_dense(jnp.array([[2.0, 0.0], [0.0, 4.0]]))
      >>> JacobiRelaxation(omega=1.0).apply(A, jnp.array([2.0, 4.0]), lambda_max=1.0)
      Array([1., 1.], dtype=float32)
    """

    omega: float = eqx.field(static=True, default=4.0 / 3.0)
    num_steps: int = eqx.field(static=True, default=1)

    def __check_init__(self):
        _check_range(self.omega, "omega", "JacobiRelaxation", 0.0, 2.0)
        _check_int(self.num_steps, "num_steps", "JacobiRelaxation")

    def correction(self, A, dinv, lambda_max, r):
        # ``dinv``: 0 on the padding rows of a hierarchy level keeps them 0
        w = (self.omega / lambda_max) * dinv
        e = w * r
        for _ in range(self.num_steps - 1):  # static, small
            e = e + w * (r - A.mv(e))
        return e


class ChebyshevRelaxation(_PolynomialRelaxation):
    r"""Chebyshev polynomial smoothing on $D^{-1}A$ for $[\rho/\mathrm{ratio}, \rho]$.

    ``degree`` matrix-vector products per smoothing (the three-term recurrence of Saad, Alg. 12.1); ``ρ`` is a safe
    upper bound of ``ρ(D⁻¹A)`` from the set-up, or the ``lambda_max`` given to `apply`. The error after one
    smoothing from zero is $p(D^{-1}A)\,e$ with $p(\lambda) = T_k\big((\theta - \lambda)/\delta\big) /
    T_k(\theta/\delta)$, $\theta, \delta$ the centre and half-width of the interval, $k$ the degree.

    Attributes:
      degree: polynomial degree (a positive int).
      ratio: ``ρ / λ_min`` of the targeted interval, ``> 1``.

    References:
      Adams, Brezina, Hu & Tuminaro, J. Comput. Phys. 188 (2003); Saad, *Iterative Methods for Sparse Linear
      Systems*, 2nd ed., Alg. 12.1.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.solvers import ChebyshevRelaxation, SparseMatrix
      >>> ChebyshevRelaxation(degree=3)
      ChebyshevRelaxation(degree=3)
      >>> A = SparseMatrix.from_dense(jnp.array([[2.0, -1.0], [-1.0, 2.0]]))
      >>> r = jnp.array([1.0, 1.0])
      >>> e = ChebyshevRelaxation(degree=3).apply(A, r, lambda_max=1.6)
      >>> bool(jnp.linalg.norm(r - A.mv(e)) < 1.0)
      True
    """

    degree: int = eqx.field(static=True, default=2)
    ratio: float = eqx.field(static=True, default=30.0)

    def __check_init__(self):
        _check_int(self.degree, "degree", "ChebyshevRelaxation")
        _check_range(self.ratio, "ratio", "ChebyshevRelaxation", 1.0, float("inf"))

    def correction(self, A, dinv, lambda_max, r):
        lmax = jnp.asarray(lambda_max, r.dtype)
        lmin = lmax / self.ratio
        theta = 0.5 * (lmax + lmin)
        delta = 0.5 * (lmax - lmin)
        sigma = theta / delta
        rho = 1.0 / sigma
        d = dinv * r / theta
        e = d
        for _ in range(self.degree - 1):  # static, small
            r = r - A.mv(d)
            rho_new = 1.0 / (2.0 * sigma - rho)
            d = rho_new * rho * d + (2.0 * rho_new / delta) * (dinv * r)
            e = e + d
            rho = rho_new
        return e


class GaussSeidelRelaxation(AbstractRelaxation):
    r"""Multicolour symmetric Gauss–Seidel: the rows of one colour (an independent set of the matrix graph)
    relax at once, $x_c \leftarrow x_c + D_c^{-1}(b - A x)_c$, colours forward then backward.

    Every colour sees the updates of the colours before it, as Gauss–Seidel in the colour ordering; one
    symmetric sweep costs about two matrix-vector products. The colouring is made at set-up (Luby independent
    sets).

    Attributes:
      num_steps: symmetric sweeps per pre- and post-smoothing.

    References:
      Adams, "A distributed memory unstructured Gauss–Seidel algorithm for multigrid smoothers", SC 2001.

    Examples:
      >>> from icmlx.solvers import GaussSeidelRelaxation
      >>> GaussSeidelRelaxation(num_steps=2)
      GaussSeidelRelaxation(num_steps=2)
    """

    num_steps: int = eqx.field(static=True, default=1)

    def __check_init__(self):
        _check_int(self.num_steps, "num_steps", "GaussSeidelRelaxation")

    needs_coloring = True

    def relax(self, A, dinv, lambda_max, colors, b, x, zero: bool):
        for _ in range(self.num_steps):  # static, small
            x = _gs_sweep(colors, b, x, reverse=False)
            x = _gs_sweep(colors, b, x, reverse=True)
        return x


class ColorBlocks(eqx.Module):
    """The rows of each colour of one level as a padded ELL block (padding rows have ``dinv = 0``)."""

    rows: Int[Array, "c m"]
    idx: Int[Array, "c k m"]
    val: Inexact[Array, "c k m"]
    dinv: Inexact[Array, "c m"]

    @classmethod
    def from_ell(cls, idx: np.ndarray, val: np.ndarray, d: np.ndarray, color: np.ndarray,
                 dtype: Any) -> "ColorBlocks":
        """From the host arrays ``(idx, val)`` (``[k, ≥ n]``) of a level's padded ELL operator (no stored zeros),
        its diagonal ``d`` and a colour per row (the ``n`` real rows)."""
        nc = int(color.max()) + 1
        counts = np.bincount(color, minlength=nc)
        m = round_up(int(counts.max()), 8)
        order = np.argsort(color, kind="stable")
        start = np.concatenate([[0], np.cumsum(counts)[:-1]])
        slot = np.arange(order.size) - start[color[order]]
        rows = np.zeros((nc, m), np.int32)
        rows[color[order], slot] = order
        dinv = np.zeros((nc, m), np.result_type(d, np.float64))
        dinv[color[order], slot] = 1.0 / d[order]
        # row r's k slots go to colour block color[r], position where[r]: one flat scatter of the (k, n) arrays
        n = color.size
        k = idx.shape[0]
        where = np.empty(n, np.int64)
        where[order] = slot
        dest = (color * (k * m) + where)[None, :] + (np.arange(k, dtype=np.int64) * m)[:, None]
        cidx = np.zeros((nc, k, m), np.int32)
        cval = np.zeros((nc, k, m), np.result_type(val, np.float64))
        cidx.ravel()[dest] = idx[:, :n]
        cval.ravel()[dest] = val[:, :n]
        return cls(to_device(rows, np.int32), to_device(cidx, np.int32), to_device(cval, dtype),
                   to_device(dinv, dtype))


def _gs_sweep(cb: ColorBlocks, b, x, reverse: bool):
    nc = cb.rows.shape[0]

    def body(i, x):
        c = nc - 1 - i if reverse else i

        def slot(j, acc):
            return acc + cb.val[c, j] * x[cb.idx[c, j]]

        rows = cb.rows[c]
        ax = jax.lax.fori_loop(0, cb.idx.shape[1], slot, jnp.zeros(rows.shape, x.dtype))
        return x.at[rows].add(cb.dinv[c] * (b[rows] - ax))

    return jax.lax.fori_loop(0, nc, body, x)


def relax(strategy: AbstractRelaxation | None, A, dinv, lambda_max, colors, b, x, zero: bool, degree: int):
    """One pre- or post-smoothing by ``strategy`` (``None``: Chebyshev of ``degree`` for ``[λ/30, λ]``, for a
    `MultilevelHierarchy` made without a relaxation)."""
    if strategy is None:
        strategy = ChebyshevRelaxation(degree=degree)
    return strategy.relax(A, dinv, lambda_max, colors, b, x, zero)
