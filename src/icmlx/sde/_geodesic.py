"""Observation metric and graph geodesics between consecutive observations (all in JAX).

The metric is the local diagonal metric of Arvanitidis, Hansen & Hauberg (arXiv:1710.11379),

$$
M(x) = \\operatorname{diag}_k \\Big(\\sum_n w_n(x) (y_{n,k} - x_k)^2 + \\rho\\Big)^{-1},
\\qquad w_n(x) = \\exp\\!\\big(-\\lVert y_n - x\\rVert^2 / (2\\sigma_M^2)\\big),
$$

small where observations are dense and ``1/rho`` far from them, so geodesics hug the support of the
invariant density. Geodesics are shortest paths on a symmetrised k-nearest-neighbour graph over (a strided
subset of) the observations, with edge weights the Riemannian length of the straight segment (midpoint
quadrature), found with Floyd–Warshall (``lax.fori_loop``) and read back per interval with a fixed-length
``lax.scan`` — fixed shapes throughout, so everything ``jit``s and ``vmap``s over intervals.

Optional orientation mask (``orientation_eps``, the authors' scripts use 0.75): for the interval
``y_k -> y_{k+1}`` the graph nodes within ``orientation_eps`` of the previous observation ``y_{k-1}`` are
removed, so a symmetric metric cannot send the geodesic "backwards" around a cycle. The shortest paths then
differ per interval and are found with a dense fixed-shape Dijkstra (``O(M^2)`` per interval, ``vmap``-ped).
"""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from ._chunks import chunk_rows
from ._data import as_real, check_count, check_finite, check_scale

__all__ = ["observation_metric", "geodesic_targets"]

_N_QUAD = 8


def observation_metric(
    points: ArrayLike, x: ArrayLike, sigma_m: float = 0.15, rho: float = 1e-3
) -> Float[Array, " d"]:
    """Diagonal of the observation metric ``M(x)`` (module docstring), shape ``(d,)``.

    Args:
      points: the observations defining the metric, shape ``(n, d)``, ``n >= 1``.
      x: where to evaluate it, shape ``(d,)``.
      sigma_m: positive kernel width.
      rho: positive floor (the metric is at most ``1 / rho``).

    Raises:
      ValueError: ``sigma_m``/``rho`` not finite and positive, shapes that do not match, non-finite input.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import observation_metric
      >>> pts = jnp.array([[0.0, 0.0], [0.1, 0.0]])
      >>> bool(observation_metric(pts, jnp.array([5.0, 5.0]))[0] > 900.0)  # far from data: ~1/rho
      True
    """
    fn = "observation_metric"
    check_scale(sigma_m, "sigma_m", fn)
    check_scale(rho, "rho", fn)
    points = as_real(points, "points", fn)
    x = as_real(x, "x", fn, points.dtype)
    if points.ndim != 2 or points.shape[0] < 1:
        raise ValueError(f"{fn}: points must have shape (n, d) with n >= 1, got shape {points.shape}")
    if x.shape != points.shape[1:]:
        raise ValueError(f"{fn}: x must be one state of shape ({points.shape[1]},) (the d of points), got shape "
                         f"{x.shape}")
    return _metric(check_finite(points, "points", fn), check_finite(x, "x", fn), sigma_m, rho)


def _metric(points, x, sigma_m, rho, mask=None):
    # scaled first: far points give w = 0, not 0 * inf; the points on the last axis, (d, n), so that the
    # elementwise work runs along n, not along a short d
    diff = (points.T - x[:, None]) / sigma_m
    r2 = jnp.sum(diff * diff, axis=0)
    w = jnp.exp(-0.5 * r2)
    if mask is not None:  # padding rows (bucketed observation counts) carry no weight
        w = jnp.where(mask, w, jnp.zeros_like(w))
    far = w == 0
    spread = jnp.where(far[None, :], jnp.zeros_like(diff), diff * diff) * sigma_m**2
    return 1.0 / (spread @ w + rho)


def _segment_length(points, a, b, sigma_m, rho, mask=None):
    s = (jnp.arange(_N_QUAD, dtype=a.dtype) + 0.5) / _N_QUAD
    xs = a + s[:, None] * (b - a)
    m = jax.vmap(lambda x: _metric(points, x, sigma_m, rho, mask))(xs)
    return jnp.mean(jnp.sqrt(m @ ((b - a) ** 2)))


def _floyd_warshall(W):
    M = W.shape[0]
    nxt = jnp.broadcast_to(jnp.arange(M), (M, M))

    def body(k, carry):
        D, N = carry
        alt = D[:, k][:, None] + D[k][None, :]
        better = alt < D
        return jnp.where(better, alt, D), jnp.where(better, N[:, k][:, None], N)

    return jax.lax.fori_loop(0, M, body, (W, nxt))


def _dijkstra_path(W, src, dst, blocked):
    """Dense Dijkstra from ``src`` avoiding ``blocked`` nodes; returns (distance to ``dst``, node sequence of
    length M that starts by repeating ``src`` and ends at ``dst``)."""
    M = W.shape[0]
    inf = jnp.asarray(jnp.inf, W.dtype)
    blocked = blocked.at[src].set(False).at[dst].set(False)
    dist = jnp.full((M,), inf).at[src].set(0.0)
    pred = jnp.arange(M)

    def body(_, carry):
        dist, done, pred = carry
        u = jnp.argmin(jnp.where(done, inf, dist))
        done = done.at[u].set(True)
        alt = dist[u] + W[u]
        better = (alt < dist) & ~done & ~blocked
        return jnp.where(better, alt, dist), done, jnp.where(better, u, pred)

    dist, _, pred = jax.lax.fori_loop(0, M, body, (dist, blocked, pred))

    def walk(cur, _):
        return pred[cur], cur

    _, rev = jax.lax.scan(walk, dst, None, length=M)  # dst, pred(dst), ..., src, src, ...
    return dist[dst], rev[::-1]


def geodesic_targets(
    observations: ArrayLike,
    num_time_steps: int,
    *,
    num_nodes: int = 300,
    num_neighbors: int = 10,
    sigma_m: float = 0.15,
    rho: float = 1e-3,
    max_metric_points: int = 2000,
    orientation_eps: float | None = None,
) -> Float[Array, "n_traj n_int K1 d"]:
    """Geodesic between each pair of consecutive observations, sampled at ``num_time_steps + 1`` points.

    Each geodesic is the graph shortest path ``y_k -> node(y_k) -> ... -> node(y_{k+1}) -> y_{k+1}``
    parametrised by Riemannian arc length, evaluated at fractions ``j / num_time_steps``. Intervals whose endpoints
    are disconnected in the graph fall back to the straight line (as the authors' scripts do).

    Args:
      observations: observed states, shape ``(n_traj, n_obs, d)``.
      num_time_steps: number of time steps per interval (the targets have ``num_time_steps + 1`` points).
      num_nodes: at most this many graph nodes (an evenly strided subset of the observations).
      num_neighbors: neighbours per node in the kNN graph.
      sigma_m: metric kernel width.
      rho: metric floor.
      max_metric_points: at most this many observations define the metric (evenly strided).
      orientation_eps: if given, drop graph nodes within this distance of ``y_{k-1}`` when routing
        ``y_k -> y_{k+1}`` (module docstring; not applied to the first interval of each trajectory).

    Raises:
      ValueError: ``observations`` not 3-D, with fewer than two per trajectory or not finite;
        ``num_time_steps``/``num_nodes``/``num_neighbors``/``max_metric_points`` out of range, or
        ``sigma_m``/``rho``/``orientation_eps`` not finite and positive.
      TypeError: complex ``observations``.

    Returns:
      Target curves, shape ``(n_traj, n_obs - 1, num_time_steps + 1, d)``; entry ``[..., 0, :]`` is ``y_k`` and
      ``[..., -1, :]`` is ``y_{k+1}``.

    References:
      Maoutsa, arXiv:2512.23566; Arvanitidis et al., "Fast and robust shortest paths on manifolds learned
      from data", AISTATS 2019 (arXiv:1901.07629).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import geodesic_targets
      >>> th = jnp.linspace(0.0, 6.0, 60)
      >>> obs = jnp.stack([jnp.cos(th), jnp.sin(th)], -1)[None]
      >>> geodesic_targets(obs, 4, num_nodes=60, num_neighbors=4).shape
      (1, 59, 5, 2)
    """
    fn = "geodesic_targets"
    observations = as_real(observations, "observations", fn)
    if observations.ndim != 3:
        raise ValueError(f"{fn}: observations must have shape (n_traj, n_obs, d), got shape {observations.shape}")
    if observations.shape[1] < 2:
        raise ValueError(f"{fn}: need at least two observations per trajectory (one interval), got shape "
                         f"{observations.shape}")
    check_scale(orientation_eps, "orientation_eps", fn, allow_none=True)
    num_time_steps = check_count(num_time_steps, "num_time_steps", fn)
    num_nodes = check_count(num_nodes, "num_nodes", fn, low=2)
    num_neighbors = check_count(num_neighbors, "num_neighbors", fn)
    max_metric_points = check_count(max_metric_points, "max_metric_points", fn)
    check_scale(sigma_m, "sigma_m", fn)
    check_scale(rho, "rho", fn)
    observations = check_finite(observations, "observations", fn)
    eps = None if orientation_eps is None else float(orientation_eps)
    return _geodesic_jit(observations, observations.shape[1], num_time_steps, num_nodes, num_neighbors,
                         float(sigma_m), float(rho), max_metric_points, eps,
                         geodesic_chunk(observations, num_time_steps, num_nodes, max_metric_points, eps))


def _strided(n_traj: int, n_pad: int, n_obs, cap: int):
    """Rows of ``pts[::ceil(n_pts / cap)]`` over the real points, as indices into the padded flat array.

    The observations are ``(n_traj, n_pad, d)`` flattened, of which the first ``n_obs`` (traced) per trajectory
    are real. Returns ``(index (k_max,), valid (k_max,))`` with ``k_max = min(cap, n_traj * n_pad)`` static.
    """
    n_pts = n_traj * n_obs
    stride = jnp.maximum(1, -(-n_pts // cap))
    count = -(-n_pts // stride)
    i = jnp.arange(min(cap, n_traj * n_pad), dtype=n_obs.dtype)  # the count's dtype (int32 under x64 too)
    valid = i < count
    r = jnp.where(valid, i * stride, 0)
    return (r // n_obs) * n_pad + r % n_obs, valid


def geodesic_chunk(observations, num_time_steps: int, num_nodes: int, max_metric_points: int,
                   orientation_eps) -> int:
    """Intervals whose geodesics are traced at once (`chunk_rows`): per interval, the metric at the quadrature
    points of three segments over the metric points, the node path and, with ``orientation_eps``, a Dijkstra
    over the node graph."""
    n_traj, n_pad, d = observations.shape
    n_pts = n_traj * n_pad
    M, P = min(num_nodes, n_pts), min(max_metric_points, n_pts)
    row = 3 * _N_QUAD * P * (d + 2) + M * (3 * d + 8) + (3 * M * M if orientation_eps is not None else 0)
    row += 4 * (num_time_steps + 1) * d
    return chunk_rows(n_traj * (n_pad - 1), observations.dtype.itemsize * row)


@eqx.filter_jit
def _geodesic_jit(observations, n_obs, num_time_steps, num_nodes, num_neighbors, sigma_m, rho, max_metric_points,
                  orientation_eps, chunk=None):
    """The geodesics of `geodesic_targets` for ``observations`` ``(n_traj, n_pad, d)`` of which the first
    ``n_obs`` (traced) per trajectory are real: one compilation serves every ``n_obs <= n_pad``.

    The graph nodes and metric points are exactly the strided subsets of the real points; padding slots are
    masked out of the metric, the kNN graph (infinite edges) and the nearest-node search, so the curves of the
    real intervals do not depend on ``n_pad``. The curves of padding intervals are meaningless.
    """
    n_traj, n_pad, d = observations.shape
    n_obs = jnp.asarray(n_obs, jnp.int32)
    pts = observations.reshape(-1, d)
    m_idx, m_valid = _strided(n_traj, n_pad, n_obs, max_metric_points)
    n_idx, n_valid = _strided(n_traj, n_pad, n_obs, num_nodes)
    mpts = pts[m_idx]
    nodes = pts[n_idx]
    M = nodes.shape[0]
    k = min(num_neighbors, M - 1)
    seg = lambda a, b: _segment_length(mpts, a, b, sigma_m, rho, m_valid)
    inf = jnp.asarray(jnp.inf, pts.dtype)

    d2 = jnp.sum((nodes[:, None] - nodes[None]) ** 2, axis=-1)
    off = jnp.eye(M, dtype=bool) | ~n_valid[:, None] | ~n_valid[None, :]
    d2 = jnp.where(off, inf, d2)
    _, nbr = jax.lax.top_k(-d2, k)  # (M, k)
    lens = jax.vmap(lambda a, js: jax.vmap(lambda j: seg(a, nodes[j]))(js))(nodes, nbr)
    lens = jnp.where(n_valid[:, None] & n_valid[nbr], lens, inf)
    W = jnp.full((M, M), inf).at[jnp.arange(M)[:, None], nbr].set(lens)
    W = jnp.minimum(W, W.T)
    W = jnp.where(jnp.eye(M, dtype=bool), jnp.zeros((), pts.dtype), W)
    D, nxt = _floyd_warshall(W)

    nodes_t = nodes.T  # (d, M): the per-interval searches run along the nodes, not along a short d

    def nearest(x):
        return jnp.argmin(jnp.where(n_valid, jnp.sum((nodes_t - x[:, None]) ** 2, axis=0), inf))

    def one(a, b, prev, has_prev):
        sa = nearest(a)
        sb = nearest(b)
        if orientation_eps is None:
            reachable = jnp.isfinite(D[sa, sb])

            def walk(cur, _):
                return nxt[cur, sb], cur

            _, seq = jax.lax.scan(walk, sa, None, length=M)  # node indices, ends repeating sb
        else:
            blocked = (has_prev & (jnp.sum((nodes_t - prev[:, None]) ** 2, axis=0) < orientation_eps**2)) | ~n_valid
            dist, seq = _dijkstra_path(W, sa, sb, blocked)
            reachable = jnp.isfinite(dist)
        inner = jnp.where(reachable, nodes[seq].T, a[:, None]).T  # straight line if unreachable
        poly = jnp.concatenate([a[None], inner, b[None]], axis=0)  # (M + 2, d)
        node_len = jnp.where(seq[1:] == seq[:-1], 0.0, W[seq[:-1], seq[1:]]).astype(pts.dtype)
        node_len = jnp.where(reachable, node_len, jnp.zeros_like(node_len))
        first = jnp.where(reachable, seg(a, nodes[sa]), 0.0)
        last = jnp.where(reachable, seg(nodes[sb], b), seg(a, b))
        seglen = jnp.concatenate([first[None], node_len, last[None]])
        cum = jnp.concatenate([jnp.zeros((1,), pts.dtype), jnp.cumsum(seglen)])
        s = jnp.linspace(0.0, 1.0, num_time_steps + 1, dtype=pts.dtype) * cum[-1]
        idx = jnp.clip(jnp.searchsorted(cum, s, side="right") - 1, 0, poly.shape[0] - 2)
        frac = (s - cum[idx]) / jnp.maximum(seglen[idx], jnp.finfo(pts.dtype).tiny)
        frac = jnp.clip(frac, 0.0, 1.0)
        out = poly[idx] + frac[:, None] * (poly[idx + 1] - poly[idx])
        return out.at[0].set(a).at[-1].set(b)

    starts = observations[:, :-1].reshape(-1, d)
    ends = observations[:, 1:].reshape(-1, d)
    prevs = jnp.concatenate([observations[:, :1], observations[:, :-2]], axis=1).reshape(-1, d)
    has_prev = jnp.broadcast_to(jnp.arange(n_pad - 1) > 0, (n_traj, n_pad - 1)).reshape(-1)
    if chunk is None or chunk >= starts.shape[0]:
        curves = jax.vmap(one)(starts, ends, prevs, has_prev)
    else:  # chunks of intervals: the per-interval metric evaluations take one chunk's memory
        curves = jax.lax.map(lambda args: one(*args), (starts, ends, prevs, has_prev), batch_size=chunk)
    return curves.reshape(n_traj, n_pad - 1, num_time_steps + 1, d)
