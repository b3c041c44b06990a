"""Drift function classes: linear-in-features models fitted under the path (Girsanov) likelihood.

Both classes share one form, $f(x) = W^\\top \\phi(x)$, and one fit: for increments
$\\Delta x_i$ over steps $\\Delta t_i$ from states $x_i$, minimise

$$
\\sum_i \\frac{\\lVert \\Delta x_i - f(x_i)\\Delta t_i \\rVert^2}{2\\sigma^2 \\Delta t_i}
+ \\tfrac12 \\operatorname{tr}(W^\\top P W)
\\;\\Rightarrow\\;
\\Big(\\sum_i \\Delta t_i\\, \\phi_i\\phi_i^\\top + \\sigma^2 P\\Big) W = \\sum_i \\phi_i \\Delta x_i^\\top .
$$

``RidgeRegression`` uses ``P = ridge * I`` on RBF or random Fourier features; ``SparseGP`` uses the inducing-point
kernel features $\\phi = k_S(x)$ and ``P = K_SS`` — the DTC posterior mean of a GP prior under the
path likelihood (Ruttor, Batz & Opper 2013), $f(x) = k_S(x)^\\top(\\sigma^2 K_{SS} + I_1)^{-1} I_2$.
Regressing on *increments of stochastic paths* needs no divergence term (option (iii) of the notes).

The left- and right-hand sides are sums over the rows (`normal_equations`), so a fit to more rows than fit in
memory adds them up over chunks and solves once (`solve_normal_equations`); each class solves its own
(``_from_normal_equations``).
"""

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._checks import check_values
from .._types import RealScalarLike
from ._basis import LinearDrift, RBFBasis, _input_dim
from ._data import ArrayOrFrame, as_real, as_sigma, check_finite, check_scale

__all__ = ["RidgeRegression", "SparseGP", "normal_equations", "solve_normal_equations"]


def _solve_psd(A, B):
    """Solve ``A X = B`` for symmetric PSD ``A`` by eigendecomposition, flooring the spectrum at
    ``eps * max eigenvalue`` (fail-soft: float32 Gram matrices of smooth kernels are near-singular)."""
    A = 0.5 * (A + A.T)
    lam, Q = jnp.linalg.eigh(A)
    floor = 10.0 * jnp.finfo(A.dtype).eps * jnp.max(jnp.abs(lam))
    lam = jnp.maximum(lam, floor)
    return Q @ ((Q.T @ B) / lam[:, None])


def normal_equations(basis, states, increments, dt, weights=None, features=None):
    r"""The fit's sufficient statistics $G = \sum_i w_i \Delta t_i\,\phi_i\phi_i^\top$ ``(m, m)`` and
    $B = \sum_i w_i\,\phi_i \Delta x_i^\top$ ``(m, d)``: sums over rows, so chunks of rows add up to the whole.
    ``features``: the rows' $\phi_i$ ``(n, m)`` when the caller has them already."""
    phi = jax.vmap(basis)(states) if features is None else features  # (n, m)
    w = jnp.ones(states.shape[0], states.dtype) if weights is None else weights.astype(states.dtype)
    dt = jnp.broadcast_to(jnp.asarray(dt, states.dtype), w.shape)
    return (phi * (w * dt)[:, None]).T @ phi, (phi * w[:, None]).T @ increments


def solve_normal_equations(basis, penalty, G, B, sigma) -> LinearDrift:
    r"""Solve $(G + \sigma^2 P) W = B$ (module docstring) with the posterior covariance of each weight column."""
    s2 = jnp.asarray(sigma, G.dtype) ** 2
    A = G + s2 * penalty.astype(G.dtype)
    A = 0.5 * (A + A.T)
    lam, Q = jnp.linalg.eigh(A)
    lam = jnp.maximum(lam, 10.0 * jnp.finfo(A.dtype).eps * jnp.max(jnp.abs(lam)))  # as in _solve_psd
    W = Q @ ((Q.T @ B) / lam[:, None])
    # posterior covariance of each weight column (unused results are dropped by XLA inside the EM loop)
    C = s2 * (Q / lam) @ Q.T
    return LinearDrift(basis, W, covariance=C)


@eqx.filter_jit
def _fit_linear(basis, penalty, states, increments, dt, sigma, weights):
    """Solve (sum w dt phi phi^T + sigma^2 P) W = sum w phi dx^T."""
    return solve_normal_equations(basis, penalty, *normal_equations(basis, states, increments, dt, weights), sigma)


class _PenalizedLinearClass(eqx.Module):
    """What `RidgeRegression` and `SparseGP` share: the fit of the module docstring, with the class's penalty."""

    basis: eqx.AbstractVar[eqx.Module]

    @abc.abstractmethod
    def penalty(self, dtype) -> Float[Array, "m m"]:
        """The prior precision ``P`` of each weight column, shape ``(m, m)``."""

    def fit(
        self,
        states: ArrayOrFrame,
        increments: ArrayOrFrame,
        dt: ArrayOrFrame,
        sigma: RealScalarLike,
        weights: ArrayOrFrame | None = None,
    ) -> LinearDrift:
        """Fit from ``(states, increments, dt)`` under the path likelihood (see module docstring): the posterior
        mean of the weights, with their posterior covariance in ``covariance``.

        Raises:
          ValueError: mismatched shapes, a ``d`` other than the basis', non-finite data, ``dt`` or ``sigma``
            not positive, negative ``weights``.
        """
        where = f"{type(self).__name__}.fit"
        return self._fit(*_fit_inputs(self.basis, states, increments, dt, sigma, weights, where))

    def _fit(self, states, increments, dt, sigma, weights=None) -> LinearDrift:
        """`fit` without the input checks (for validated or traced-in-a-loop input)."""
        return _fit_linear(self.basis, self.penalty(states.dtype), states, increments, dt, sigma, weights)

    def _from_normal_equations(self, G, B, sigma) -> LinearDrift:
        """The fit from its sufficient statistics (`normal_equations`, summed over chunks of rows)."""
        return solve_normal_equations(self.basis, self.penalty(G.dtype), G, B, sigma)


class RidgeRegression(_PenalizedLinearClass):
    """Ridge regression of increments on fixed features (RBF, random Fourier, monomials), penalty ``ridge * ||W||^2``.

    Attributes:
      basis: an `RBFBasis` or `FourierBasis`.
      ridge: positive penalty (prior precision of each weight).

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.sde import RidgeRegression, RBFBasis, box_grid
      >>> x = jax.random.normal(jax.random.key(0), (200, 2))
      >>> model = RidgeRegression(RBFBasis(box_grid(x, 6), 0.8), ridge=1e-3)
      >>> f = model.fit(x, -x * 0.1, 0.1, 0.1)
      >>> [round(v, 1) for v in f(jnp.array([0.5, 0.0])).tolist()]
      [-0.5, 0.0]
    """

    basis: eqx.Module
    ridge: float = eqx.field(static=True, default=1e-2)

    def __check_init__(self):
        check_scale(self.ridge, "ridge", "RidgeRegression")

    def __repr__(self) -> str:
        return f"RidgeRegression(basis={self.basis!r}, ridge={self.ridge:.4g})"

    def penalty(self, dtype) -> Float[Array, "m m"]:
        m = self.basis(jnp.zeros(_input_dim(self.basis), dtype)).shape[0]
        return self.ridge * jnp.eye(m, dtype=dtype)


class SparseGP(_PenalizedLinearClass):
    """Sparse (DTC) GP drift: unit-output RBF kernel, inducing points ``basis.centers``, path likelihood.

    Attributes:
      basis: an `RBFBasis` whose centres are the inducing points.
      jitter: added to the diagonal of ``K_SS``.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.sde import SparseGP, RBFBasis, box_grid
      >>> x = jax.random.normal(jax.random.key(0), (400, 2))
      >>> model = SparseGP(RBFBasis(box_grid(x, 6), 1.0))
      >>> f = model.fit(x, -x * 0.1, 0.1, 0.1)
      >>> [round(v, 1) for v in f(jnp.array([0.5, 0.0])).tolist()]
      [-0.5, 0.0]
    """

    basis: RBFBasis
    jitter: float = eqx.field(static=True, default=1e-3)

    def __check_init__(self):
        if not isinstance(self.basis, RBFBasis):
            raise TypeError(f"SparseGP: basis must be an RBFBasis (its centres are the inducing points), got "
                            f"{type(self.basis).__name__}; use RidgeRegression for other features")
        check_scale(self.jitter, "jitter", "SparseGP", allow_zero=True)

    def __repr__(self) -> str:
        return f"SparseGP(basis={self.basis!r}, jitter={self.jitter:.4g})"

    def penalty(self, dtype) -> Float[Array, "m m"]:
        return _sgp_penalty(self.basis, self.jitter, np.dtype(dtype))


@eqx.filter_jit
def _sgp_penalty(basis, jitter, dtype):
    # one program per basis size: evaluated eagerly, the kernel matrix was a program per primitive
    K = basis.gram().astype(dtype)
    return K + jitter * jnp.eye(K.shape[0], dtype=dtype)


def _fit_inputs(basis, states, increments, dt, sigma, weights, fn):
    """The checked ``(states, increments, dt, sigma, weights)`` of a public ``fit``."""
    states = as_real(states, "states", fn)
    increments = as_real(increments, "increments", fn, states.dtype)
    if states.ndim != 2 or increments.shape != states.shape:
        raise ValueError(f"{fn}: need states and increments of one shape (n, d), got {states.shape} and "
                         f"{increments.shape}")
    d = _input_dim(basis)
    if d is not None and states.shape[1] != d:
        raise ValueError(f"{fn}: the states have d = {states.shape[1]} but the basis takes d = {d}")
    n = states.shape[0]
    dt = as_real(dt, "dt", fn, states.dtype)
    if dt.shape not in ((), (n,)):
        raise ValueError(f"{fn}: dt must be a scalar or of shape (n,) = ({n},), got shape {dt.shape}")
    dt = check_values(dt, lambda xp, v: ~(xp.isfinite(v) & (v > 0)), f"{fn}: dt must be finite and positive")
    if weights is not None:
        weights = as_real(weights, "weights", fn, states.dtype)
        if weights.shape != (n,):
            raise ValueError(f"{fn}: weights must have shape (n,) = ({n},), got shape {weights.shape}")
        weights = check_values(weights, lambda xp, v: ~(xp.isfinite(v) & (v >= 0)),
                               f"{fn}: weights must be finite and non-negative")
    sig = as_sigma(sigma, states.dtype, fn)
    return check_finite(states, "states", fn), check_finite(increments, "increments", fn), dt, sig, weights
