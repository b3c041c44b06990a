"""Up-front memory estimates shared by the subpackages: refuse a plan that cannot fit before allocating it."""

from __future__ import annotations

import os

__all__ = ["available_bytes", "check_memory"]


def available_bytes() -> float:
    """Memory the process can still take: ``MemAvailable`` of ``/proc/meminfo``, else the physical memory."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024.0
    except OSError:  # no /proc (macOS, Windows): fall back to the physical memory
        return _physical_bytes()
    return _physical_bytes()


def _physical_bytes() -> float:
    try:
        return float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - no way to ask: do not refuse
        return float("inf")


def check_memory(nbytes: float, what: str, advice: str) -> None:
    """Raise ``ValueError`` (not ``MemoryError``: nothing was allocated) when ``nbytes`` exceed what is free."""
    avail = available_bytes()
    if nbytes > avail:
        raise ValueError(f"{what} needs about {nbytes / 1e9:.3g} GB of memory, more than the {avail / 1e9:.3g} GB "
                         f"available; {advice}")
