"""EM drift inference with SMC bridges between consecutive observations, guided by observation geodesics
(Maoutsa, arXiv:2512.23566)."""


import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from .._buckets import size_bucket
from .._checks import check_int, check_values, is_traced
from .._progress import in_program_reporter, resolve_progress
from .._repr import record_repr, summarise
from .._results import RESULTS, Solution, raise_if_failed
from .._strategy import as_strategy
from .._types import PRNGKey, RealScalarLike
from ._basis import LinearDrift
from ._bridges import bridges_from_keys
from ._chunks import check_chunk_size, chunk_rows, chunked
from ._class_scores import select_candidates
from ._classes import normal_equations
from ._data import ArrayOrFrame, as_observations, as_sigma, as_trajectories, is_ragged
from ._diffusion import estimate_diffusion
from ._estimators import (
    _intervals,
    _named,
    check_function_class,
    default_function_class,
    fit_drift,
    fit_in_chunks,
    streams,
)
from ._guidance import AbstractGuidance, GeodesicGuidance, NoGuidance

__all__ = ["EMHistory", "DriftSolution", "infer_drift"]


class EMHistory(eqx.Module):
    """Per-iteration record of `infer_drift` (leading axis ``num_steps``, one entry per EM iteration).

    Attributes:
      loss: ``-mean_k log p_hat(y_{k+1} | y_k)``, the SMC estimate of the per-interval negative log
        likelihood of the observations under the drift used for that iteration's bridges (with geodesic
        guidance it includes the path-cost tilt).
      ess_median: median over intervals of the final effective sample size, as a fraction of
        ``num_particles``.
      ess_min: smallest final ESS fraction over intervals.
      drift_change: RMS change of the drift on the observations, ``sqrt(mean ||f_new(y) - f_old(y)||^2)``.
      num_degenerate: number of collapsed bridges.
      weights: drift weights after each iteration, shape ``(num_steps, m, d)``.
      sigma: the diffusion scale after each iteration (constant when ``sigma`` was given).
    """

    loss: Float[Array, " num_steps"]
    ess_median: Float[Array, " num_steps"]
    ess_min: Float[Array, " num_steps"]
    drift_change: Float[Array, " num_steps"]
    num_degenerate: Int[Array, " num_steps"]
    weights: Float[Array, "num_steps m d"]
    sigma: Float[Array, " num_steps"]

    def __repr__(self) -> str:
        return record_repr(self)


class DriftSolution(Solution):
    r"""What `infer_drift` returns (an `icmlx.Solution`).

    Attributes:
      value: the final drift, a `LinearDrift` (callable ``(d,) -> (d,)``); also `drift`. For a library class its
        ``std`` is the complete-data posterior standard error of the final M-step: the weight covariance
        $C = \sigma^2 (\sum_i w_i h_i \phi_i\phi_i^\top + \sigma^2 P)^{-1}$ over the final iteration's augmented
        paths (each interval's ``num_paths`` paths weighted ``1/num_paths``, so one interval counts once), with
        the $\sigma$ that step used. It treats the imputed paths as data, so it leaves out the missing information
        (Louis, JRSS B 44, 1982) and is narrower than the observed-data posterior at a coarse interval.
      result: an `icmlx.RESULTS` item: ``successful`` when the final drift is finite and no bridge of the
        final iteration collapsed; ``degenerate_bridges`` when some did (they were left out of the M-step);
        ``nonfinite`` when the drift weights are not finite.
      stats: ``num_steps`` (EM iterations), and per iteration (leading axis ``num_steps``) ``loss``,
        ``ess_median``, ``ess_min``, ``drift_change`` and ``num_degenerate`` (as in `EMHistory`).
      initial_drift: the EM starting point (the naive estimate unless ``init`` was given).
      history: `EMHistory` (the stats above plus the drift weights after each iteration).
      ess: final-iteration ESS fraction per interval, shape ``(n_intervals,)``.
      degenerate: final-iteration collapsed-bridge flags per interval, shape ``(n_intervals,)``.
      sigma: the diffusion scale of the final drift: the given one, or with ``sigma=None`` the EM's estimate.
      initial_sigma: the EM's starting diffusion scale (the given one, or `estimate_diffusion`'s).
      selection: with ``function_class="auto"`` (the default), the `FunctionClassSelection` that chose the class;
        ``None`` for a given class.
    """

    initial_drift: LinearDrift
    history: EMHistory
    ess: Float[Array, " n_intervals"]
    degenerate: Bool[Array, " n_intervals"]
    sigma: Float[Array, ""]
    initial_sigma: Float[Array, ""]
    selection: eqx.Module | None = None

    @property
    def drift(self) -> LinearDrift:
        """The final drift (`value`)."""
        return self.value

    def drift_at(self, iteration: int) -> LinearDrift:
        """The drift after EM iteration ``iteration`` (0-based); ``-1`` is the final one.

        Raises:
          ValueError: ``iteration`` outside ``[-num_steps, num_steps)``.
        """
        n = self.history.weights.shape[0]
        iteration = check_int(iteration, "iteration", where="drift_at")
        if not -n <= iteration < n:
            raise ValueError(f"drift_at: iteration must be an integer in [-{n}, {n}) (the EM ran {n} iterations), "
                             f"got {iteration=}")
        return LinearDrift(self.value.basis, self.history.weights[iteration], names=self.value.names)

    def __repr__(self) -> str:
        # The status by name, the last EM iteration's diagnostics by value, the drift by its class and size.
        order = ("num_steps", "loss", "ess_median", "ess_min", "drift_change", "num_degenerate")
        keys = [k for k in order if k in self.stats] + sorted(k for k in self.stats if k not in order)
        last = {k: self.stats[k][-1] if getattr(self.stats[k], "ndim", 0) >= 1 else self.stats[k] for k in keys}
        return (f"DriftSolution(result={summarise(self.result)}, stats={summarise(last)} (last iteration), "
                f"value={self.value!r})")


_DEFAULT_GUIDANCE = GeodesicGuidance()


def _as_guidance(guidance) -> AbstractGuidance:
    return as_strategy(guidance, AbstractGuidance, {"geodesic": GeodesicGuidance, "none": NoGuidance}, "guidance")


# --------------------------------------------------------------------------- EM


def infer_drift(
    key: PRNGKey,
    observations: ArrayOrFrame,
    ts: ArrayOrFrame,
    sigma: RealScalarLike | None = None,
    *,
    guidance: AbstractGuidance | str = _DEFAULT_GUIDANCE,
    num_steps: int = 8,
    num_particles: int = 128,
    num_time_steps: int = 40,
    num_paths: int = 4,
    function_class: eqx.Module | str | None = "auto",
    init: LinearDrift | None = None,
    lookahead: bool = False,
    progress: bool | None = None,
    throw: bool = True,
    mesh: jax.sharding.Mesh | None = None,
    chunk_size: int | None = None,
) -> DriftSolution:
    r"""EM drift inference with SMC bridges between every pair of consecutive observations.

    Start from the naive estimate $\hat f_0$. Each of the ``num_steps`` iterations (a ``lax.scan``
    step) draws, for all intervals at once (``vmap``), ``num_paths`` bridge paths from an SMC sampler targeting

    $$
    q(x_{[t_k, t_{k+1}]}) \propto p_{\hat f_a}(x \mid y_k, y_{k+1})
    \exp\!\Big(-\beta \int \lVert x_t - \gamma_k(t)\rVert\,dt\Big),
    $$

    where $\gamma_k$ and $\beta$ come from ``guidance`` (`GeodesicGuidance`: the geodesic
    between $y_k$ and $y_{k+1}$ under the observation metric; `NoGuidance`:
    $\beta = 0$), then refits the drift to the increments of the augmented paths under the path
    likelihood (M-step, no divergence term needed because the paths are stochastic). Uneven observation
    intervals are supported (each bridge uses ``tau_k / num_time_steps``).

    With ``sigma=None`` the M-step also updates $\sigma$ from the augmented paths. Their fine-scale quadratic
    variation only returns the $\sigma$ the bridges were drawn with (a bridge of $K$ steps has $K - 1$ free
    increments and one pinned by the observations; Roberts & Stramer 2001), so plain data-augmentation EM moves
    $\sigma^2$ by a fraction $1/K$ of its error per iteration. The update takes the informative part, the
    interval-scale residual of each path $x$ of interval $k$, and jumps to the fixed point of that iteration:

    $$\sigma^2 \leftarrow \frac{\sum_{k, x} w_{k,x} \lVert y_{k+1} - y_k - \sum_j \hat f(x_j)\,h_k \rVert^2}
    {d \sum_{k, x} w_{k,x}\, \tau_k}$$

    (at the true drift and $\sigma$ its expectation is exactly $\sigma^2$, since the residual of the true path
    is $\sigma(W_{t_{k+1}} - W_{t_k})$).

    Args:
      key: PRNG key.
      observations: shape ``(n_obs, d)`` or ``(n_traj, n_obs, d)``: NumPy, JAX, lists, a DataFrame (columns =
        coordinates, names kept in ``drift.names``), a list of equal-length trajectories or a
        `SamplePaths` (as in `naive_drift`), or a list of trajectories of different lengths
        ``(n_i, d)`` (ragged; each is padded to the longest and its padding intervals are masked out).
      ts: strictly increasing observation times, shape ``(n_obs,)`` or ``(n_traj, n_obs)`` (one grid per
        trajectory), or a list of grids for ragged observations; ``None`` with a `SamplePaths`.
      sigma: a known positive diffusion scale, or ``None`` (default) to estimate it jointly with the drift:
        it starts from `estimate_diffusion` of the observations and each EM iteration updates it from the
        augmented paths (see above); the final value is ``sigma`` of the result.
      guidance: a guidance strategy, `GeodesicGuidance` (default, ``strength=5``) or
        `NoGuidance`; the strings ``"geodesic"`` and ``"none"`` mean their defaults.
      num_steps: EM iterations (a fixed count).
      num_particles: SMC particles per interval.
      num_time_steps: bridge time steps per interval (``>= 2``).
      num_paths: paths drawn per interval for the M-step.
      function_class: ``"auto"`` (default) chooses the drift's class from the data with
        `select_function_class` (``score="bridge"``): linear or cubic monomials, RBF ridge regression or
        `default_function_class`'s sparse GP, each fitted by a smaller EM (at most 4 iterations, 32 particles, 10
        steps per interval) on three quarters of the data and scored by the held-out bridge evidence, the
        simplest within one standard error of the best winning; ``selection`` of the result records it. It costs
        about four smaller fits more than one fit in 1-2 dimensions, and is faster than the sparse GP alone at
        $d \ge 3$, where the GP's inducing grid is large. On a double well and a rotating well at
        $\tau \in \{0.1, 0.5, 1\}$ its drift is within 1.2x the weighted RMSE of the best of the four classes,
        where the sparse GP alone is up to 5.1x (``python benchmarks/sde_function_class.py``). Under `jax.jit` /
        `jax.vmap` the choice is made inside the program and the drift is a `LinearDrift` on a `SelectedBasis`
        (the chosen class's weights padded to the largest candidate's size; the same values as the eager run).
        Or a feature class (`SparseGP`, `RidgeRegression`), or ``None`` for `default_function_class`.
      init: starting drift (default: the naive estimate in the same class).
      lookahead: use the look-ahead twisted SMC weights (see `smc_bridges`).
      progress: report one line per EM iteration on standard error (loss, ESS, drift change). ``None`` shows
        progress in an interactive terminal for loops driven from Python; a loop inside one compiled program
        reports only with ``progress=True`` — the EM loop is one compiled ``lax.scan``, so ``None`` means off
        (unless ``ICMLX_PROGRESS=1``) and the default program holds no host callback.
      throw: raise at run time (``eqx.error_if``) exactly when ``result`` is not successful; with
        ``throw=False`` inspect ``result``.
      mesh: a ``jax.sharding.Mesh`` to split the bridges over: the intervals (each with its ``num_particles``
        particles) are sharded over all the mesh's axes, and the M-step's sums are reduced across devices. The
        result equals the one-device run up to the order of floating-point sums (random numbers do not depend
        on the sharding). The padded interval count (``n_traj`` times a power of two >= 8) must be divisible by
        the mesh size; each chunk of intervals is split over the devices.
      chunk_size: intervals whose bridges run at once. Each EM iteration runs the bridges over chunks of
        intervals and adds up the M-step's normal equations (and, with ``sigma=None``, the residual sums of the
        $\sigma$ update) over the chunks, so memory beyond the observations and their geodesic targets is one
        chunk's, whatever the number of intervals. ``None`` chooses the largest power of two within the memory
        budget (`icmlx.sde` guide, "Data sets of any size"). Random numbers are drawn per interval, so the
        result does not depend on it beyond the order of floating-point sums. A user function class with only a
        ``fit`` method (no normal equations) gets every interval at once.

    Returns:
      `DriftSolution` with the final drift (``value``, also ``drift``), the EM history and per-interval
      bridge diagnostics. Collapsed bridges are counted in ``stats["num_degenerate"]``, flagged in
      ``degenerate`` and given zero weight in the M-step; if any bridge of the final iteration collapsed,
      ``result`` is ``RESULTS.degenerate_bridges``.

    Raises:
      ValueError: bad ``guidance``, sizes, shapes or ``sigma``; NaN observations, a constant coordinate or
        non-increasing times (host checks for concrete input; ``eqx.error_if`` inside the caller's ``jit``);
        a ``function_class`` or ``init`` for another ``d``, an ``init`` with non-finite weights, or an ``init``
        with ``function_class="auto"``.
      RuntimeError: with ``throw=True``, degenerate bridges in the final iteration or a non-finite drift.

    References:
      Maoutsa, "From Geometry to Dynamics: Learning Overdamped Langevin Dynamics from Sparse Observations
      with Geometric Constraints", ICML 2026, arXiv:2512.23566; Roberts & Stramer, "On inference for
      partially observed nonlinear diffusion models using the Metropolis–Hastings algorithm", Biometrika 88
      (2001).

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> import icmlx
      >>> from icmlx.sde import NoGuidance, infer_drift
      >>> y = jnp.cumsum(0.3 * jax.random.normal(jax.random.key(0), (30, 2)), axis=0)  # a random walk
      >>> ts = jnp.arange(30.0)
      >>> sol = infer_drift(jax.random.key(1), y, ts, 0.3, guidance=NoGuidance(), num_steps=2,
      ...                   num_particles=8, num_time_steps=4)
      >>> sol.stats["loss"].shape, int(sol.num_steps), bool(sol.result == icmlx.RESULTS.successful)
      ((2,), 2, True)
    """
    guidance = _as_guidance(guidance)
    num_steps, num_particles, num_time_steps, num_paths = _check_counts(
        num_steps, num_particles, num_time_steps, num_paths, "infer_drift")
    chunk_size = check_chunk_size(chunk_size, "infer_drift")
    obs_p, ts_p, lengths, sig, learn_sigma, names = _prepare(observations, ts, sigma, "infer_drift", chunk_size)
    n_traj, n_obs, d = obs_p.shape[0], int(lengths.max()), obs_p.shape[2]
    show = resolve_progress(progress, in_program=True)
    # the mesh is checked before any work (the class selection included)
    sharding = None
    if mesh is not None:
        if not isinstance(mesh, jax.sharding.Mesh):
            raise TypeError(f"infer_drift: mesh must be a jax.sharding.Mesh or None, got {type(mesh).__name__}")
        n_int = obs_p.shape[0] * (obs_p.shape[1] - 1)
        if n_int % mesh.size:
            raise ValueError(f"infer_drift: the {n_int} padded intervals do not divide over the mesh's {mesh.size} "
                             "devices; use a mesh whose size is a power of two (or divides the interval count)")
        # the same devices with automatic axes: the constraint inside the program is a hint to the partitioner
        auto = jax.sharding.Mesh(mesh.devices, mesh.axis_names,
                                 axis_types=(jax.sharding.AxisType.Auto,) * len(mesh.axis_names))
        sharding = jax.sharding.NamedSharding(auto, jax.sharding.PartitionSpec(tuple(mesh.axis_names)))
    selection = None
    if isinstance(function_class, str):
        if function_class != "auto":
            raise ValueError(f"infer_drift: function_class must be a feature class, None or 'auto', got "
                             f"{function_class=}")
        if init is not None:
            raise ValueError("infer_drift: init needs the class it was fitted in; pass that class as function_class= "
                             "with init (function_class='auto', the default, chooses the class from the data)")
        # the final fit keeps the caller's key: it equals infer_drift(key, ..., function_class=<the chosen class>)
        k_sel = jax.random.fold_in(key, 1)
        # concrete data: the chosen class itself; traced data: a SelectedClass over every candidate
        selection = _bridge_selection(k_sel, obs_p, ts_p, lengths, sig, learn_sigma, None, 0.25, guidance,
                                      min(num_steps, 4), min(num_particles, 32), min(num_time_steps, 10), num_paths,
                                      lookahead, "infer_drift", chunk_size)
        function_class = selection.function_class
    # the padding repeats each trajectory's last observation: the same bounding box as the observations'
    fc = default_function_class(obs_p) if function_class is None else function_class
    check_function_class(fc, d, "infer_drift")
    if init is not None:
        if not isinstance(init, LinearDrift) or init.weights.shape[-1] != d:
            raise ValueError(f"infer_drift: init must be a LinearDrift for states with d = {d} (the observations'), "
                             f"got {init!r}")
        weights = check_values(init.weights, lambda xp, v: ~xp.isfinite(v),
                               "infer_drift: init has NaN or inf weights; pass a finite starting drift")
        init = eqx.tree_at(lambda f: f.weights, init, weights)
    n_valid = jax.device_put(lengths.astype(np.int32))
    # The guidance enters the compiled EM loop only as data (targets, beta): plain and geodesic runs of the
    # same size share one compiled function (beta = 0 makes the path cost vanish).
    targets, beta = guidance._padded_targets(obs_p, num_time_steps, n_obs)
    chunk = em_chunk(obs_p.shape[0] * (obs_p.shape[1] - 1), d, _feature_count(fc, d, obs_p.dtype), num_particles,
                     num_time_steps, num_paths, obs_p.dtype.itemsize, chunk_size, 1 if mesh is None else mesh.size)
    sol = _infer_core(
        key, obs_p, ts_p, n_valid, sig, fc, init, targets, beta, num_steps, num_particles, num_time_steps,
        num_paths, lookahead, show, learn_sigma=learn_sigma, sharding=sharding, chunk=chunk,
    )
    # The per-interval diagnostics of the real intervals (host slicing for concrete results: no program).
    ess, degenerate = (_real_intervals(x, n_traj, n_obs, lengths) for x in (sol.ess, sol.degenerate))
    sol = eqx.tree_at(lambda s: (s.ess, s.degenerate), sol, (ess, degenerate))
    if selection is not None:
        sol = eqx.tree_at(lambda s: s.selection, sol, selection, is_leaf=lambda x: x is None)
    # Outside the compiled loop, so that throw=True and throw=False share one compilation.
    weights = raise_if_failed(sol.value.weights, sol.result, throw)
    sol = eqx.tree_at(lambda s: s.value.weights, sol, weights)
    if names is not None:
        sol = eqx.tree_at(lambda s: s.value, sol, _named(sol.value, names))
    return sol


def _feature_count(fc, d: int, dtype) -> int:
    """The number of features of ``fc``'s basis (shapes only)."""
    return int(jax.eval_shape(fc.basis, jax.ShapeDtypeStruct((d,), dtype)).shape[-1])


def _check_counts(num_steps, num_particles, num_time_steps, num_paths, fn: str) -> tuple[int, int, int, int]:
    """The EM's sizes as ints, each at least 1 (``num_time_steps`` at least 2), or an error naming it."""
    return (check_int(num_steps, "num_steps", where=fn, minimum=1),
            check_int(num_particles, "num_particles", where=fn, minimum=1),
            check_int(num_time_steps, "num_time_steps", where=fn, minimum=2),
            check_int(num_paths, "num_paths", where=fn, minimum=1))


def _prepare(observations, ts, sigma, fn: str, chunk_size: int | None = None):
    """Validated observations padded to their size bucket: ``(obs (n_traj, n_pad, d), ts, lengths, sigma,
    learn_sigma, names)``, ``lengths`` the real observations per trajectory (host integers: static for traced
    input, which is never ragged) and ``sigma`` `estimate_diffusion`'s when none was given.

    New sizes reuse the compiled programs: the observation count is padded to a bucket (`_bucket_obs`) and the
    true count enters the programs as data, masking the padding intervals. The bucket is a function of the count
    alone, so a call's result never depends on what the process ran before.
    """
    if is_ragged(observations):
        # each trajectory padded to the longest on the host, its true length entering the program as data
        trajs, names = as_trajectories(observations, ts, fn=fn)
        lengths = np.array([len(t) for _, t in trajs])
        n_max = int(lengths.max())
        padded = [_pad_observations(np.asarray(o)[None], np.asarray(t), n_max) for o, t in trajs]
        obs = jax.device_put(np.concatenate([np.asarray(o) for o, _ in padded]))
        ts = jax.device_put(np.stack([np.asarray(t) for _, t in padded]))
        sig = as_sigma(sigma, obs.dtype, fn, allow_none=True)
        sigma_data = (observations, [t for _, t in trajs])
    else:
        obs, ts, sig, names = as_observations(observations, ts, sigma, fn=fn, allow_none=True)
        lengths = np.full(obs.shape[0], obs.shape[1])
        sigma_data = (obs, ts)
    learn_sigma = sig is None
    if learn_sigma:
        sig = estimate_diffusion(*sigma_data, chunk_size=chunk_size).sigma
    obs_p, ts_p = _pad_observations(obs, ts, _bucket_obs(obs.shape[1]))
    return obs_p, ts_p, lengths, sig, learn_sigma, names


def _bridge_selection(key, obs_p, ts_p, lengths, sig, learn_sigma, candidates, holdout, guidance, num_steps,
                      num_particles, num_time_steps, num_paths, lookahead, fn, chunk_size=None):
    """`select_candidates` with each candidate fitted by the EM loop on the padded observations, its training
    part given as each trajectory's count of real observations (one compiled EM per class and size bucket)."""
    targets, beta = guidance._padded_targets(obs_p, num_time_steps, int(lengths.max()))
    n_traj, n_pad, d = obs_p.shape

    def chunk(fc, paths):
        return em_chunk(n_traj * (n_pad - 1), d, _feature_count(fc, d, obs_p.dtype), num_particles, num_time_steps,
                        paths, obs_p.dtype.itemsize, chunk_size)

    def fit(fc, n_train, k):
        sol = _infer_core(k, obs_p, ts_p, n_train, sig, fc, None, targets, beta, num_steps, num_particles,
                          num_time_steps, num_paths, lookahead, False, learn_sigma=learn_sigma,
                          chunk=chunk(fc, num_paths))
        return sol.value, sol.sigma

    return select_candidates(fit, obs_p, ts_p, lengths, None if learn_sigma else sig, candidates, holdout, key,
                             num_particles, num_time_steps, fn, chunk=lambda fc: chunk(fc, 1))


def select_by_bridges(observations, ts, sigma, candidates, holdout, key, em_options, fn, chunk_size=None):
    """`select_function_class` with ``score="bridge"``: the observations prepared as `infer_drift` prepares
    them, the candidates fitted by its EM (``em_options``: its ``num_steps``, ``num_particles``,
    ``num_time_steps``, ``num_paths``, ``guidance`` and ``lookahead``)."""
    if key is None:
        raise ValueError(f"{fn}: score='bridge' needs a PRNG key (key=jax.random.key(0)) for the EM fits and the "
                         "bridges")
    opts = dict(num_steps=4, num_particles=32, num_time_steps=10, num_paths=4, guidance="geodesic", lookahead=False)
    if em_options is not None:
        if not isinstance(em_options, dict):
            raise TypeError(f"{fn}: em_options must be a dict of infer_drift options, got {em_options!r}")
        unknown = sorted(set(em_options) - set(opts))
        if unknown:
            raise TypeError(f"{fn}: em_options takes {', '.join(sorted(opts))}; got {', '.join(map(str, unknown))}")
        opts.update(em_options)
    counts = _check_counts(*(opts[k] for k in ("num_steps", "num_particles", "num_time_steps", "num_paths")), fn)
    obs_p, ts_p, lengths, sig, learn_sigma, _ = _prepare(observations, ts, sigma, fn, chunk_size)
    return _bridge_selection(key, obs_p, ts_p, lengths, sig, learn_sigma, candidates, holdout,
                             _as_guidance(opts["guidance"]), *counts, bool(opts["lookahead"]), fn, chunk_size)


def _bucket_obs(n_obs: int) -> int:
    """Padded observations per trajectory: ``n_obs - 1`` intervals rounded up to a power of two (>= 8).

    Every count in ``(2^k/2, 2^k]`` intervals shares one compilation, so a second call with up to half as many
    observations compiles nothing; the padding intervals cost their bridges' work (up to as much again as the
    real ones'), never a recompilation. A finer bucket would waste less work but recompile for most new counts,
    and reusing whatever padded size the process ran before would make a result depend on earlier calls.
    """
    return size_bucket(n_obs - 1, minimum=8) + 1


def _pad_observations(obs, ts, n_pad: int):
    """Observations ``(n_traj, n_obs, d)`` and times padded to ``n_pad`` per trajectory.

    The padding repeats the last observation at times continuing with the last step (finite, strictly
    increasing), so the padding intervals are harmless bridges that the EM masks out. Concrete input is padded
    in NumPy (no program); traced input with ``jnp``.
    """
    n_obs = obs.shape[1]
    extra = n_pad - n_obs
    if extra == 0:
        return obs, ts
    xp = jnp if is_traced(obs) or is_traced(ts) else np
    o = xp.asarray(obs)
    t = xp.asarray(ts)
    o = xp.concatenate([o, xp.repeat(o[:, -1:], extra, axis=1)], axis=1)
    step = t[..., -1:] - t[..., -2:-1]
    t = xp.concatenate([t, t[..., -1:] + step * xp.arange(1, extra + 1, dtype=t.dtype)], axis=-1)
    if xp is np:
        return jax.device_put(o), jax.device_put(t)
    return o, t


def _real_intervals(x, n_traj: int, n_obs: int, lengths):
    """The first ``lengths[i] - 1`` intervals of trajectory ``i`` of a flat padded per-interval array."""
    if is_traced(x):  # traced input is never ragged: every trajectory has n_obs observations
        return x.reshape(n_traj, -1)[:, : n_obs - 1].reshape(-1)
    host = np.asarray(x).reshape(n_traj, -1)
    return jax.device_put(np.concatenate([host[i, : n - 1] for i, n in enumerate(lengths)]))


def em_chunk(num_intervals: int, d: int, num_features: int, num_particles: int, num_time_steps: int,
             num_paths: int, itemsize: int, chunk_size: int | None, devices: int = 1) -> int:
    """Intervals per chunk of the EM: ``chunk_size``, or the most whose bridges and M-step rows fit the memory
    budget (`chunk_rows`), a multiple of the devices the chunk is sharded over."""
    N, K, R, m = num_particles, num_time_steps, num_paths, num_features
    # per interval: the particles' history (states and ancestors), one step's features of the particles, the
    # paths' M-step rows (features and their weighted copy) and the paths and targets themselves
    row = itemsize * ((K - 1) * N * (d + 1) + 3 * N * m + 3 * R * K * m + 2 * R * (K + 1) * d + (K + 1) * d + 16)
    return chunk_rows(num_intervals, row, chunk_size, multiple=devices)


@eqx.filter_jit
def _infer_core(
    key, obs, ts, n_obs, sig, fc, init, targets, beta, num_steps, num_particles, num_time_steps, num_paths,
    lookahead, progress, learn_sigma=False, sharding=None, chunk=None,
):
    n_traj, n_pad, d = obs.shape
    dtype = obs.dtype
    K, R = num_time_steps, num_paths
    n_int = n_traj * (n_pad - 1)
    targets = targets.reshape(n_int, K + 1, d)
    states, incs, dts = _intervals(obs, ts)
    # padding intervals and points (bucketed sizes): weight 0 in every fit and statistic
    # n_obs: the real observations per trajectory, shape (n_traj,) (or one count for all)
    n_obs = jnp.broadcast_to(jnp.reshape(n_obs, (-1,)), (n_traj,))
    real_int = (jnp.arange(n_pad - 1, dtype=n_obs.dtype)[None] < n_obs[:, None] - 1).reshape(-1)
    real_pt = (jnp.arange(n_pad, dtype=n_obs.dtype)[None] < n_obs[:, None]).reshape(-1)
    # a class that fits from normal equations streams: the intervals run in chunks, their sums added up; a user
    # class with only `fit` gets every row at once
    stream = streams(fc)
    chunk = n_int if chunk is None or not stream else chunk
    if init is None:
        if stream:
            init = fit_in_chunks(fc, states, incs, dts, sig, real_int.astype(dtype), chunk)
        else:
            init = fit_drift(fc, states, incs, dts, sig, weights=real_int.astype(dtype))
    basis = init.basis
    starts = states
    ends = states + incs
    shard = None
    if sharding is not None:  # static: each chunk's intervals split over the mesh
        shard = lambda a: jax.lax.with_sharding_constraint(  # noqa: E731
            a, jax.sharding.NamedSharding(sharding.mesh, jax.sharding.PartitionSpec(
                sharding.spec[0], *([None] * (a.ndim - 1)))))
    ypts = obs.reshape(-1, d)
    report = in_program_reporter("infer_drift", total=num_steps) if progress else None

    sig0 = sig
    # whether the class's fit gives a weight covariance (library classes do; a user class may not): shapes only
    has_cov = jax.eval_shape(lambda: fit_drift(fc, states, incs, dts, sig)).covariance is not None
    m = init.weights.shape[0]
    cov0 = jnp.zeros((m, m), dtype)  # replaced by the first M-step's

    def em_step(carry, it):
        key, W, sig, cov = carry
        key, kb = jax.random.split(key)
        keys = jax.random.split(kb, n_int)  # per interval: the draws do not depend on the chunking
        drift = LinearDrift(basis, W)

        def e_step(win, valid):
            """One chunk's bridges and what the M-step and the diagnostics need of them."""
            k, a, b, h, g, real = win
            if shard is not None:
                a, b, h, g = shard(a), shard(b), shard(h), shard(g)
            real = real & valid
            bs = bridges_from_keys(k, drift, sig, a, b, h, g, beta, num_particles, K, R, lookahead)
            p = bs.paths  # (C, R, K+1, d)
            C = p.shape[0]
            x = p[:, :, :-1].reshape(-1, d)
            dx = jnp.diff(p, axis=2).reshape(-1, d)
            hrow = jnp.broadcast_to((h / K)[:, None, None], (C, R, K)).reshape(-1)
            wint = jnp.where(bs.degenerate | ~real, 0.0, 1.0 / R).astype(dtype)
            w = jnp.broadcast_to(wint[:, None, None], (C, R, K)).reshape(-1)
            real_row = jnp.broadcast_to(real[:, None, None], (C, R, K)).reshape(-1, 1)
            x = jnp.where(real_row, x, jnp.zeros_like(x))  # a padding bridge cannot reach the fit, even as NaN * 0
            dx = jnp.where(real_row, dx, jnp.zeros_like(dx))
            valid_b = ~bs.degenerate & real
            sums = {"loss": jnp.sum(jnp.where(valid_b, bs.log_evidence, 0.0)), "n_valid": jnp.sum(valid_b),
                    "n_deg": jnp.sum(bs.degenerate & real)}
            rows = {"ess": bs.ess / num_particles, "deg": bs.degenerate & real}
            phi = jax.vmap(basis)(x)  # (C R K, m)
            if stream:
                sums["G"], sums["B"] = normal_equations(basis, x, dx, hrow, w, features=phi)
            else:
                rows.update(x=x.reshape(C, R * K, d), dx=dx.reshape(C, R * K, d), h=hrow.reshape(C, R * K),
                            w=w.reshape(C, R * K))
            if learn_sigma:  # static
                # interval-scale residuals r = (b - a) - sum_j f(x_j) h of each path are linear in the drift's
                # weights: r_new = r_old - Phi^T (W_new - W_old), Phi the path's summed features, so the sums of
                # r_old r_old, Phi r_old^T and Phi Phi^T give the residual under the drift the M-step will fit
                Phi = (phi * hrow[:, None]).reshape(C, R, K, -1).sum(2)  # (C, R, m)
                r_old = jnp.where(real[:, None, None], (b - a)[:, None] - Phi @ W, 0.0)
                wr = jnp.broadcast_to(wint[:, None], (C, R)).reshape(-1)
                Phi, r_old = Phi.reshape(C * R, -1), r_old.reshape(C * R, d)
                sums.update(rr=jnp.sum(wr * jnp.sum(r_old**2, -1)), Pr=(Phi * wr[:, None]).T @ r_old,
                            PP=(Phi * wr[:, None]).T @ Phi, den=d * jnp.sum(wint * R * h))
            return sums, rows

        data = (keys, starts, ends, dts, targets, real_int)
        sums, rows = chunked(e_step, data, n_int, chunk)
        if stream:
            new = fc._from_normal_equations(sums["G"], sums["B"], sig)
        else:
            new = fit_drift(fc, rows["x"].reshape(-1, d), rows["dx"].reshape(-1, d), rows["h"].reshape(-1), sig,
                            weights=rows["w"].reshape(-1))
        Wn = new.weights
        cov = new.covariance.astype(cov.dtype) if has_cov else cov  # the complete-data posterior covariance
        if learn_sigma:  # static: the interval-scale residual of each augmented path under the new drift
            dW = Wn - W
            num = sums["rr"] - 2.0 * jnp.sum(dW * sums["Pr"]) + jnp.sum(dW * (sums["PP"] @ dW))
            num = jnp.maximum(num, 0.0)
            den = sums["den"]
            sig = jnp.where(den > 0, jnp.sqrt(num / jnp.maximum(den, jnp.finfo(dtype).tiny)), sig)

        def change_sums(win, valid):
            y, real = win
            diff = jax.vmap(basis)(y) @ dW_change
            return jnp.sum(jnp.where(real & valid, jnp.sum(diff**2, -1), 0.0)), None

        dW_change = Wn - W
        sq = chunked(change_sums, (ypts, real_pt), ypts.shape[0], min(ypts.shape[0], chunk * R * K))[0]
        change = jnp.sqrt(sq / jnp.sum(n_obs).astype(dtype))
        n_valid = jnp.maximum(sums["n_valid"], 1).astype(dtype)
        loss = -sums["loss"] / n_valid
        ess_frac = rows["ess"]
        ess_med = jnp.nanmedian(jnp.where(real_int, ess_frac, jnp.nan))
        ess_low = jnp.min(jnp.where(real_int, ess_frac, jnp.inf))
        ndeg = sums["n_deg"]
        if progress:  # static: the default program holds no host callback
            report(it + 1, loss=loss, ess_median=ess_med, drift_change=change, num_degenerate=ndeg)
        out = (loss, ess_med, ess_low, change, ndeg, Wn, ess_frac, rows["deg"], sig)
        return (key, Wn, sig, cov), out

    (_, W, sig, cov), outs = jax.lax.scan(em_step, (key, init.weights, sig0, cov0), jnp.arange(num_steps))
    loss, ess_med, ess_min, change, ndeg, Ws, ess_all, deg_all, sigs = outs
    history = EMHistory(loss, ess_med, ess_min, change, ndeg, Ws, sigs)
    finite = jnp.all(jnp.isfinite(W))
    result = RESULTS.where(finite, RESULTS.successful, RESULTS.nonfinite)
    result = RESULTS.where(finite & (ndeg[-1] > 0), RESULTS.degenerate_bridges, result)
    stats = {
        "num_steps": jnp.asarray(num_steps, jnp.int32),
        "loss": loss,
        "ess_median": ess_med,
        "ess_min": ess_min,
        "drift_change": change,
        "num_degenerate": ndeg,
    }
    return DriftSolution(
        value=LinearDrift(basis, W, covariance=cov if has_cov else None),
        result=result,
        stats=stats,
        initial_drift=init,
        history=history,
        ess=ess_all[-1],
        degenerate=deg_all[-1],
        sigma=sig,
        initial_sigma=sig0,
    )
