"""One launch of two local processes joined by ``jax.distributed`` (CPU collectives via gloo), shared by the tests.

Each process has two fake CPU devices, so the global mesh has four devices split across two processes, as on a
two-host cluster. The launch runs every multi-process problem (``_mp_worker.py``) once per session; the tests
compare its results with single-process references. Where gloo, local sockets or subprocesses are unavailable
the tests are skipped.
"""

import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _gloo_available() -> bool:
    try:
        from jax._src.lib import _jax
    except ImportError:
        return False
    return hasattr(_jax, "make_gloo_tcp_collectives")


def run_two_processes(worker: str, folder: Path, timeout: float = 240.0) -> list[dict]:
    """Run ``worker`` as processes 0 and 1 of a two-process job; each writes ``p<i>.npz``, returned as dicts."""
    if not _gloo_available():
        pytest.skip("this jaxlib has no gloo CPU collectives")
    try:
        port = _free_port()
    except OSError as e:
        pytest.skip(f"no local socket for the coordinator: {e}")
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_ENABLE_X64")}
    outs = [folder / f"p{i}.npz" for i in range(2)]
    try:
        procs = [subprocess.Popen([sys.executable, str(HERE / worker), str(i), "2", str(port), str(outs[i])],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for i in range(2)]
    except OSError as e:
        pytest.skip(f"cannot start worker processes: {e}")
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=timeout)[0])
    finally:
        for p in procs:
            p.kill()
    for i, p in enumerate(procs):
        assert p.returncode == 0, f"process {i} failed:\n{logs[i][-3000:]}"
    return [dict(np.load(o)) for o in outs]


@pytest.fixture(scope="session")
def two_process_results(tmp_path_factory) -> list[dict]:
    """The two processes' ``_mp_worker.py`` outputs (DASH and stats), from one launch per session."""
    return run_two_processes("_mp_worker.py", tmp_path_factory.mktemp("two_processes"))
