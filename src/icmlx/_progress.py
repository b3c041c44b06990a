"""Progress display for operations that can take more than a few seconds (the ``progress=`` argument).

Every long-running public entry point takes ``progress: bool | None = None``:

- ``True`` shows progress, ``False`` hides it.
- ``None`` (the default) decides by where it runs. Loops driven from Python (PC's levels, training stages, a
  sweep over grid points) show a bar when standard error is an interactive terminal and hide it in scripts, CI
  and notebooks' captured output. Loops inside one compiled program (``lax.while_loop``) report only when asked
  (``progress=True``), because reporting needs a host callback and a program holding one is not stored in the
  persistent compilation cache, so every new process would compile it again.
- ``ICMLX_PROGRESS=0`` / ``1`` in the environment overrides the automatic choice (not an explicit True/False).

The bar is written to ``sys.stderr`` with no dependency: one line rewritten in place on a terminal, else at most
one line per ``min_interval`` seconds.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

__all__ = ["ProgressBar", "resolve_progress", "in_program_reporter"]


def _interactive() -> bool:
    if os.environ.get("CI"):
        return False
    stream = sys.stderr
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError):
        return False


def resolve_progress(progress: bool | None, *, in_program: bool = False) -> bool:
    """Turn a ``progress=`` argument into on/off (see the module docstring for the rule)."""
    if progress is not None:
        if not isinstance(progress, (bool, np.bool_)):
            raise TypeError(f"progress must be True, False or None (automatic), got {progress!r}")
        return bool(progress)
    env = os.environ.get("ICMLX_PROGRESS")
    if env is not None and env.strip() != "":
        return env.strip().lower() not in ("0", "false", "no", "off")
    if in_program:
        return False
    return _interactive()


def _format_value(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.4g}"
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return _format_value(v.item())
    return str(v)


class ProgressBar:
    """A minimal progress bar on ``sys.stderr``; does nothing when ``enabled`` is false.

    Use as a context manager::

        with ProgressBar("pc", total=num_levels, enabled=resolve_progress(progress), unit="level") as bar:
            for level in ...:
                ...
                bar.update(1, tests=num_tests)
    """

    def __init__(
        self,
        desc: str,
        total: int | None = None,
        *,
        enabled: bool = True,
        unit: str = "step",
        min_interval: float = 0.1,
        stream=None,
    ):
        self.desc = desc
        self.total = total
        self.enabled = bool(enabled)
        self.unit = unit
        self.count = 0
        self.info: dict[str, Any] = {}
        self._stream = stream
        self._min_interval = min_interval
        self._start = time.perf_counter()
        self._last = -float("inf")
        self._tty = False
        if self.enabled:
            s = self.stream
            try:
                self._tty = bool(s.isatty())
            except (AttributeError, ValueError):
                self._tty = False

    @property
    def stream(self):
        return self._stream if self._stream is not None else sys.stderr

    def _line(self) -> str:
        elapsed = time.perf_counter() - self._start
        if self.total:
            frac = min(self.count / self.total, 1.0)
            width = 20
            filled = int(round(frac * width))
            head = f"{self.desc}: {100 * frac:3.0f}%|{'#' * filled}{'.' * (width - filled)}| {self.count}/{self.total}"
        else:
            head = f"{self.desc}: {self.count} {self.unit}s"
        tail = ", ".join(f"{k}={_format_value(v)}" for k, v in self.info.items())
        return f"{head} [{elapsed:.1f}s{', ' + tail if tail else ''}]"

    def _write(self, force: bool = False, end: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self._last < self._min_interval:
            return
        self._last = now
        line = self._line()
        if self._tty:
            self.stream.write("\r" + line + ("\n" if end else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def update(self, n: int = 1, **info: Any) -> None:
        """Advance by ``n`` and show ``info`` (names and scalar values) after the bar."""
        if not self.enabled:
            return
        self.count += n
        self.info.update(info)
        self._write(force=self.total is not None and self.count >= self.total)

    def set(self, **info: Any) -> None:
        """Change the values shown after the bar without advancing."""
        if not self.enabled:
            return
        self.info.update(info)
        self._write()

    def close(self) -> None:
        if not self.enabled:
            return
        self._write(force=True, end=True)
        self.enabled = False

    def __enter__(self) -> ProgressBar:
        if self.enabled:
            self._write(force=True)
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def in_program_reporter(desc: str, *, every: int = 1, total: int | None = None) -> Callable[..., None]:
    """A ``report(step, **scalars)`` to call inside traced code when progress is on (one line per ``every`` steps).

    Call it only behind a static ``if progress:`` so that the default program holds no host callback.
    """

    def _host(step, values):
        step = int(step)
        if step % every:
            return
        head = f"{desc}: step {step}" + (f"/{total}" if total else "")
        tail = ", ".join(f"{k}={_format_value(np.asarray(v))}" for k, v in values.items())
        sys.stderr.write(head + (f" [{tail}]" if tail else "") + "\n")
        sys.stderr.flush()

    def report(step, **values):
        jax.debug.callback(_host, step, values)

    return report
