"""Deprecated aliases kept for one release: renamed keyword arguments and renamed public names."""

from __future__ import annotations

import functools
import typing
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["renamed_kwargs", "deprecated_names", "warn_renamed"]


def warn_renamed(old: str, new: str, where: str, *, stacklevel: int = 3) -> None:
    """Emit the one :class:`DeprecationWarning` text used across icmlx for a rename."""
    warnings.warn(
        f"{where}: {old!r} is deprecated and will be removed in the next release; use {new!r} instead.",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def renamed_kwargs(**old_to_new: str) -> Callable[[Callable], Callable]:
    """Decorator: accept old keyword names for one release, warn, and pass them on under the new name.

    Passing both the old and the new name is a :class:`TypeError`. The wrapped function's signature (as shown by
    :func:`inspect.signature`) is the new one.
    """

    def decorate(fn: Callable) -> Callable:
        # no_type_check: the jaxtyping import hook would otherwise wrap this wrapper too, and the warning's
        # stacklevel would then point into jaxtyping instead of at the caller.
        @typing.no_type_check
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in old_to_new.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{fn.__qualname__}() got both {old!r} (deprecated) and {new!r}; pass {new!r}")
                    warn_renamed(old, new, f"{fn.__qualname__}()")
                    kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)

        return wrapper

    return decorate


def deprecated_names(module_name: str, renamed: Mapping[str, tuple[str, Callable[[], Any]]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that serves renamed public names for one release, with a warning.

    ``renamed`` maps an old name to ``(new name, loader)``; ``loader()`` returns the object.
    """

    def __getattr__(name: str) -> Any:
        if name in renamed:
            new, load = renamed[name]
            warn_renamed(name, new, module_name)
            return load()
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return __getattr__
