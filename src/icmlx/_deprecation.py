"""Deprecated aliases kept for one release: renamed keyword arguments and renamed public names."""

from __future__ import annotations

import functools
import sys
import typing
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["deprecated_attribute", "deprecated_names", "renamed_kwargs", "warn_renamed"]


@typing.no_type_check  # keep the jaxtyping test hook's frames out of the stacklevel count
def warn_renamed(old: str, new: str, where: str, *, stacklevel: int = 3) -> None:
    """Emit the one `DeprecationWarning` text used across icmlx for a rename."""
    warnings.warn(
        f"{where}: {old!r} is deprecated and will be removed in the next release; use {new!r} instead.",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def renamed_kwargs(**old_to_new: str) -> Callable[[Callable], Callable]:
    """Decorator: accept old keyword names for one release, warn, and pass them on under the new name.

    Passing both the old and the new name is a `TypeError`. The wrapped function's signature (as shown by
    `inspect.signature`) is the new one.
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


class deprecated_attribute:
    """A read-only class attribute that serves a renamed field under its old name for one release, with a warning.

    Use it in the class body, ``n_tests = deprecated_attribute("num_tests")``; reading ``obj.n_tests`` warns and
    returns ``obj.num_tests``.
    """

    def __init__(self, new: str):
        self.new = new
        self.old = "?"
        self.owner = "?"

    def __set_name__(self, owner: type, name: str) -> None:
        self.old = name
        self.owner = owner.__name__

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        # Point the warning at the user's line: skip equinox's attribute-access frames (and the jaxtyping test
        # hook's wrapper) between it and here.
        skipped, frame = 0, sys._getframe(1)
        while frame is not None and frame.f_globals.get("__name__", "").startswith(("equinox", "jaxtyping")):
            skipped, frame = skipped + 1, frame.f_back
        warn_renamed(self.old, self.new, type(obj).__name__, stacklevel=3 + skipped)
        return getattr(obj, self.new)
