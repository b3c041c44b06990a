"""Module attributes loaded on first use (PEP 562), so importing a package does not import every private module."""

import importlib
from collections.abc import Callable, Collection, Mapping
from typing import Any


def lazy_attributes(module_name: str, namespace: dict[str, Any], where: Mapping[str, str],
                    fallback: Callable[[str], Any] | None = None,
                    submodules: Collection[str] = ()) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``name`` from its private module ``where[name]`` on first use.

    ``where`` maps a public name to the module that defines it, relative to ``module_name`` (``"_fdr"``, or
    ``".._results"`` for the parent package's). The value is stored in ``namespace`` (the module's ``globals()``),
    so later lookups are plain attribute reads. A name in ``submodules`` is a public submodule (``fem``), imported
    and returned itself. Names in neither go to ``fallback`` (e.g. a computed
    attribute such as ``__version__``), else raise ``AttributeError``.
    """

    def __getattr__(name: str) -> Any:
        if name in where:
            target = where[name]
            value = getattr(importlib.import_module(target if target.startswith(".") else f".{target}", module_name),
                            name)
        elif name in submodules:
            value = importlib.import_module(f".{name}", module_name)
        elif fallback is not None:
            return fallback(name)
        else:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    return __getattr__
