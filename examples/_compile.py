"""Helpers shared by the examples (not an example: ``tour.py`` skips modules whose name starts with ``_``)."""

from __future__ import annotations

import contextlib

import jax


@contextlib.contextmanager
def fewer_optimizations():
    """Compile the programs traced inside the block with most of XLA's optimization passes off.

    For programs that run once or a few times on small inputs (a sweep over sample sizes, each size its own
    program) compiling is most of the time and running them is milliseconds; JAX's
    ``jax_disable_most_optimizations`` trades run time for compile time there. The results are the same
    computation (no fast-math either way). Programs compiled inside keep their settings when called again
    later, so wrap only code whose compiled functions are not timed afterwards.
    """
    prev = bool(jax.config.read("jax_disable_most_optimizations"))
    jax.config.update("jax_disable_most_optimizations", True)
    try:
        yield
    finally:
        jax.config.update("jax_disable_most_optimizations", prev)
