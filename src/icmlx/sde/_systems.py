"""Benchmark drift fields for overdamped Langevin systems ``dX = f(X) dt + sigma dW``.

Every constructor returns a plain JAX callable ``f(x: Float[Array, "... d"]) -> Float[Array, "... d"]`` that
broadcasts over leading axes (one state, a batch, a grid); any user function of one state ``(d,)`` works
wherever icmlx expects a drift.
"""

from collections.abc import Callable

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from .._checks import check_values, is_traced
from ._data import as_real, as_sigma, check_finite, check_last_axis, check_real, check_scale

DriftFn = Callable[[Float[Array, " d"]], Float[Array, " d"]]

__all__ = ["DriftFn", "ou_drift", "ring_drift", "van_der_pol_drift", "ou_stationary_covariance"]


def ou_drift(A: ArrayLike) -> DriftFn:
    r"""Linear Ornstein–Uhlenbeck drift $f(x) = A x$.

    Args:
      A: drift matrix, shape ``(d, d)``; the process is stationary when every eigenvalue of ``A`` has a
        negative real part.

    Returns:
      The drift callable ``x -> A @ x``.

    Raises:
      ValueError: if ``A`` is not square or not finite (and, when the drift is called, a state whose last
        axis is not ``d``).
      TypeError: complex ``A``.

    References:
      Maoutsa, arXiv:2512.23566 (pipeline oracle: increment regression converges to
      $(e^{A\tau} - I)/\tau$).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import ou_drift
      >>> f = ou_drift(jnp.array([[-1.0, 2.0], [-2.0, -1.0]]))
      >>> f(jnp.array([1.0, 0.0])).tolist()
      [-1.0, -2.0]
    """
    return _OUDrift(_as_square(A, "ou_drift"))


# The benchmark drifts are equinox modules holding their parameters as arrays, so that drifts of one kind and size
# are data to a compiled program: simulate(ring_drift(0.0)) and simulate(ring_drift(2.0)) share one compilation.


class _OUDrift(eqx.Module):
    A: Float[Array, "d d"]

    def __call__(self, x: ArrayLike) -> Float[Array, "*batch d"]:
        x = as_real(x, "x", "ou_drift")
        check_last_axis(x, self.A.shape[0], "x (the state)", "ou_drift")
        return x @ self.A.astype(x.dtype).T


class _RingDrift(eqx.Module):
    omega: Float[Array, ""]

    def __call__(self, x: ArrayLike) -> Float[Array, "*batch 2"]:
        x = as_real(x, "x", "ring_drift")
        check_last_axis(x, 2, "x (the state)", "ring_drift")
        r2 = jnp.sum(x * x, axis=-1, keepdims=True)
        rot = jnp.stack([-x[..., 1], x[..., 0]], axis=-1)
        return -x * (r2 - 1.0) + self.omega.astype(x.dtype) * rot


class _VanDerPolDrift(eqx.Module):
    mu: Float[Array, ""]

    def __call__(self, x: ArrayLike) -> Float[Array, "*batch 2"]:
        x = as_real(x, "x", "van_der_pol_drift")
        check_last_axis(x, 2, "x (the state)", "van_der_pol_drift")
        mu = self.mu.astype(x.dtype)
        x0, x1 = x[..., 0], x[..., 1]
        return jnp.stack([mu * (x0 - x0**3 / 3.0 - x1), x0 / mu], axis=-1)


def _as_square(A, fn: str):
    A = as_real(A, "A", fn)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"{fn}: A must be a square matrix (d, d), got shape {A.shape}")
    return check_finite(A, "A", fn)


def ring_drift(omega: float = 2.0) -> DriftFn:
    r"""Rotating ring $f(x) = -x(\lVert x\rVert^2 - 1) + \omega J x$, with $J$ the 90° rotation.

    The invariant density $p_\infty \propto \exp(-(r^2-1)^2 / (2\sigma^2))$ does not depend on
    ``omega`` (``Jx`` is divergence-free and tangent to the level sets of ``p``), so any estimator built from
    the invariant density alone recovers the gradient part and misses exactly ``omega * J x``.

    Args:
      omega: angular speed of the rotation (0 gives a gradient system).

    Returns:
      The drift callable for ``d = 2``.

    Raises:
      ValueError: a non-finite ``omega``; a state whose last axis is not 2 (when the drift is called).

    References:
      Maoutsa, arXiv:2512.23566.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import ring_drift
      >>> ring_drift(2.0)(jnp.array([1.0, 0.0])).tolist()
      [0.0, 2.0]
    """

    check_real(omega, "omega", "ring_drift")
    return _RingDrift(as_real(omega, "omega", "ring_drift"))


def van_der_pol_drift(mu: float = 1.0) -> DriftFn:
    r"""Van der Pol oscillator in Liénard form $f(x, y) = (\mu(x - x^3/3 - y),\ x/\mu)$.

    With ``mu = 1`` this is the paper's limit-cycle system ``f = (x - x^3/3 - y, x)`` (period about 6.66).

    Args:
      mu: nonlinearity parameter (positive).

    Returns:
      The drift callable for ``d = 2``.

    Raises:
      ValueError: ``mu`` not finite and positive; a state whose last axis is not 2 (when the drift is called).

    References:
      Maoutsa, arXiv:2512.23566 (system "LC").

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import van_der_pol_drift
      >>> [round(v, 3) for v in van_der_pol_drift()(jnp.array([1.0, 1.0])).tolist()]
      [-0.333, 1.0]
    """

    if not is_traced(mu):
        check_scale(mu, "mu", "van_der_pol_drift")
    return _VanDerPolDrift(as_real(mu, "mu", "van_der_pol_drift"))


def ou_stationary_covariance(A: ArrayLike, sigma: float) -> Float[Array, "d d"]:
    r"""Stationary covariance of ``dX = A X dt + sigma dW``: the solution of $A S + S A^T + \sigma^2 I = 0$.

    Solved as a ``d^2 x d^2`` Kronecker linear system (fine for the small ``d`` of benchmark systems; at most
    ``d = MAX_D = 32``, beyond which ``scipy.linalg.solve_continuous_lyapunov`` is the tool).

    The stationary law exists only when every eigenvalue of ``A`` has a negative real part; otherwise there is
    no answer, and the call says so rather than return the (indefinite) solution of the equation.

    Args:
      A: stable drift matrix, shape ``(d, d)``.
      sigma: positive diffusion scale.

    Returns:
      The stationary covariance ``S``, shape ``(d, d)``.

    Raises:
      ValueError: ``A`` not square or not finite, ``sigma`` not positive, ``d > MAX_D``, or ``A`` not stable
        (an eigenvalue with real part ``>= 0``: host check for concrete ``A``; for an ``A`` traced by the caller's
        ``jit``, ``eqx.error_if`` when the solution is not positive definite, which is the same condition).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import ou_stationary_covariance
      >>> ou_stationary_covariance(-jnp.eye(2), 1.0).tolist()
      [[0.5, 0.0], [0.0, 0.5]]
    """
    fn = "ou_stationary_covariance"
    A = _as_square(A, fn)
    d = A.shape[0]
    if d > MAX_D:
        raise ValueError(f"{fn}: d = {d} would need a ({d * d} x {d * d}) Kronecker solve; the limit is d = {MAX_D}: "
                         "use scipy.linalg.solve_continuous_lyapunov(A, -sigma**2 * np.eye(d))")
    sig = as_sigma(sigma, A.dtype, fn)
    unstable = (f"{fn}: A is not stable (an eigenvalue has real part >= 0), so dX = A X dt + sigma dW has no "
                "stationary law; every eigenvalue of A needs a negative real part")
    if not is_traced(A):
        host = np.asarray(A, np.float64)
        lam = np.linalg.eigvals(host)
        # real parts within rounding of 0 count as unstable: the Lyapunov system is singular there
        tol = 100 * np.finfo(np.asarray(A).dtype).eps * max(np.abs(lam).max(), 1e-300)
        if not np.all(lam.real < -tol):
            raise ValueError(f"{unstable} (largest real part {lam.real.max():.3g})")
    eye = jnp.eye(d, dtype=A.dtype)
    lyap = jnp.kron(eye, A) + jnp.kron(A, eye)
    rhs = -(sig**2) * eye.reshape(-1)
    S = jnp.linalg.solve(lyap, rhs).reshape(d, d)
    S = 0.5 * (S + S.T)
    # Lyapunov: A is stable exactly when the solution for sigma^2 I > 0 is positive definite
    return check_values(S, lambda xp, v: ~(xp.all(xp.isfinite(v)) & (xp.linalg.eigvalsh(v)[0] > 0)), unstable)


#: Largest ``d`` `ou_stationary_covariance` solves (its Kronecker system is ``d^2 x d^2``).
MAX_D = 32

