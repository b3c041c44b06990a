"""Checks of `icmlx.optim.scale_by_dash`'s settings: each names the argument and what it must be."""

from __future__ import annotations

import functools
import inspect

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_int, check_number
from ._grafting import GRAFTINGS as _GRAFTINGS
from ._inverse_root import _check_chunk_size
from ._warn import warn_user

#: ``statistics_dtype`` choices: None (the factor dtype) or one of these.
_STATISTICS_DTYPES = ("float32", "bfloat16")
_ONE_DIM = ("adam", "shampoo")
_NONFINITE = ("skip", "raise", "ignore")


def _is_number(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def _concrete(x) -> np.ndarray | None:
    """``x`` as a float64 NumPy array when it is a concrete number or array, else ``None`` (traced, callable)."""
    if _is_number(x):
        return np.asarray(float(x))
    if isinstance(x, (np.ndarray, jax.Array)) and not isinstance(x, jax.core.Tracer):
        if np.issubdtype(np.asarray(x).dtype, np.number):
            return np.asarray(x, dtype=np.float64)
    return None


def _check_numeric(name: str, value, *, schedule: bool = False) -> None:
    """``value`` must be a number or a numeric array (or, with ``schedule``, a callable): else a TypeError."""
    if schedule and callable(value):
        return
    if _is_number(value) or isinstance(value, jax.core.Tracer):
        return
    if isinstance(value, (np.ndarray, jax.Array, np.generic)) and np.issubdtype(value.dtype, np.number):
        return
    what = "a number, an array or a schedule (callable)" if schedule else "a number or an array"
    raise TypeError(f"{name} must be {what}, got {name}={value!r} of type {type(value).__name__}")


def _check_unit(name: str, value, *, closed: bool = False) -> None:
    v = _concrete(value)
    if v is not None:
        ok = np.all((0.0 <= v) & ((v <= 1.0) if closed else (v < 1.0)))
        if not ok:
            raise ValueError(f"{name} must be in [0, 1{']' if closed else ')'}, got {name}={value!r}")


def _check_nonnegative(name: str, value, hint: str = "") -> None:
    """Concrete ``value`` must be finite and ``>= 0`` (NaN included in the failure); traced values pass."""
    v = _concrete(value)
    if v is not None and not np.all(np.isfinite(v) & (v >= 0)):
        raise ValueError(f"{name} must be finite and >= 0, got {name}={value!r}{hint}")


def _check_static(fn_name: str, static_name: str = "DASH_STATIC_ARGS", **values) -> None:
    """The structural settings must be Python values; ``optax.inject_hyperparams`` turns numbers into arrays."""
    for name, value in values.items():
        if isinstance(value, (jax.Array, np.ndarray)):
            raise ValueError(
                f"{fn_name}: {name} arrived as an array (optax.inject_hyperparams injects every number), but it "
                f"is structural (block layout, refresh steps) and must be a Python value.\nMark the structural "
                f"arguments static: "
                f"optax.inject_hyperparams({fn_name}, static_args={static_name})(...)"
            )


def _check_settings(block_size, b1, b2, factor_decay, eps, momentum, grafting, one_dim, nonfinite,
                    precondition_frequency, start_preconditioning_step, root_epsilon, root_chunk_size, mesh,
                    mesh_axis, max_precondition_dim=None, merge_small_dims=True) -> None:
    check_int(block_size, "block_size", minimum=1)
    for name, val in (("b1", b1), ("b2", b2), ("factor_decay", factor_decay), ("eps", eps),
                      ("momentum", momentum)):
        _check_numeric(name, val)
    for name, val in (("b1", b1), ("b2", b2)):
        _check_unit(name, val)
    _check_unit("factor_decay", factor_decay, closed=True)
    v = _concrete(momentum)
    if v is not None and not np.all((0.0 <= v) & (v < 1.0)):
        raise ValueError(f"momentum must be in [0, 1), got {momentum=}")
    _check_nonnegative("eps", eps)
    if isinstance(root_epsilon, (jax.Array, np.ndarray)):
        raise ValueError(f"root_epsilon must be a finite Python float >= 0, got {root_epsilon=}")
    check_number(root_epsilon, "root_epsilon", minimum=0)
    if grafting not in _GRAFTINGS:
        raise ValueError(f"grafting must be one of {_GRAFTINGS}, got {grafting=}")
    if max_precondition_dim is not None:
        check_int(max_precondition_dim, "max_precondition_dim", minimum=1)
    if not isinstance(merge_small_dims, (bool, np.bool_)):
        raise ValueError(f"merge_small_dims must be True or False, got {merge_small_dims=}")
    if one_dim not in _ONE_DIM:
        raise ValueError(f"one_dim must be one of {_ONE_DIM}, got {one_dim=}")
    if nonfinite not in _NONFINITE:
        raise ValueError(f"nonfinite must be one of {_NONFINITE}, got {nonfinite=}")
    check_int(precondition_frequency, "precondition_frequency", minimum=1)
    check_int(start_preconditioning_step, "start_preconditioning_step", minimum=1)
    _check_chunk_size("root_chunk_size", root_chunk_size)
    if (mesh is None) != (mesh_axis is None):
        raise ValueError(f"mesh and mesh_axis must be given together, got {mesh=}, {mesh_axis=}")
    if mesh is not None and mesh_axis not in mesh.axis_names:
        raise ValueError(f"mesh_axis {mesh_axis!r} is not an axis of the mesh {mesh.axis_names}")




def _statistics_dtype(statistics_dtype, factor_decay, fn_name: str):
    """The storage dtype of the Kronecker factors, or ``None`` for the factor dtype (float32/float64)."""
    if statistics_dtype is None:
        return None
    try:
        dt = np.dtype(jnp.dtype(statistics_dtype))
    except TypeError:
        dt = None
    if dt is None or dt.name not in _STATISTICS_DTYPES:
        raise ValueError(f"statistics_dtype must be None or one of {_STATISTICS_DTYPES}, got {statistics_dtype=}")
    if dt.name == "bfloat16" and _is_number(factor_decay) and factor_decay >= 1.0:
        warn_user(
            f"{fn_name}: statistics_dtype=bfloat16 with factor_decay=1 (a plain sum): a bfloat16 sum stops growing "
            "once one step adds less than ~1/256 of it.\nUse factor_decay < 1 (an EMA) or statistics_dtype=None."
        )
    return jnp.dtype(dt)


def static_args_checked(names: tuple[str, ...], static_name: str):
    """A decorator checking that the structural arguments ``names`` are Python values before the call.

    It runs before the function's annotations are checked, so that ``optax.inject_hyperparams`` without
    ``static_args`` gets the message that says what to do (``static_args=<static_name>``).
    """

    def decorate(fn):
        params = list(inspect.signature(fn).parameters)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            given = {**dict(zip(params, args)), **kwargs}
            _check_static(fn.__name__, static_name, **{k: given[k] for k in names if k in given})
            return fn(*args, **kwargs)

        return wrapper

    return decorate


def _override_roots(override, solver) -> tuple[int, int, int]:
    """``inverse_exponent_override`` -> the roots ``p`` (matrix left, matrix right, vector); 0 skips a side.

    Keys are the order of the block's view (2: matrix blocks, dims 0 = rows/left and 1 = columns/right; 1: the
    vector blocks of ``one_dim="shampoo"``, dim 0), values an exponent for every dim of that order or a
    ``{dim: exponent}`` dict; the exponent ``e`` preconditions that side by ``F^{-e}``, so ``1/e`` must be a
    positive integer, or ``e = 0`` for no preconditioner on that side.
    """
    roots = {2: [4, 4], 1: [2]}
    if override is None:
        return 4, 4, 2
    if not isinstance(override, dict):
        raise TypeError(f"inverse_exponent_override must be a dict {{order: exponent or {{dim: exponent}}}}, got "
                        f"inverse_exponent_override={override!r}")
    for order, spec in override.items():
        if order not in roots:
            raise ValueError(f"inverse_exponent_override: keys are the order of a block's view, 1 (vectors) or 2 "
                             f"(matrices), got order={order!r}")
        per_dim = spec if isinstance(spec, dict) else dict.fromkeys(range(order), spec)
        for dim, e in per_dim.items():
            if dim not in range(order):
                raise ValueError(f"inverse_exponent_override[{order}]: dims of an order-{order} block are "
                                 f"{tuple(range(order))}, got dim={dim!r}")
            if not _is_number(e) or not np.isfinite(e) or e < 0:
                raise ValueError(f"inverse_exponent_override[{order}][{dim}] must be a finite exponent >= 0, got {e!r}")
            p = 0 if e == 0 else int(round(1.0 / e))
            if e != 0 and (p < 1 or abs(p * e - 1.0) > 1e-9):
                raise ValueError(f"inverse_exponent_override[{order}][{dim}]: 1/exponent must be a positive integer "
                                 f"(the inverse root p), got exponent {e!r}")
            allowed = type(solver).supported_roots
            if p and allowed is not None and p not in allowed:
                raise ValueError(f"inverse_exponent_override[{order}][{dim}] = {e!r} needs the root p = {p}, which "
                                 f"{type(solver).__name__} does not support (p in {allowed}); use CoupledNewton() or "
                                 "Eigh()")
            roots[order][dim] = p
    return roots[2][0], roots[2][1], roots[1][0]
