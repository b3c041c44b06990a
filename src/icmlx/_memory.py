"""Up-front memory estimates shared by the subpackages: refuse a plan that cannot fit before allocating it."""

from __future__ import annotations

import os

__all__ = ["available_bytes", "check_memory", "chunk_budget"]

#: Most bytes one chunk of a streamed computation holds for its intermediates.
MAX_CHUNK_BYTES = 2**28


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


def chunk_budget() -> float:
    """Bytes a streamed computation may hold for one chunk's intermediates: 1/32 of the memory of the device the
    computation runs on (an accelerator's own memory, else the machine's physical memory), at most
    `MAX_CHUNK_BYTES`.

    It depends on the machine, not on what else is running, so a computation's chunk size (a static shape, hence
    one compiled program) is the same on every call.
    """
    total = None
    try:
        import jax

        device = jax.devices()[0]
        if device.platform != "cpu":
            total = float((device.memory_stats() or {}).get("bytes_limit", 0)) or None
    except Exception:  # noqa: BLE001 - no backend or no memory statistics: use the machine's memory
        total = None
    if total is None:
        total = _physical_bytes()
    return float(min(MAX_CHUNK_BYTES, total / 32.0))
