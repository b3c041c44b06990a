"""One way to accept a strategy object or its string shorthand, shared by every routine that has modes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["as_strategy"]


def as_strategy(value: Any, base: type, shorthands: Mapping[str, Any], name: str) -> Any:
    """``value`` if it is an instance of ``base``; the default object of a shorthand string; else a clear error.

    Args:
      value: what the user passed.
      base: the strategies' abstract base class.
      shorthands: string -> class (or zero-argument factory) of the default object.
      name: the argument's name, for the message.

    Raises:
      ValueError: naming the argument, the value, the accepted shorthands and the classes to use instead.
    """
    if isinstance(value, base):
        return value
    if isinstance(value, str) and value in shorthands:
        return shorthands[value]()
    classes = ", ".join(sorted({f"{getattr(c, '__name__', str(c))}()" for c in shorthands.values()}))
    raise ValueError(
        f"{name} must be a strategy object ({classes}: any {base.__name__}) or one of the shorthands "
        f"{tuple(shorthands)}, got {name}={value!r}"
    )
