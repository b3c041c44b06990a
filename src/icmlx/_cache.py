"""A persistent XLA compilation cache, on by default, so compilation is paid once per machine, not per process.

A user's first script imports icmlx, makes one call and exits; most of its time is XLA compiling programs that the
previous run already compiled. JAX can keep compiled programs on disk (``jax_compilation_cache_dir``); icmlx turns
that on at import unless the user has made their own choice.

Policy, checked in this order when ``icmlx`` is imported:

1. ``ICMLX_CACHE=0`` (or ``off``/``false``/``no``) in the environment: icmlx leaves JAX's cache settings alone.
2. The user already chose a cache directory (``jax.config.jax_compilation_cache_dir`` set, or the
   ``JAX_COMPILATION_CACHE_DIR`` environment variable): icmlx leaves it alone.
3. Otherwise the directory is ``$ICMLX_CACHE_DIR``, else ``$XDG_CACHE_HOME/icmlx/jax``, else
   ``~/.cache/icmlx/jax``. Every program is stored there, however quickly it compiled
   (``ICMLX_CACHE_MIN_COMPILE_SECS``, default 0; JAX's own default keeps only programs that took a second or more):
   icmlx's procedures run many small programs, and recompiling those is what a warm process would otherwise still
   pay. JAX's minimum is changed only when the user has not changed it.

`compilation_cache_dir` tells which directory is in use; `enable_compilation_cache` turns it on by
hand (for instance after ``ICMLX_CACHE=0``). Delete the directory to empty it.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["compilation_cache_dir", "enable_compilation_cache"]

_OFF = {"0", "off", "false", "no"}
_JAX_DEFAULT_MIN_SECS = 1.0
_state: dict[str, str | None] = {"dir": None}


def _default_dir() -> Path:
    explicit = os.environ.get("ICMLX_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "icmlx" / "jax"


def enable_compilation_cache(
    path: str | os.PathLike | None = None, *, min_compile_secs: float | int | None = None
) -> str:
    """Turn on JAX's persistent compilation cache in ``path`` (default: the icmlx cache directory).

    Args:
      path: the cache directory; created if missing.
      min_compile_secs: store only programs that took at least this long to compile (default
        ``$ICMLX_CACHE_MIN_COMPILE_SECS`` or 0: every program).

    Returns:
      The directory now in use.
    """
    import jax

    directory = Path(path).expanduser() if path is not None else _default_dir()
    directory.mkdir(parents=True, exist_ok=True)
    if min_compile_secs is None:
        min_compile_secs = float(os.environ.get("ICMLX_CACHE_MIN_COMPILE_SECS", "0"))
    if min_compile_secs < 0:
        raise ValueError(f"min_compile_secs must be >= 0, got {min_compile_secs=}")
    jax.config.update("jax_compilation_cache_dir", str(directory))
    if jax.config.jax_persistent_cache_min_compile_time_secs == _JAX_DEFAULT_MIN_SECS:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", min_compile_secs)
    _state["dir"] = str(directory)
    return str(directory)


def compilation_cache_dir() -> str | None:
    """The persistent compilation cache directory JAX uses now, or ``None`` when it is off."""
    import jax

    return jax.config.jax_compilation_cache_dir


def _enable_by_default() -> None:
    """Called once at ``import icmlx``: apply the policy in the module docstring; warns instead of raising."""
    if os.environ.get("ICMLX_CACHE", "").strip().lower() in _OFF:
        return
    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return
    import jax

    if jax.config.jax_compilation_cache_dir:
        return
    try:
        enable_compilation_cache()
    except (OSError, ValueError) as err:  # an unwritable home directory must not break the import
        import warnings

        warnings.warn(
            f"icmlx: persistent compilation cache not enabled ({err}); set ICMLX_CACHE_DIR to a writable "
            "directory, or ICMLX_CACHE=0 to silence this.",
            RuntimeWarning,
            stacklevel=3,
        )
