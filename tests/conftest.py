"""Shared pytest configuration for icmlx.

- 4 fake CPU devices (set before JAX creates a backend) so sharding code is exercised on CPU.
- XLA's expensive optimisation passes off (``JAX_DISABLE_MOST_OPTIMIZATIONS``), unless the environment says otherwise.
- Strict dtype promotion, so silent float32/float64 mixing fails loudly in tests.
- jaxtyping runtime checks for ``icmlx`` come from ``addopts`` in ``pyproject.toml`` (beartype).
- ``getkey`` fixture: a fresh, deterministic PRNG key per call.
- JAX's compiled programs are released between test files (`jax.clear_caches`) once the process holds 30,000
  memory mappings: every CPU executable holds a few, and one process running the whole suite would otherwise pass
  the kernel's limit on them (``vm.max_map_count``, 65,530 by default), where XLA's compiler crashes instead of
  raising. Below that, files reuse each other's compiled programs. ``ICMLX_TEST_CLEAR=always`` releases them
  after every file.
- ``slow`` tests are deselected by default (``-m "not slow"`` in addopts); run them with ``-m slow``.
- ``x64_only`` tests compute entirely under ``jax.enable_x64(True)`` (their references need float64), so a
  float32 run would repeat the x64 run exactly: they are skipped unless ``JAX_ENABLE_X64=1`` and run in the
  x64 pass of ``.ci/run`` (mark them ``x64`` too).
"""

import os

# The suite stays hermetic: no persistent compilation cache (tests/test_cache.py checks the policy in subprocesses).
os.environ.setdefault("ICMLX_CACHE", "0")
# The suite checks results, not speed, and is dominated by XLA compilation: XLA's expensive optimisation passes are
# off here (and in the subprocesses tests start), which leaves the programs' semantics alone. The x64 pass of
# .ci/run, the benchmarks and the examples compile fully optimised; JAX_DISABLE_MOST_OPTIMIZATIONS=false opts out.
os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "true")

_flags = os.environ.get("XLA_FLAGS", "")
if "xla_force_host_platform_device_count" not in _flags:
    os.environ["XLA_FLAGS"] = (_flags + " --xla_force_host_platform_device_count=4").strip()

import contextlib  # noqa: E402
import gc  # noqa: E402
import itertools  # noqa: E402

import jax  # noqa: E402
import pytest  # noqa: E402

jax.config.update("jax_numpy_dtype_promotion", "strict")

X64 = bool(jax.config.jax_enable_x64)


@pytest.fixture
def getkey():
    """Return a callable giving a new PRNG key on every call (deterministic per test)."""
    counter = itertools.count()
    base = jax.random.key(0)

    def _getkey():
        return jax.random.fold_in(base, next(counter))

    return _getkey


@contextlib.contextmanager
def _optimized_compilation():
    """XLA's optimisation passes on inside the block: for the few tests that run long compiled loops (an example's
    Monte Carlo at quick scale), where unoptimised code costs more run time than the compile time it saves."""
    before = jax.config.read("jax_disable_most_optimizations")
    jax.config.update("jax_disable_most_optimizations", False)
    try:
        yield
    finally:
        jax.config.update("jax_disable_most_optimizations", before)


@pytest.fixture(scope="session")
def optimized_compilation():
    """The context manager :func:`_optimized_compilation` (``with optimized_compilation(): ...``)."""
    return _optimized_compilation


@pytest.fixture
def x64():
    """Whether the run has ``JAX_ENABLE_X64=1``."""
    return X64


_MAP_LIMIT = 30_000  # of the kernel's default vm.max_map_count, 65,530


def _num_mappings() -> int:
    try:
        with open("/proc/self/maps", "rb") as f:
            return f.read().count(b"\n")
    except OSError:
        return _MAP_LIMIT  # no /proc: release after every file


def pytest_runtest_teardown(item, nextitem):
    if nextitem is None or nextitem.path != item.path:
        if os.environ.get("ICMLX_TEST_CLEAR") == "always" or _num_mappings() >= _MAP_LIMIT:
            jax.clear_caches()
            gc.collect()


def pytest_collection_modifyitems(config, items):
    if X64:
        return
    skip = pytest.mark.skip(reason="sets float64 itself: runs in the JAX_ENABLE_X64=1 pass of .ci/run")
    for item in items:
        if item.get_closest_marker("x64_only") is not None:
            item.add_marker(skip)
