"""Module attributes loaded on first use (PEP 562), so importing a package does not import every private module."""

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(module_name: str, namespace: dict[str, Any], where: Mapping[str, str],
                    fallback: Callable[[str], Any] | None = None) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``name`` from its private module ``where[name]`` on first use.

    ``where`` maps a public name to the module that defines it, relative to ``module_name`` (``"_fdr"``). The
    value is stored in ``namespace`` (the module's ``globals()``), so later lookups are plain attribute reads.
    Names not in ``where`` go to ``fallback`` (e.g. a :func:`~icmlx._deprecation.deprecated_names` hook), else
    raise ``AttributeError``.
    """

    def __getattr__(name: str) -> Any:
        if name in where:
            value = getattr(importlib.import_module(f".{where[name]}", module_name), name)
            namespace[name] = value
            return value
        if fallback is not None:
            return fallback(name)
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return __getattr__
