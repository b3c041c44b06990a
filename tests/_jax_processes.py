"""Two local processes joined by ``jax.distributed`` (CPU collectives over gloo), for the multi-process tests.

`run_two_processes` (in the test process) starts a worker script as processes 0 and 1 of a two-process job; the
worker calls `join` first, which gives each process two fake CPU devices and joins them into one global mesh of
four devices, as on a two-host cluster. Where gloo, local sockets or subprocesses are unavailable the test is
skipped.
"""

import os
import socket
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def join(local_devices: int = 2) -> tuple[int, int, str]:
    """In a worker started by `run_two_processes` (``worker.py <process_id> <num_processes> <port> <out>``): set
    ``local_devices`` fake CPU devices, import JAX and join the job. Returns ``(process_id, num_processes, out)``."""
    pid, nproc, port, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={local_devices}"  # before JAX starts
    os.environ.setdefault("ICMLX_CACHE", "0")

    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(f"localhost:{port}", num_processes=nproc, process_id=pid)
    return pid, nproc, out


def _gloo_available() -> bool:
    try:
        from jax._src.lib import _jax
    except ImportError:
        return False
    return hasattr(_jax, "make_gloo_tcp_collectives")


def run_two_processes(worker: Path, folder: Path, timeout: float = 240.0) -> list[dict]:
    """Run the script ``worker`` as processes 0 and 1 of a two-process job; each writes ``folder/p<i>.npz``,
    returned as dicts. The workers import this checkout's ``src``."""
    import numpy as np
    import pytest

    if not _gloo_available():
        pytest.skip("this jaxlib has no gloo CPU collectives")
    try:
        with socket.socket() as s:
            s.bind(("localhost", 0))
            port = s.getsockname()[1]
    except OSError as e:
        pytest.skip(f"no local socket for the coordinator: {e}")
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_ENABLE_X64")}
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    outs = [folder / f"p{i}.npz" for i in range(2)]
    try:
        procs = [subprocess.Popen([sys.executable, str(worker), str(i), "2", str(port), str(outs[i])],
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
