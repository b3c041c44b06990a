"""Readable ``__repr__`` for result records: statuses by name, scalars by value, arrays by dtype and shape.

Equinox's default repr prints every array as ``f32[4]`` and a status as an opaque enumeration item; users reading
a result at a prompt want ``result=successful, num_steps=12, rel_residual=3.1e-07``.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

__all__ = ["summarise", "record_repr", "status_names"]


def status_names(enumeration) -> dict[int, str]:
    """``{code: name}`` of an equinox enumeration (the one lookup behind every status printed by name)."""
    return {int(item._value): name for name, item in enumeration._name_to_item.items()}


def _short_dtype(dtype) -> str:
    kind = np.dtype(dtype)
    table = {"f": "f", "i": "i", "u": "u", "b": "bool", "c": "c"}
    prefix = table.get(kind.kind, kind.name)
    return prefix if prefix == "bool" else f"{prefix}{kind.itemsize * 8}"


def summarise(value: Any, *, max_items: int = 6) -> str:
    """A short text for one field value."""
    # A RESULTS item (duck-typed to avoid an import cycle): its name when concrete.
    if hasattr(value, "_enumeration") and hasattr(value, "_value"):
        if isinstance(value._value, jax.core.Tracer):
            return "<traced status>"
        by_index = status_names(value._enumeration)
        codes = np.ravel(np.asarray(value._value))
        names = [by_index[int(c)] for c in codes[:max_items]]
        if np.ndim(value._value) == 0:
            return names[0]
        return f"[{', '.join(names)}{', ...' if codes.size > max_items else ''}]"
    if isinstance(value, jax.core.Tracer):
        return f"{_short_dtype(value.dtype)}{list(value.shape)}"
    if isinstance(value, (jax.Array, np.ndarray, np.generic)):
        arr = value
        if arr.ndim == 0:
            v = np.asarray(arr).item()
            return f"{v:.4g}" if isinstance(v, float) else str(v)
        if arr.size <= max_items and arr.ndim == 1:
            vals = np.asarray(arr)
            if vals.dtype.kind == "f":
                return "[" + ", ".join(f"{float(v):.4g}" for v in vals) + "]"
            return "[" + ", ".join(str(v) for v in vals.tolist()) + "]"
        return f"{_short_dtype(arr.dtype)}{list(arr.shape)}"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        inner = ", ".join(f"{k}={summarise(v, max_items=max_items)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, (tuple, list)):
        if len(value) <= max_items:
            inner = ", ".join(summarise(v, max_items=max_items) for v in value)
        else:
            inner = ", ".join(summarise(v, max_items=max_items) for v in value[:max_items]) + ", ..."
        return ("(" + inner + (",)" if len(value) == 1 else ")")) if isinstance(value, tuple) else "[" + inner + "]"
    if isinstance(value, str):
        return repr(value)
    text = repr(value)
    return text if len(text) <= 60 else f"{type(value).__name__}(...)"


def record_repr(obj: Any, fields: list[str] | tuple[str, ...] | None = None) -> str:
    """``Name(field=summary, ...)`` for ``fields`` (default: every dataclass field of ``obj``)."""
    import dataclasses

    if fields is None:
        fields = [f.name for f in dataclasses.fields(obj)]
    parts = []
    for name in fields:
        try:
            value = getattr(obj, name)
        except Exception:  # noqa: BLE001 - a repr must not raise
            continue
        parts.append(f"{name}={summarise(value)}")
    return f"{type(obj).__name__}({', '.join(parts)})"
