"""icmlx: JAX-native tools from six ICML 2026 papers.

Subpackages (import them explicitly; each pulls in only what it needs):

- `icmlx.optim` — DASH (batched Shampoo) and annealed learning-rate schedules.
- `icmlx.stats` — relative-belief multiple testing and the two-groups framework.
- `icmlx.structure` — PC and the optimal poly-forest learner with CI tests.
- `icmlx.sde` — drift inference for overdamped Langevin systems from sparse paths.
- `icmlx.solvers` — G-RANS neural subspace-correction solver for sparse FEM systems.

Shared across them: `icmlx.RESULTS`, the one status enumeration (it extends ``lineax.RESULTS``), and
`icmlx.Solution`, the ``value``/``result``/``stats`` record every iterative routine returns.

On import, icmlx turns on JAX's persistent compilation cache (in ``$ICMLX_CACHE_DIR``, else
``$XDG_CACHE_HOME/icmlx/jax``, else ``~/.cache/icmlx/jax``) unless the user set their own JAX cache directory;
``ICMLX_CACHE=0`` opts out. Programs compiled once are then loaded from disk by every later process.
"""

from typing import TYPE_CHECKING

from ._cache import _enable_by_default
from ._cache import compilation_cache_dir as compilation_cache_dir
from ._cache import enable_compilation_cache as enable_compilation_cache
from ._lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:  # imported on first use (below): a subpackage that does not need lineax does not load it
    __version__: str
    from ._results import RESULTS as RESULTS
    from ._results import Solution as Solution
    from ._results import result_name as result_name

__all__ = ["RESULTS", "Solution", "compilation_cache_dir", "enable_compilation_cache", "result_name", "__version__"]

_LAZY = {"RESULTS": "_results", "Solution": "_results", "result_name": "_results"}
# icmlx._results imports lineax: it is loaded the first time one of these is used (the subpackages that need them
# import it themselves), so `import icmlx.structure` stays lighter.


def _version(name: str) -> str:
    # read from the installed metadata on first use: the distribution lookup scans sys.path, which a one-shot
    # script that never asks for the version need not pay
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib.metadata

    try:
        version = importlib.metadata.version("icmlx")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - running from a bare source tree
        version = "0.0.0+unknown"
    globals()["__version__"] = version
    return version


__getattr__ = _lazy_attributes(__name__, globals(), _LAZY, fallback=_version)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | {"__version__"})


# Compiled programs persist across processes (see icmlx._cache for the policy and the opt-out ICMLX_CACHE=0).
_enable_by_default()
