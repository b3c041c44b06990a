"""Benchmark drift fields for overdamped Langevin systems ``dX = f(X) dt + sigma dW``.

Every constructor returns a plain JAX callable ``f(x: Float[Array, "... d"]) -> Float[Array, "... d"]`` that
broadcasts over leading axes (one state, a batch, a grid); any user function of one state ``(d,)`` works
wherever icmlx expects a drift.
"""

from collections.abc import Callable

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

DriftFn = Callable[[Float[Array, " d"]], Float[Array, " d"]]

__all__ = ["DriftFn", "ou_drift", "ring_drift", "van_der_pol_drift", "ou_stationary_covariance"]


def ou_drift(A: Float[ArrayLike, "d d"]) -> DriftFn:
    r"""Linear Ornstein–Uhlenbeck drift :math:`f(x) = A x`.

    Args:
      A: drift matrix, shape ``(d, d)``; the process is stationary when every eigenvalue of ``A`` has a
        negative real part.

    Returns:
      The drift callable ``x -> A @ x``.

    Raises:
      ValueError: if ``A`` is not square.

    References:
      Maoutsa, arXiv:2512.23566 (pipeline oracle: increment regression converges to
      :math:`(e^{A\tau} - I)/\tau`).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import ou_drift
      >>> f = ou_drift(jnp.array([[-1.0, 2.0], [-2.0, -1.0]]))
      >>> f(jnp.array([1.0, 0.0])).tolist()
      [-1.0, -2.0]
    """
    A = jnp.asarray(A)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be a square matrix, got {A.shape=}")

    def f(x: Float[Array, "*batch d"]) -> Float[Array, "*batch d"]:
        return x @ A.astype(x.dtype).T

    return f


def ring_drift(omega: float = 2.0) -> DriftFn:
    r"""Rotating ring :math:`f(x) = -x(\lVert x\rVert^2 - 1) + \omega J x`, with :math:`J` the 90° rotation.

    The invariant density :math:`p_\infty \propto \exp(-(r^2-1)^2 / (2\sigma^2))` does not depend on
    ``omega`` (``Jx`` is divergence-free and tangent to the level sets of ``p``), so any estimator built from
    the invariant density alone recovers the gradient part and misses exactly ``omega * J x``.

    Args:
      omega: angular speed of the rotation (0 gives a gradient system).

    Returns:
      The drift callable for ``d = 2``.

    References:
      Maoutsa, arXiv:2512.23566.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import ring_drift
      >>> ring_drift(2.0)(jnp.array([1.0, 0.0])).tolist()
      [0.0, 2.0]
    """

    def f(x: Float[Array, "*batch 2"]) -> Float[Array, "*batch 2"]:
        r2 = jnp.sum(x * x, axis=-1, keepdims=True)
        rot = jnp.stack([-x[..., 1], x[..., 0]], axis=-1)
        return -x * (r2 - 1.0) + omega * rot

    return f


def van_der_pol_drift(mu: float = 1.0) -> DriftFn:
    r"""Van der Pol oscillator in Liénard form :math:`f(x, y) = (\mu(x - x^3/3 - y),\ x/\mu)`.

    With ``mu = 1`` this is the paper's limit-cycle system ``f = (x - x^3/3 - y, x)`` (period about 6.66).

    Args:
      mu: nonlinearity parameter (positive).

    Returns:
      The drift callable for ``d = 2``.

    References:
      Maoutsa, arXiv:2512.23566 (system "LC").

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import van_der_pol_drift
      >>> [round(v, 3) for v in van_der_pol_drift()(jnp.array([1.0, 1.0])).tolist()]
      [-0.333, 1.0]
    """

    def f(x: Float[Array, "*batch 2"]) -> Float[Array, "*batch 2"]:
        x0, x1 = x[..., 0], x[..., 1]
        return jnp.stack([mu * (x0 - x0**3 / 3.0 - x1), x0 / mu], axis=-1)

    return f


def ou_stationary_covariance(A: Float[ArrayLike, "d d"], sigma: float) -> Float[Array, "d d"]:
    r"""Stationary covariance of ``dX = A X dt + sigma dW``: the solution of :math:`A S + S A^T + \sigma^2 I = 0`.

    Solved as a ``d^2 x d^2`` Kronecker linear system (fine for the small ``d`` of benchmark systems).

    Args:
      A: stable drift matrix, shape ``(d, d)``.
      sigma: diffusion scale.

    Returns:
      The stationary covariance ``S``, shape ``(d, d)``.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import ou_stationary_covariance
      >>> ou_stationary_covariance(-jnp.eye(2), 1.0).tolist()
      [[0.5, 0.0], [0.0, 0.5]]
    """
    A = jnp.asarray(A)
    d = A.shape[0]
    eye = jnp.eye(d, dtype=A.dtype)
    lyap = jnp.kron(eye, A) + jnp.kron(A, eye)
    rhs = -(sigma**2) * eye.reshape(-1)
    S = jnp.linalg.solve(lyap, rhs).reshape(d, d)
    return 0.5 * (S + S.T)

