"""Shared timing and reporting helpers for icmlx benchmark scripts.

Every benchmark script:

1. checks correctness first (against the baseline or a reference) and refuses to time wrong code;
2. times the first call separately (trace + compile + run) from the steady state;
3. reports the median and spread of ``repeats`` steady-state calls, each ended by ``jax.block_until_ready``;
4. runs the named baseline in the same process and quotes the ratio;
5. prints a table and writes ``benchmarks/results/<script>.json``: one file per script, overwritten by its latest
   run (git keeps the history), with the command, versions, date and the machine in one line (cores, backend).
   A script that measures several distinct things (parts, sizes) writes each as a part of that one file.

Usage::

    from _harness import time_fn, write_results, print_table
    t = time_fn(jitted_fn, *args, repeats=20)
    print(t["compile_s"], t["median_s"])
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def _block(x: Any) -> Any:
    return jax.block_until_ready(x)


def time_fn(
    fn: Callable[..., Any],
    *args: Any,
    repeats: int = 10,
    warmup: int = 1,
    min_time_s: float = 0.0,
    is_jax: bool = True,
    **kwargs: Any,
) -> dict[str, float]:
    """Time ``fn(*args, **kwargs)``: first call apart, then ``repeats`` steady-state calls.

    Args:
      fn: the callable (usually ``jax.jit``-ed).
      repeats: number of steady-state calls whose median and spread are reported.
      warmup: extra untimed calls after the first one.
      min_time_s: keep repeating (beyond ``repeats``) until at least this much steady time is measured.
      is_jax: block on the output with ``jax.block_until_ready`` (set False for NumPy/SciPy baselines).

    Returns:
      dict with ``compile_s`` (first call: trace + compile + run), ``median_s``, ``min_s``, ``max_s``,
      ``iqr_s`` and ``repeats``.
    """
    sync = _block if is_jax else (lambda x: x)
    t0 = time.perf_counter()
    sync(fn(*args, **kwargs))
    first = time.perf_counter() - t0
    for _ in range(warmup):
        sync(fn(*args, **kwargs))
    times: list[float] = []
    total = 0.0
    while len(times) < repeats or total < min_time_s:
        t0 = time.perf_counter()
        sync(fn(*args, **kwargs))
        dt = time.perf_counter() - t0
        times.append(dt)
        total += dt
        if len(times) >= 10 * max(repeats, 1):
            break
    times.sort()
    q = statistics.quantiles(times, n=4) if len(times) >= 2 else [times[0]] * 3
    return {
        "compile_s": first,
        "median_s": statistics.median(times),
        "min_s": times[0],
        "max_s": times[-1],
        "iqr_s": q[2] - q[0],
        "repeats": len(times),
    }


def script_name(default: str = "benchmark") -> str:
    """The running benchmark script's file stem (``solvers_amg`` for ``python benchmarks/solvers_amg.py``)."""
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    if main_file and Path(main_file).resolve().parent == RESULTS_DIR.parent:
        return Path(main_file).stem
    return default


def command_line() -> str:
    """The command that reproduces this run, from the repository root."""
    args = " ".join(shlex.quote(a) for a in sys.argv[1:])
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    if main_file and Path(main_file).resolve().parent == RESULTS_DIR.parent:
        return f"python benchmarks/{Path(main_file).name}" + (f" {args}" if args else "")
    return f"python {shlex.quote(sys.argv[0])}" + (f" {args}" if args else "")


def machine_line(backend: str | None = None, device_count: int | None = None) -> str:
    """The machine in one line: architecture, cores, backend and device count."""
    backend = backend or jax.default_backend()
    device_count = jax.device_count() if device_count is None else device_count
    return f"{platform.machine()}, {os.cpu_count()} cores, {backend} backend, {device_count} device(s)"


def environment(dtype: str | None = None) -> dict[str, Any]:
    """Command, date, machine line, versions, backend, device count and dtype for the JSON record."""
    import numpy as np

    env: dict[str, Any] = {
        "command": command_line(),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "machine": machine_line(),
        "jax": jax.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()],
        "device_count": jax.device_count(),
        "x64": bool(jax.config.jax_enable_x64),
        "cpu_count": os.cpu_count(),
        "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if dtype is not None:
        env["dtype"] = dtype
    try:
        import icmlx

        env["icmlx"] = icmlx.__version__
    except Exception:  # pragma: no cover
        pass
    return env


def results_path(name: str | None = None) -> Path:
    """``benchmarks/results/<script>.json`` for the running script (``name`` only outside a benchmark script)."""
    return RESULTS_DIR / f"{script_name(name or 'benchmark')}.json"


def write_results(name: str | None = None, rows: Sequence[dict[str, Any]] = (), *, dtype: str | None = None,
                  extra: dict[str, Any] | None = None, part: str | None = None) -> Path:
    """Write the running script's ``benchmarks/results/<script>.json`` and return its path.

    The file is named after the script, never after a run: ``name`` is recorded as the run's configuration when it
    adds a suffix to the script's name (``solvers_fem_quick``), and names the file only when no benchmark script is
    running. Without ``part`` the file is replaced by this run. With ``part`` (a distinct measurement of the same
    script, e.g. ``"state"`` or a problem size) only that entry of the file's ``parts`` is replaced, each part with
    its own environment.
    """
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = results_path(name)
    script = path.stem
    record: dict[str, Any] = {"benchmark": script, "environment": environment(dtype)}
    if name and name != script and name.startswith(script + "_"):
        record["configuration"] = name[len(script) + 1:]
    record["rows"] = list(rows)
    if extra:
        record.update(extra)
    if part is not None:
        try:
            existing = json.loads(path.read_text())
        except (OSError, ValueError):
            existing = {}
        parts = existing.get("parts", {}) if isinstance(existing, dict) else {}
        parts[part] = {k: v for k, v in record.items() if k != "benchmark"}
        record = {"benchmark": script, "parts": parts}
    path.write_text(json.dumps(record, indent=2, default=float) + "\n")
    return path


def print_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None,
                title: str | None = None) -> str:
    """Print rows as an aligned text table (and return it)."""
    if not rows:
        return ""
    columns = list(columns or rows[0].keys())

    def fmt(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v)

    cells = [[fmt(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = []
    if title:
        lines.append(title)
    lines.append("  ".join(c.ljust(w) for c, w in zip(columns, widths)))
    lines.append("  ".join("-" * w for w in widths))
    lines.extend("  ".join(x.ljust(w) for x, w in zip(row, widths)) for row in cells)
    out = "\n".join(lines)
    print(out)
    return out


def save_figure(fig, path) -> None:
    """Write a result figure small: 80 dpi, as a 64-colour palette PNG (line plots need no more)."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, dpi=80, format="png")
    buf.seek(0)
    Image.open(buf).convert("RGB").quantize(colors=64).save(path, optimize=True)
