"""One launch of two local processes joined by ``jax.distributed`` (CPU collectives via gloo), shared by the tests.

Each process has two fake CPU devices, so the global mesh has four devices split across two processes, as on a
two-host cluster. The launch runs every multi-process problem (``_mp_worker.py``) once per session; the tests
compare its results with single-process references. Where gloo, local sockets or subprocesses are unavailable
the tests are skipped.
"""

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from _jax_processes import run_two_processes  # noqa: E402


@pytest.fixture(scope="session")
def two_process_results(tmp_path_factory) -> list[dict]:
    """The two processes' ``_mp_worker.py`` outputs (DASH and stats), from one launch per session."""
    return run_two_processes(HERE / "_mp_worker.py", tmp_path_factory.mktemp("two_processes"))
