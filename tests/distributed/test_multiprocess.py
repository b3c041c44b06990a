"""Multi-process runs on one machine: two local processes joined by ``jax.distributed`` (CPU collectives via gloo).

Each process has two fake CPU devices, so the global mesh has four devices split across two processes, as on a
two-host cluster. The sharded result must equal the same computation in one process without a mesh.
"""

import os
import socket
import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _run_two_processes(worker: str, tmp_path: Path, timeout: float = 240.0) -> list[dict]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_ENABLE_X64")}
    outs = [tmp_path / f"p{i}.npz" for i in range(2)]
    procs = [subprocess.Popen([sys.executable, str(HERE / worker), str(i), "2", str(port), str(outs[i])],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for i in range(2)]
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


def test_dash_two_processes_equal_one_process(tmp_path):
    from _mp_problem import dash_problem

    results = _run_two_processes("_mp_worker.py", tmp_path)
    ref_params, ref_losses, ref_state = dash_problem(None, jnp.asarray)
    ref_w = np.asarray(ref_params["w"])
    for r in results:
        assert int(r["num_processes"]) == 2 and int(r["num_devices"]) == 4 and int(r["num_local"]) == 2
        # each stack padded to a multiple of 4 devices, each device holding a quarter: the blocks really are split
        assert np.all(r["stack_sizes"] % 4 == 0) and np.all(r["local_rows"] * 4 == r["stack_sizes"])
        # same maths per block on other devices; float32 sharded matmuls may round differently
        np.testing.assert_allclose(r["losses"], ref_losses, rtol=1e-4)
        np.testing.assert_allclose(r["w"], ref_w, rtol=2e-4, atol=2e-5 * float(np.abs(ref_w).max()))
    # the loss went down, so the comparison is of a run that did something
    assert ref_losses[-1] < 0.8 * ref_losses[0]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
