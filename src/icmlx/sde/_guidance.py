r"""Bridge guidance strategies for `infer_drift`: what the SMC bridges are pulled towards.

A guidance turns the observations into per-interval target curves $\gamma_k$ and a strength
$\beta$; the bridge target of interval ``k`` is then tilted by
$\exp(-\beta\int\lVert x_t - \gamma_k(t)\rVert\,dt)$ (see `smc_bridges`).
Each strategy is an ``eqx.Module`` with static (hashable) fields only and carries exactly the settings its
mode uses: `NoGuidance` (plain bridges) has none, `GeodesicGuidance` the strength and the graph
settings of `geodesic_targets`. Both enter the compiled EM loop only as data (targets and
``beta``), so plain and guided runs of the same size share one compiled function.
"""

import abc

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from ._data import check_count, check_scale
from ._geodesic import _geodesic_jit, geodesic_chunk, geodesic_targets


def _check_observations(observations, num_time_steps: int, fn: str):
    if jnp.ndim(observations) != 3:
        raise ValueError(f"{fn}: observations must have shape (n_traj, n_obs, d), got shape "
                         f"{jnp.shape(observations)}")
    check_count(num_time_steps, "num_time_steps", fn)

__all__ = ["AbstractGuidance", "NoGuidance", "GeodesicGuidance"]


class AbstractGuidance(eqx.Module):
    """Base class of the bridge guidance strategies accepted by `infer_drift`.

    A subclass implements `targets`. Strategies are not callable and hold static settings only.
    """

    @abc.abstractmethod
    def targets(
        self, observations: ArrayLike, num_time_steps: int
    ) -> tuple[Float[Array, "n_traj n_int K1 d"], Float[Array, ""]]:
        """Target curves of shape ``(n_traj, n_obs - 1, num_time_steps + 1, d)`` and the strength ``beta``."""

    def _padded_targets(self, observations: Array, num_time_steps: int, n_obs: int):
        """`targets` for observations padded to ``(n_traj, n_pad, d)`` (the first ``n_obs`` per trajectory
        real), shape ``(n_traj, n_pad - 1, num_time_steps + 1, d)``; the padding intervals' curves are unused.

        This generic version calls `targets` on the real observations (a subclass's own code); the
        library's strategies override it so that one compilation serves every ``n_obs`` of a size bucket.
        """
        n_pad = observations.shape[1]
        g, beta = self.targets(observations[:, :n_obs], num_time_steps)
        return jnp.pad(g, ((0, 0), (0, n_pad - n_obs), (0, 0), (0, 0)), mode="edge"), beta


class NoGuidance(AbstractGuidance):
    """Plain bridges: no path cost ($\\beta = 0$).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import NoGuidance
      >>> g, beta = NoGuidance().targets(jnp.zeros((1, 5, 2)), 4)
      >>> g.shape, float(beta)
      ((1, 4, 5, 2), 0.0)
    """

    def targets(
        self, observations: ArrayLike, num_time_steps: int
    ) -> tuple[Float[Array, "n_traj n_int K1 d"], Float[Array, ""]]:
        """Zero targets and zero strength (the path cost vanishes)."""
        _check_observations(observations, num_time_steps, "NoGuidance.targets")
        n_traj, n_obs, d = observations.shape
        dtype = observations.dtype
        return jnp.zeros((n_traj, n_obs - 1, num_time_steps + 1, d), dtype), jnp.zeros((), dtype)

    def _padded_targets(self, observations: Array, num_time_steps: int, n_obs: int):
        return self.targets(observations, num_time_steps)


class GeodesicGuidance(AbstractGuidance):
    r"""Guide each bridge towards the geodesic between its two observations under the observation metric.

    The bridge target is tilted by $\exp(-\beta\int\lVert x_t - \gamma_k(t)\rVert\,dt)$ with
    $\gamma_k$ from `geodesic_targets` (graph shortest paths under the local diagonal
    metric of the observations).

    Attributes:
      strength: guidance strength ``beta`` per unit time, ``>= 0``.
      num_nodes: at most this many graph nodes (an evenly strided subset of the observations), ``>= 2``.
      num_neighbors: neighbours per node in the kNN graph, ``>= 1``.
      orientation_eps: if given (``> 0``), drop graph nodes within this distance of ``y_{k-1}`` when routing
        ``y_k -> y_{k+1}``; ``None`` = off.
      sigma_m: metric kernel width (``> 0``).
      rho: metric floor (``> 0``).

    Raises:
      ValueError: a setting out of range, naming it.

    References:
      Maoutsa, arXiv:2512.23566; Arvanitidis, Hansen & Hauberg, arXiv:1710.11379.

    Examples:
      >>> from icmlx.sde import GeodesicGuidance
      >>> g = GeodesicGuidance(strength=2.0, num_nodes=100)
      >>> g.strength, g.num_neighbors, hash(g) == hash(GeodesicGuidance(strength=2.0, num_nodes=100))
      (2.0, 10, True)
    """

    strength: float = eqx.field(static=True, default=5.0)
    num_nodes: int = eqx.field(static=True, default=300)
    num_neighbors: int = eqx.field(static=True, default=10)
    orientation_eps: float | None = eqx.field(static=True, default=None)
    sigma_m: float = eqx.field(static=True, default=0.15)
    rho: float = eqx.field(static=True, default=1e-3)

    def __check_init__(self):
        fn = "GeodesicGuidance"
        check_scale(self.strength, "strength", fn, allow_zero=True)
        check_count(self.num_nodes, "num_nodes", fn, low=2)
        check_count(self.num_neighbors, "num_neighbors", fn)
        check_scale(self.orientation_eps, "orientation_eps", fn, allow_none=True)
        for name in ("sigma_m", "rho"):
            check_scale(getattr(self, name), name, fn)

    def targets(
        self, observations: ArrayLike, num_time_steps: int
    ) -> tuple[Float[Array, "n_traj n_int K1 d"], Float[Array, ""]]:
        """Geodesic targets (`geodesic_targets`) and ``beta = strength``."""
        _check_observations(observations, num_time_steps, "GeodesicGuidance.targets")
        g = geodesic_targets(
            observations,
            num_time_steps,
            num_nodes=self.num_nodes,
            num_neighbors=self.num_neighbors,
            sigma_m=self.sigma_m,
            rho=self.rho,
            orientation_eps=self.orientation_eps,
        )
        return g, jnp.asarray(self.strength, observations.dtype)

    def _padded_targets(self, observations: Array, num_time_steps: int, n_obs: int):
        _check_observations(observations, num_time_steps, "GeodesicGuidance.targets")
        eps = None if self.orientation_eps is None else float(self.orientation_eps)
        g = _geodesic_jit(observations, jnp.asarray(n_obs, jnp.int32), num_time_steps, self.num_nodes,
                          self.num_neighbors, float(self.sigma_m), float(self.rho), 2000, eps,
                          geodesic_chunk(observations, num_time_steps, self.num_nodes, 2000, eps))
        return g, jnp.asarray(self.strength, observations.dtype)
