r"""Inverse-root solvers and scale estimates as strategy objects.

A solver object names the method of `matrix_inverse_root` and carries exactly the settings that
method uses (lineax style: ``method=NewtonDB(num_steps=12)`` as ``lx.CG(rtol=...)``). Every object is an
``eqx.Module`` with static fields only, so it is hashable, a valid ``jax.jit`` static argument, and left alone by
``optax.inject_hyperparams`` (it is not callable and not a number). Invalid settings raise a ``ValueError`` naming
the argument at construction.
"""

from typing import Any, ClassVar, Literal

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from .._checks import check_int, check_number
from .._strategy import as_strategy
from ._root_kernels import (
    _chebyshev,
    _coupled_newton,
    _eigh_root,
    _eye_like,
    _floor,
    _newton_db,
    _power_iteration,
    _resolve_matmul_dtype,
)

__all__ = [
    "AbstractScaling",
    "PowerScaling",
    "FrobeniusScaling",
    "AbstractInverseRoot",
    "NewtonDB",
    "CoupledNewton",
    "Chebyshev",
    "Eigh",
    "as_inverse_root",
]


def _check_count(owner: str, name: str, value: Any) -> None:
    check_int(value, name, where=owner, minimum=1)


def _check_nonneg(owner: str, name: str, value: Any) -> None:
    """``None`` or a concrete real number >= 0 (a static setting: an array is refused)."""
    if value is None:
        return
    if isinstance(value, (jax.Array, np.ndarray)):
        raise ValueError(f"{owner}: {name} must be a Python float, got {name}={value!r}")
    check_number(value, name, where=owner, minimum=0)


def _check_matmul_dtype(owner: str, value: Any) -> None:
    if value is None:
        return
    try:
        dt = jnp.dtype(value)
    except TypeError as err:
        raise TypeError(f"{owner}: matmul_dtype must be a floating dtype, got matmul_dtype={value!r}") from err
    if not jnp.issubdtype(dt, jnp.floating):
        raise TypeError(f"{owner}: matmul_dtype must be a floating dtype, got matmul_dtype={value!r}")


def _sym(a: Array) -> Array:
    return 0.5 * (a + jnp.swapaxes(a, -1, -2))


# ---------------------------------------------------------------------------------------------------- scalings


class AbstractScaling(eqx.Module):
    r"""How the matmul solvers estimate the top eigenvalue $\hat\lambda$ that sets the scale $s$.

    The solvers iterate on $A/s$ with $s = c\,\hat\lambda$, so that the scaled spectrum lies in
    their convergence region. Subclasses: `PowerScaling` (default), `FrobeniusScaling`; each
    carries its estimate as `estimate`.
    """

    def estimate(self, a: Array, matmul_dtype: Any) -> tuple[Array, float]:
        """The top-eigenvalue estimate ``(N,)`` of a stack ``a`` ``(N, n, n)`` and the multiplier ``c``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement estimate()")


class PowerScaling(AbstractScaling):
    r"""Multi-vector power iteration: $s = c\,\hat\lambda_{\max}$, $c$ = ``multiplier``.

    ``num_steps`` steps of $V \leftarrow (A/m + dI)V$ from ``num_vectors`` fixed random columns
    (`power_iteration`); $c = 2$ puts the top scaled eigenvalue near 1/2, well inside
    Newton–DB's convergence region $(0, 3)$.

    Attributes:
      num_steps: power steps, ``>= 1``.
      num_vectors: starting vectors (capped at ``n``), ``>= 1``.
      multiplier: $c > 0$.

    References:
      Modoranu et al., DASH, arXiv:2602.02016 (multi-vector power iteration for the scale).

    Examples:
      >>> from icmlx.optim import PowerScaling
      >>> PowerScaling(num_steps=20)
      PowerScaling(num_steps=20)
      >>> PowerScaling().num_vectors, PowerScaling().multiplier
      (16, 2.0)
    """

    num_steps: int = eqx.field(static=True, default=10)
    num_vectors: int = eqx.field(static=True, default=16)
    multiplier: float = eqx.field(static=True, default=2.0)

    def __check_init__(self):
        _check_count("PowerScaling", "num_steps", self.num_steps)
        _check_count("PowerScaling", "num_vectors", self.num_vectors)
        _check_nonneg("PowerScaling", "multiplier", self.multiplier)
        if self.multiplier == 0:
            raise ValueError(f"PowerScaling: multiplier must be > 0, got multiplier={self.multiplier!r}")

    def estimate(self, a: Array, matmul_dtype: Any) -> tuple[Array, float]:
        """Multi-vector power-iteration estimate of each matrix's top eigenvalue, and ``multiplier``."""
        return _power_iteration(a, self.num_steps, self.num_vectors, 1e-6, matmul_dtype), self.multiplier


class FrobeniusScaling(AbstractScaling):
    r"""Frobenius-norm scale $s = \|A\|_F \ge \lambda_{\max}$: no iteration, but an over-estimate.

    A larger $s$ starts the scaled spectrum lower, which costs Newton–DB extra steps for the same accuracy.

    Examples:
      >>> from icmlx.optim import FrobeniusScaling
      >>> FrobeniusScaling()
      FrobeniusScaling()
    """

    def estimate(self, a: Array, matmul_dtype: Any) -> tuple[Array, float]:
        """``||A||_F`` per matrix (no overflow: ``c ||A / c||_F`` with ``c = max|A_ij|``), and 1."""
        del matmul_dtype
        c = jnp.maximum(jnp.max(jnp.abs(a), axis=(-2, -1)), _floor(a.dtype))
        return c * jnp.sqrt(jnp.sum(jnp.square(a / c[:, None, None]), axis=(-2, -1))), 1.0


# ----------------------------------------------------------------------------------------------------- solvers


class AbstractInverseRoot(eqx.Module):
    r"""Base class of the inverse-root solvers of `matrix_inverse_root`.

    A solver is configuration (static fields only) plus its iteration, `solve`, which
    ``matrix_inverse_root(A, p, method=solver)`` and DASH call; `check_accuracy` is the solver's own
    verdict on the true residual. Subclasses: `NewtonDB` (default), `CoupledNewton`,
    `Chebyshev`, `Eigh`; a new solver subclasses this and implements `solve`.
    """

    #: Relative ridge used when ``relative_epsilon`` is ``None``.
    default_relative_epsilon: ClassVar[float] = 0.0
    #: The roots ``p`` the solver supports (``None``: every positive integer).
    supported_roots: ClassVar[tuple[int, ...] | None] = None
    #: Whether ``chunk_size="auto"`` chunks the stack on CPU (matmul iterations reuse a cached chunk; a
    #: per-matrix LAPACK ``eigh`` gains nothing from it).
    cache_chunks: ClassVar[bool] = True

    def solve(self, a: Array, p: int, epsilon: float) -> tuple[Array, Array, Array, Array]:
        """Inverse ``p``-th roots of a symmetric stack ``a`` ``(N, n, n)`` with absolute ridge ``epsilon``.

        Returns:
          ``(X, ridge, num_steps, status)``: the roots ``(N, n, n)``; the diagonal shift each one effectively
          inverts, ``X ~ (A + ridge I)^{-1/p}``, ``(N,)``; the iteration count, int32 scalar; and a status per
          matrix, int32 ``(N,)``: 0 ok, 1 ``max_steps`` reached, 2 diverged, 5 accuracy limit of the dtype.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement solve()")

    def check_accuracy(self, status: Array, residual: Array) -> Array:
        """The status after the true residual ``(N,)`` is known (default: unchanged)."""
        del residual
        return status

    def _ridge_fraction(self, mdt: Any, dtype: Any) -> float:
        """Relative ridge: ``relative_epsilon``, or the class default raised to ``eps(mdt) / 8``."""
        if self.relative_epsilon is not None:
            return float(self.relative_epsilon)
        rel = type(self).default_relative_epsilon
        if mdt is not None and jnp.finfo(mdt).eps > jnp.finfo(dtype).eps:
            # Low-precision matmuls: rounding at eps(mdt) breaks the coupled iterations on eigenvalues below
            # ~eps(mdt) * lam_max (bf16 Newton-DB blows up at kappa = 1e4), so regularise there.
            rel = max(rel, float(jnp.finfo(mdt).eps) / 8)
        return rel

    def _scaled(self, a: Array, epsilon: float):
        """Common set-up of the matmul solvers: ``(mdt, rel, ridge (N,1,1), a_reg, s (N,1,1), lam, const)``."""
        mdt = _resolve_matmul_dtype(self.matmul_dtype, a.dtype)
        rel = self._ridge_fraction(mdt, a.dtype)
        lam, const = self.scaling.estimate(a, mdt)
        lam = jnp.where(lam > 0, lam, _floor(a.dtype))[:, None, None]
        ridge = epsilon + rel * lam
        return mdt, rel, ridge, lam, const


def _fixed_work_accuracy(method, status: Array, residual: Array) -> Array:
    """A fixed-work solver is successful only when its true residual meets its ``rtol`` (else 4, inaccurate)."""
    rtol = DEFAULT_FIXED_RTOL if method.rtol is None else method.rtol
    return jnp.where((status == 0) & ~(residual <= rtol), 4, status)


def _check_matmul_solver(self) -> None:
    name = type(self).__name__
    if not isinstance(self.scaling, AbstractScaling):
        raise ValueError(
            f"{name}: scaling must be a PowerScaling() or FrobeniusScaling() object, got scaling={self.scaling!r}"
        )
    _check_nonneg(name, "relative_epsilon", self.relative_epsilon)
    _check_matmul_dtype(name, self.matmul_dtype)


class NewtonDB(AbstractInverseRoot):
    r"""Coupled inverse-free Newton–Denman–Beavers iteration, a fixed number of steps (matmuls only).

    On $\hat A = A_\epsilon/s$: $E = \tfrac32 I - \tfrac12 ZY,\ Y \leftarrow YE,\ Z \leftarrow EZ$
    from $Y = \hat A E_0, Z = E_0$, so $Y \to \hat A^{1/2}$ and $Z \to \hat A^{-1/2}$;
    $p = 4$ is two passes (square root, then inverse square root). ``num_steps`` steps resolve scaled
    eigenvalues down to about $2.25^{-k}$; below that the result is implicitly regularised.

    Attributes:
      num_steps: Newton–DB steps per pass, ``>= 1``.
      scaling: an `AbstractScaling` (default `PowerScaling`).
      relative_epsilon: ridge relative to $\hat\lambda$; ``None`` means ``1e-6``, raised to
        ``eps(matmul_dtype) / 8`` with low-precision matmuls.
      matmul_dtype: dtype of the matmul operands (e.g. ``jnp.bfloat16``), accumulated in the input dtype;
        ``None`` uses the input dtype.
      rtol: accuracy check of `matrix_inverse_root`: its ``result`` is ``successful`` only
        when the true residual $\max|X^p A_\epsilon - I| \le$ ``rtol``, else ``RESULTS.inaccurate``;
        ``None`` means ``1e-3`` (what float32 can verify on a moderately conditioned matrix). DASH does not
        use it.

    References:
      Modoranu et al., DASH, arXiv:2602.02016. Higham, Functions of Matrices (2008), §6.3.

    Examples:
      >>> from icmlx.optim import FrobeniusScaling, NewtonDB
      >>> NewtonDB(num_steps=15, scaling=FrobeniusScaling())
      NewtonDB(num_steps=15, scaling=FrobeniusScaling())
      >>> NewtonDB().num_steps, NewtonDB().scaling
      (10, PowerScaling())
    """

    num_steps: int = eqx.field(static=True, default=10)
    scaling: AbstractScaling = eqx.field(static=True, default=PowerScaling())
    relative_epsilon: float | None = eqx.field(static=True, default=None)
    matmul_dtype: Any = eqx.field(static=True, default=None)

    rtol: float | None = eqx.field(static=True, default=None)

    default_relative_epsilon: ClassVar[float] = 1e-6
    supported_roots: ClassVar[tuple[int, ...] | None] = (2, 4)

    def __check_init__(self):
        _check_count("NewtonDB", "num_steps", self.num_steps)
        _check_matmul_solver(self)
        _check_nonneg("NewtonDB", "rtol", self.rtol)

    def solve(self, a: Array, p: int, epsilon: float) -> tuple[Array, Array, Array, Array]:
        """Newton–DB on $(A + rI)/s$ (one pass for $p = 2$, two for $p = 4$)."""
        mdt, _, ridge, lam, const = self._scaled(a, epsilon)
        x = _newton_db(a + ridge * _eye_like(a), const * (lam + ridge), p, self.num_steps, mdt)
        steps = jnp.full([], self.num_steps * (1 if p == 2 else 2), jnp.int32)
        return _sym(x), ridge[:, 0, 0], steps, jnp.zeros(a.shape[:1], jnp.int32)

    def check_accuracy(self, status: Array, residual: Array) -> Array:
        """``4`` (inaccurate) where the true residual exceeds ``rtol``."""
        return _fixed_work_accuracy(self, status, residual)


class CoupledNewton(AbstractInverseRoot):
    r"""Higham's coupled Newton iteration for $A^{-1/p}$, stopping per matrix on its residual.

    $M' = (1+\tfrac1p)I - \tfrac1p M,\ X \leftarrow XM',\ M \leftarrow M'^p M$ from
    $X_0 = z^{1/p} I,\ M_0 = zA_\epsilon$, $z = (p+1)/(2\,s)$. Each matrix stops on its own when
    $\max|M - I| \le$ ``rtol``, or when a step would make that error grow by more than 1.2x or go
    non-finite (the step is rejected and the previous iterate kept: ``RESULTS.diverged``); the batch stops after
    ``max_steps`` (``RESULTS.max_steps_reached`` if a matrix is still iterating).

    Attributes:
      max_steps: cap on the iterations, ``>= 1``.
      rtol: tolerance on $\max|M - I|$ ($M \to I$, so it is relative to 1), ``>= 0``.
      scaling: an `AbstractScaling` (default `PowerScaling`).
      relative_epsilon: ridge relative to $\hat\lambda$; ``None`` means ``1e-6`` (raised to
        ``eps(matmul_dtype) / 8`` with low-precision matmuls).
      matmul_dtype: matmul operand dtype, or ``None``.

    References:
      Higham, Functions of Matrices (2008), eq. 7.18. Shi et al., Distributed Shampoo, arXiv:2309.06497.

    Examples:
      >>> from icmlx.optim import CoupledNewton
      >>> CoupledNewton(max_steps=50).rtol
      1e-06
    """

    max_steps: int = eqx.field(static=True, default=100)
    rtol: float = eqx.field(static=True, default=1e-6)
    scaling: AbstractScaling = eqx.field(static=True, default=PowerScaling())
    relative_epsilon: float | None = eqx.field(static=True, default=None)
    matmul_dtype: Any = eqx.field(static=True, default=None)

    default_relative_epsilon: ClassVar[float] = 1e-6

    def __check_init__(self):
        _check_count("CoupledNewton", "max_steps", self.max_steps)
        if self.rtol is None:
            raise ValueError("CoupledNewton: rtol must be a finite Python float >= 0, got rtol=None")
        _check_nonneg("CoupledNewton", "rtol", self.rtol)
        _check_matmul_solver(self)

    def solve(self, a: Array, p: int, epsilon: float) -> tuple[Array, Array, Array, Array]:
        """Coupled Newton on $A + rI$, each matrix stopping on its own criterion."""
        mdt, _, ridge, lam, const = self._scaled(a, epsilon)
        x, steps, status = _coupled_newton(a + ridge * _eye_like(a), const * (lam + ridge), p, self.max_steps,
                                           self.rtol, mdt)
        return _sym(x), ridge[:, 0, 0], steps, status


class Chebyshev(AbstractInverseRoot):
    r"""Degree-``degree`` Chebyshev expansion of $x^{-1/p}$ on $[\delta, 1+\delta]$.

    With $\delta = \epsilon_{rel}/c$ the expansion is evaluated at $S = 2A/s - I$ by the matrix
    Clenshaw recurrence and rescaled by $s^{-1/p}$: the result approximates
    $(A + \epsilon_{rel}\hat\lambda I)^{-1/p}$ (the interval offset plays the role of the ridge).

    Attributes:
      degree: polynomial degree, ``>= 1``.
      scaling: an `AbstractScaling` (default `PowerScaling`).
      relative_epsilon: interval offset relative to $\hat\lambda$; ``None`` means ``1e-2`` (raised to
        ``eps(matmul_dtype) / 8`` with low-precision matmuls). ``x^{-1/p}`` is unbounded at 0, so keep it
        positive: the degree needed for a given accuracy grows like $1/\sqrt{\delta}$. The defaults
        (degree 64, ``1e-2``) give a relative error of about 3e-5 for $p = 2$ and 1e-5 for
        $p = 4$ on the interval; $p = 1$ needs ``degree >= 96`` to pass the default ``rtol``.
      matmul_dtype: matmul operand dtype, or ``None``.
      rtol: accuracy check on the true residual, as for `NewtonDB` (``None`` means ``1e-3``): a degree
        too low for the interval gives ``RESULTS.inaccurate``.

    References:
      Modoranu et al., DASH, arXiv:2602.02016 (Chebyshev inverse roots).

    Examples:
      >>> from icmlx.optim import Chebyshev
      >>> Chebyshev(degree=32).degree
      32
    """

    degree: int = eqx.field(static=True, default=64)
    scaling: AbstractScaling = eqx.field(static=True, default=PowerScaling())
    relative_epsilon: float | None = eqx.field(static=True, default=None)
    matmul_dtype: Any = eqx.field(static=True, default=None)
    rtol: float | None = eqx.field(static=True, default=None)

    default_relative_epsilon: ClassVar[float] = 1e-2

    def __check_init__(self):
        _check_count("Chebyshev", "degree", self.degree)
        _check_matmul_solver(self)
        _check_nonneg("Chebyshev", "rtol", self.rtol)

    def solve(self, a: Array, p: int, epsilon: float) -> tuple[Array, Array, Array, Array]:
        """Clenshaw evaluation of the expansion; the interval offset plays the ridge."""
        mdt, rel, _, lam, const = self._scaled(a, epsilon)
        # result ~ (A + eps + rel * lam)^{-1/p}
        s = const * (lam + epsilon)
        x = _sym(_chebyshev(a + epsilon * _eye_like(a), s, p, self.degree, rel / const, mdt))
        ridge = epsilon + (rel / const) * s[:, 0, 0]
        return x, ridge, jnp.full([], self.degree, jnp.int32), jnp.zeros(a.shape[:1], jnp.int32)

    def check_accuracy(self, status: Array, residual: Array) -> Array:
        """``4`` (inaccurate) where the true residual exceeds ``rtol``."""
        return _fixed_work_accuracy(self, status, residual)


class Eigh(AbstractInverseRoot):
    r"""Eigendecomposition $Q\,\mathrm{diag}(\tilde\lambda^{-1/p})Q^\top$ with a Shampoo spectrum heuristic.

    ``"shampoo"``: $\tilde\lambda = \lambda - \min(\lambda_{\min}, 0) + r$; ``"abs"``:
    $|\lambda| + r$; ``"relu"``: pseudo-inverse dropping $\lambda \le r$, with the ridge
    $r = \epsilon + \epsilon_{rel}\max|\lambda|$. Needs no scale estimate.

    Attributes:
      heuristic: ``"shampoo"``, ``"abs"`` or ``"relu"``.
      relative_epsilon: ridge relative to $\max|\lambda|$, ``>= 0``.

    References:
      Shi et al., Distributed Shampoo, arXiv:2309.06497 (eigenvalue heuristics).

    Examples:
      >>> from icmlx.optim import Eigh
      >>> Eigh(heuristic="abs")
      Eigh(heuristic='abs')
    """

    heuristic: Literal["shampoo", "abs", "relu"] = eqx.field(static=True, default="shampoo")
    relative_epsilon: float = eqx.field(static=True, default=0.0)

    cache_chunks: ClassVar[bool] = False

    def __check_init__(self):
        if self.heuristic not in ("shampoo", "abs", "relu"):
            raise ValueError(f"Eigh: heuristic must be 'shampoo', 'abs' or 'relu', got heuristic={self.heuristic!r}")
        _check_nonneg("Eigh", "relative_epsilon", self.relative_epsilon)

    def solve(self, a: Array, p: int, epsilon: float) -> tuple[Array, Array, Array, Array]:
        """One batched ``eigh``; status 5 where the spectrum spans more than the dtype resolves."""
        x, ridge, limited = _eigh_root(a, p, epsilon, float(self.relative_epsilon), self.heuristic)
        return x, ridge, jnp.zeros([], jnp.int32), jnp.where(limited, 5, 0).astype(jnp.int32)


#: Default tolerance of the accuracy check of the fixed-work solvers (``rtol=None``).
DEFAULT_FIXED_RTOL = 1e-3

#: The default solver of matrix_inverse_root and scale_by_dash.
DEFAULT_INVERSE_ROOT = NewtonDB()

#: String shorthands for the default solver objects.
SHORTHANDS: dict[str, type[AbstractInverseRoot]] = {
    "newton_db": NewtonDB,
    "coupled_newton": CoupledNewton,
    "chebyshev": Chebyshev,
    "eigh": Eigh,
}


def as_inverse_root(method: Any, name: str = "method") -> AbstractInverseRoot:
    """A solver object from ``method``: an `AbstractInverseRoot`, or a shorthand such as ``"eigh"``."""
    return as_strategy(method, AbstractInverseRoot, SHORTHANDS, name)
