"""Turning what users hold into the ``(observations, ts, sigma)`` arrays of the estimators, with clear errors.

Accepted observations: NumPy or JAX arrays, nested lists, a pandas DataFrame (rows = times, columns =
coordinates; the column names are kept), a list of equal-length trajectories (arrays or DataFrames), and a
`SamplePaths` (whose ``ts`` is used when ``ts`` is ``None``). Integer data is cast to the
default floating dtype. Uneven time steps, a separate time grid per trajectory (``ts`` of shape
``(n_traj, n_obs)``) and ragged trajectories (a list of trajectories of different lengths with a list of their time
grids, `interval_data`) are supported.

Value checks (finite data, increasing times, positive ``sigma``, no constant coordinate) run on the host for
concrete input (a ``ValueError`` at call time) and as ``eqx.error_if`` only for input traced by the user's
``jit`` (`icmlx._checks.check_values`).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_int, check_number, check_values, default_float_dtype, is_traced
from .._inputs import column_names, is_dataframe, is_series, to_device

__all__ = ["ArrayOrFrame", "as_states", "as_observations", "as_sigma"]

#: An array-like of states (NumPy, JAX, nested lists) or a pandas DataFrame whose columns are the coordinates.
ArrayOrFrame = Any


def _to_array(x: Any, name: str, fn: str):
    """A JAX array (traced input passes through) from an array-like, a DataFrame or a list of them."""
    names = None
    if is_dataframe(x):
        names = column_names(x)
        x = x.to_numpy()
    elif isinstance(x, list | tuple) and x and all(is_dataframe(v) for v in x):
        cols = [column_names(v) for v in x]
        if any(c != cols[0] for c in cols):
            raise ValueError(f"{fn}: the DataFrames in {name} have different columns {sorted(set(cols))}; "
                             "give every trajectory the same columns in the same order")
        names = cols[0]
        x = [v.to_numpy() for v in x]
    if isinstance(x, list | tuple):
        lengths = [np.shape(v)[0] if np.ndim(v) >= 2 else None for v in x]
        if all(n is not None for n in lengths) and len(set(lengths)) > 1:
            raise ValueError(
                f"{fn}: the trajectories in {name} have different lengths {lengths}; ragged trajectories are not "
                "supported: cut or split them to a common length, or pass each to its own call"
            )
        try:
            x = np.asarray(x)
        except ValueError as err:
            raise ValueError(f"{fn}: {name} is a ragged nested list; give every row the same length ({err})") from err
    if is_traced(x):
        arr = x
    else:
        arr = np.asarray(x) if not hasattr(x, "dtype") else x
        if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)):
            raise TypeError(f"{fn}: {name} must be numeric, got dtype {arr.dtype}; convert or drop the "
                            "non-numeric columns first")
    if jnp.issubdtype(arr.dtype, jnp.bool_) or jnp.issubdtype(arr.dtype, jnp.complexfloating):
        raise TypeError(f"{fn}: {name} must be real numbers, got dtype {arr.dtype}")
    if not is_traced(arr) and not isinstance(arr, jax.Array):
        # host input is cast on the host and transferred: a device-side cast is a program per input shape
        dtype = arr.dtype if jnp.issubdtype(arr.dtype, jnp.floating) else default_float_dtype()
        return to_device(arr, dtype), names
    if not jnp.issubdtype(arr.dtype, jnp.floating):
        arr = jnp.asarray(arr).astype(default_float_dtype())
    return jnp.asarray(arr), names


def _reshaped(x, shape):
    """``x.reshape(shape)``, done on the host for a concrete array (an eager reshape is a program per shape)."""
    if is_traced(x):
        return x.reshape(shape)
    return jax.device_put(np.asarray(x).reshape(shape))


def _is_paths(x) -> bool:
    """A `SamplePaths` (duck-typed: ``_simulate`` imports this module)."""
    return type(x).__name__ == "SamplePaths" and hasattr(x, "xs") and hasattr(x, "ts")


def _host(x):
    return None if is_traced(x) else np.asarray(x)


def as_sigma(sigma: Any, dtype, fn: str, *, allow_none: bool = False):
    """A positive finite scalar ``sigma`` of ``dtype`` (host check when concrete); ``None`` passes through when
    ``allow_none`` (the estimators then estimate it from the data)."""
    accepted = "a positive number or None (estimate it from the data)" if allow_none else "a positive number"
    if sigma is None:
        if allow_none:
            return None
        raise TypeError(f"{fn}: sigma must be {accepted}, got sigma=None")
    if isinstance(sigma, str | bytes) or isinstance(sigma, bool | np.bool_):
        raise TypeError(f"{fn}: sigma must be {accepted} (the diffusion scale), got sigma={sigma!r}")
    if not is_traced(sigma) and not hasattr(sigma, "dtype"):
        try:
            float(sigma)
        except (TypeError, ValueError):
            raise TypeError(f"{fn}: sigma must be {accepted} (the diffusion scale), got sigma={sigma!r}") from None
    if isinstance(sigma, int | float) and not (np.isfinite(sigma) and sigma > 0):
        raise ValueError(f"{fn}: sigma must be a positive number (the diffusion scale), got {sigma=}")
    sig = jnp.asarray(sigma, dtype)
    if sig.shape != ():
        raise ValueError(f"{fn}: sigma must be a scalar (isotropic noise), got shape {sig.shape}")
    return check_values(sig, lambda xp, v: ~(xp.isfinite(v) & (v > 0)),
                        f"{fn}: sigma must be a positive number (the diffusion scale), got a non-positive or "
                        "non-finite value")


def _check_finite(obs, fn: str, names):
    host = _host(obs)
    msg = f"{fn}: observations contain NaN or inf; drop or interpolate those rows first"
    if host is not None and not np.all(np.isfinite(host)):
        where = tuple(int(i) for i in np.argwhere(~np.isfinite(host))[0])
        msg = f"{fn}: observations contain NaN or inf (first at index {where}); drop or interpolate those rows first"
    return check_values(obs, lambda xp, v: ~xp.isfinite(v), msg)


def _check_not_constant(obs, fn: str, names):
    d = obs.shape[-1]
    msg = (f"{fn}: a coordinate of the observations is constant, so no diffusion with sigma > 0 produced it and "
           "the drift is undefined there; drop that column or check the data")
    host = _host(obs)
    bad = lambda xp, v: xp.max(v.reshape(-1, d), axis=0) == xp.min(v.reshape(-1, d), axis=0)
    if host is not None:
        const = np.flatnonzero(bad(np, host))
        if const.size:
            k = int(const[0])
            label = f"column {names[k]!r}" if names else f"coordinate {k}"
            value = host.reshape(-1, d)[0, k]
            msg = (f"{fn}: observations {label} is constant (every value {value:.4g}), so no diffusion with "
                   "sigma > 0 produced it and the drift is undefined there; drop that column or check the data")
    return check_values(obs, bad, msg)


def as_states(observations: Any, *, fn: str, min_points: int = 2):
    """States of shape ``(..., d)`` from any accepted input, checked finite and non-constant; and column names."""
    if _is_paths(observations):
        observations = observations.xs
    pts, names = _to_array(observations, "observations", fn)
    if pts.ndim < 1 or pts.ndim == 1 and pts.shape[0] < min_points:
        raise ValueError(f"{fn}: observations must have shape (n, d) or (n_traj, n_obs, d), got shape {pts.shape}")
    if pts.ndim == 1:
        pts = _reshaped(pts, pts.shape + (1,))  # a 1-D series is n observations of one coordinate
    if int(np.prod(pts.shape[:-1])) < min_points:
        raise ValueError(f"{fn}: need at least {min_points} states, got observations of shape {pts.shape}")
    pts = _check_finite(pts, fn, names)
    pts = _check_not_constant(pts, fn, names)
    return pts, names


def _as_times(ts: Any, n_traj: int, n_obs: int, dtype, fn: str):
    if is_series(ts) or (hasattr(ts, "to_numpy") and not is_dataframe(ts)):
        ts = ts.to_numpy()
    if not is_traced(ts):
        host = np.asarray(ts)
        if np.issubdtype(host.dtype, np.datetime64) or np.issubdtype(host.dtype, np.timedelta64):
            raise TypeError(
                f"{fn}: ts has dtype {host.dtype}; pass elapsed times as numbers in the unit you want the drift in, "
                "e.g. (ts - ts[0]) / np.timedelta64(1, 's')"
            )
        if host.dtype == object:
            raise TypeError(f"{fn}: ts must be numeric times, got dtype object")
    ts = jnp.asarray(ts) if is_traced(ts) else np.asarray(ts)
    if ts.shape not in ((n_obs,), (n_traj, n_obs)):
        raise ValueError(
            f"{fn}: ts must have shape (n_obs,) = ({n_obs},) or (n_traj, n_obs) = ({n_traj}, {n_obs}) to match the "
            f"observations, got shape {ts.shape}"
        )
    ts = ts.astype(dtype) if is_traced(ts) else to_device(ts, dtype)
    host = _host(ts)
    msg = f"{fn}: ts must be finite and strictly increasing along each trajectory; sort the observations by time"
    if host is not None:
        steps = np.diff(host, axis=-1)
        bad = np.argwhere(~(steps > 0) | ~np.isfinite(steps))
        if bad.size:
            j = tuple(int(i) for i in bad[0])
            k = j[-1]
            lead = j[:-1]
            msg = (f"{fn}: ts must be strictly increasing along each trajectory, but ts{list(lead + (k + 1,))} = "
                   f"{host[lead + (k + 1,)]:.6g} follows ts{list(lead + (k,))} = {host[lead + (k,)]:.6g}; sort the "
                   "observations by time and drop repeated times")
    return check_values(ts, lambda xp, v: ~(xp.diff(v, axis=-1) > 0), msg)


def as_observations(observations: Any, ts: Any, sigma: Any, *, fn: str, allow_none: bool = False):
    """``(obs (n_traj, n_obs, d), ts (n_obs,) or (n_traj, n_obs), sigma (), names)`` for the path estimators
    (``sigma`` ``None`` when ``allow_none`` and not given)."""
    if _is_paths(observations):
        if ts is None:
            ts = observations.ts
        observations = observations.xs
    obs, names = _to_array(observations, "observations", fn)
    if obs.ndim == 1:
        obs = _reshaped(obs, obs.shape + (1,))  # one coordinate observed n_obs times
    if obs.ndim == 2:
        obs = _reshaped(obs, (1,) + obs.shape)
    if obs.ndim != 3:
        raise ValueError(f"{fn}: observations must have shape (n_obs, d) or (n_traj, n_obs, d), got shape {obs.shape}")
    if obs.shape[1] < 2:
        raise ValueError(f"{fn}: need at least two observations per trajectory, got shape {obs.shape}")
    if ts is None:
        raise ValueError(f"{fn}: ts is None; pass the observation times (shape ({obs.shape[1]},)), or a "
                         "SamplePaths, which carries them")
    ts = _as_times(ts, obs.shape[0], obs.shape[1], obs.dtype, fn)
    sig = as_sigma(sigma, obs.dtype, fn, allow_none=allow_none)
    obs = _check_finite(obs, fn, names)
    obs = _check_not_constant(obs, fn, names)
    return obs, ts, sig, names


# --------------------------------------------------------------------------- settings and plain arrays


def check_count(value: Any, name: str, fn: str, low: int = 1) -> int:
    """``value`` as a Python ``int >= low`` (NumPy integers accepted): `icmlx._checks.check_int`."""
    return check_int(value, name, where=fn, minimum=low)


def check_scale(value: Any, name: str, fn: str, *, allow_zero: bool = False, allow_none: bool = False):
    """A finite positive (or non-negative) real number: `icmlx._checks.check_number`."""
    if value is None and allow_none:
        return None
    return check_number(value, name, where=fn, minimum=0, open_minimum=not allow_zero)


def check_real(value: Any, name: str, fn: str):
    """A concrete ``value`` must be finite real numbers (a scalar or an array-like); a traced one passes."""
    if not is_traced(value):
        check_number(np.asarray(value) if isinstance(value, list | tuple) else value, name, where=fn,
                     allow_array=True)
    return value


def as_real(x: Any, name: str, fn: str, dtype=None):
    """A floating JAX array from an array-like (integers cast to ``dtype`` or the default float); complex and
    boolean input is a ``TypeError`` naming ``name``."""
    if is_dataframe(x):
        x = x.to_numpy()
    if not is_traced(x) and not hasattr(x, "dtype"):
        x = np.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.complexfloating) or jnp.issubdtype(x.dtype, jnp.bool_) or not jnp.issubdtype(
            x.dtype, jnp.number):
        raise TypeError(f"{fn}: {name} must be real numbers, got dtype {x.dtype}")
    x = jnp.asarray(x)
    if dtype is not None:
        return x.astype(dtype)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(default_float_dtype())
    return x


def check_finite(x: Any, name: str, fn: str):
    """``x`` unchanged; a ``ValueError`` (host) or ``eqx.error_if`` (traced) when it has NaN/inf entries."""
    return check_values(x, lambda xp, v: ~xp.isfinite(v),
                        f"{fn}: {name} contains NaN or inf; pass finite values")


def check_last_axis(x, d: int, name: str, fn: str):
    """A ``ValueError`` unless ``x`` has shape ``(..., d)``."""
    if jnp.ndim(x) == 0 or jnp.shape(x)[-1] != d:
        raise ValueError(f"{fn}: {name} must have shape (..., d) with d = {d}, got shape {jnp.shape(x)}")


# --------------------------------------------------------------------------- ragged data and intervals


def is_ragged(observations: Any) -> bool:
    """Whether ``observations`` is a list of trajectories (arrays or DataFrames ``(n_i, d)``) of unequal lengths."""
    if not isinstance(observations, list | tuple) or not observations:
        return False
    lengths = [np.shape(v)[0] if (is_dataframe(v) or np.ndim(v) >= 2) else None for v in observations]
    return all(n is not None for n in lengths) and len(set(lengths)) > 1


def as_trajectories(observations: Any, ts: Any, *, fn: str):
    """``([(obs (n_i, d), ts (n_i,)), ...], names)``: each trajectory checked as in `as_observations`.

    Ragged input is a list of trajectories with its own list of time grids; regular input (an array, a list of
    equal-length trajectories, a `SamplePaths`) gives one pair per trajectory.
    """
    if not is_ragged(observations):
        obs, t, _, names = as_observations(observations, ts, None, fn=fn, allow_none=True)
        if t.ndim == 1:
            return [(obs[i], t) for i in range(obs.shape[0])], names
        return [(obs[i], t[i]) for i in range(obs.shape[0])], names
    lengths = [np.shape(v)[0] for v in observations]
    if not isinstance(ts, list | tuple) or len(ts) != len(observations):
        got = f"a list of {len(ts)}" if isinstance(ts, list | tuple) else f"{type(ts).__name__}"
        raise ValueError(f"{fn}: ragged observations ({len(lengths)} trajectories of lengths {lengths}) need ts as a "
                         f"list of {len(lengths)} time grids, one per trajectory, got {got}")
    out, names, d = [], None, None
    for i, (o, t) in enumerate(zip(observations, ts, strict=True)):
        obs, tt, _, nm = as_observations(o, t, None, fn=f"{fn} (trajectory {i})", allow_none=True)
        if obs.shape[0] != 1:
            raise ValueError(f"{fn}: trajectory {i} of the ragged observations must have shape (n_obs, d), got "
                             f"shape {obs.shape[1:] if obs.shape[0] == 1 else obs.shape}")
        if d is not None and obs.shape[-1] != d:
            raise ValueError(f"{fn}: trajectory {i} has d = {obs.shape[-1]} coordinates, trajectory 0 has d = {d}")
        d = obs.shape[-1]
        if i and nm != names:
            raise ValueError(f"{fn}: the DataFrames in observations have different columns ({names} and {nm} in "
                             f"trajectory {i}); give every trajectory the same columns in the same order")
        names = nm
        out.append((obs[0], tt.reshape(-1)))
    return out, names


def interval_data(observations: Any, ts: Any, *, fn: str):
    """The intervals of regular or ragged trajectories, flattened in trajectory order.

    Returns ``(states (N, d), increments (N, d), dts (N,), follows (N,), names, n_states)``: ``follows[k]`` says
    that interval ``k + 1`` continues interval ``k`` in the same trajectory (for lag-1 statistics); it depends on
    the lengths only, so it is a NumPy array even for traced observations.
    """
    if not is_ragged(observations):
        obs, t, _, names = as_observations(observations, ts, None, fn=fn, allow_none=True)
        n_traj, n_obs, d = obs.shape
        follows = np.broadcast_to(np.arange(n_obs - 1) < n_obs - 2, (n_traj, n_obs - 1)).reshape(-1)
        xp = jnp if is_traced((obs, t)) else np
        o, tt = xp.asarray(obs), xp.asarray(t)
        dts = xp.broadcast_to(xp.diff(tt, axis=-1), (n_traj, n_obs - 1)).reshape(-1)
        states, incs = o[:, :-1].reshape(-1, d), (o[:, 1:] - o[:, :-1]).reshape(-1, d)
        out = (states, incs, dts)
        if xp is np:
            out = tuple(jax.device_put(v) for v in out)
        return (*out, np.ascontiguousarray(follows), names, n_traj * n_obs)
    trajs, names = as_trajectories(observations, ts, fn=fn)
    if any(is_traced(v) for pair in trajs for v in pair):
        raise TypeError(f"{fn}: ragged observations must be NumPy or JAX arrays, got a traced value (a list of "
                        "trajectories of different lengths cannot be traced by jit); pad them yourself or call "
                        "outside jit")
    host = [(np.asarray(o), np.asarray(t)) for o, t in trajs]
    states = np.concatenate([o[:-1] for o, _ in host])
    incs = np.concatenate([np.diff(o, axis=0) for o, _ in host])
    dts = np.concatenate([np.diff(t) for _, t in host])
    follows = np.concatenate([np.arange(len(t) - 1) < len(t) - 2 for _, t in host])
    n_states = sum(len(t) for _, t in host)
    return (*(jax.device_put(v) for v in (states, incs, dts)), follows, names, n_states)
