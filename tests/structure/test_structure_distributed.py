"""``pc`` and ``bootstrap_pc`` across two local processes joined by ``jax.distributed`` (2 x 2 fake CPU devices):
the CI-test batches are sharded over the four devices of both processes, every process gathers each batch's
p-values, and each must get the graph of a one-process run without a mesh (and with a one-process four-device
mesh). The graphs are integer arrays, compared exactly."""

import sys
from pathlib import Path

import jax
import numpy as np
from jax.sharding import Mesh

from icmlx.structure import bootstrap_pc, pc

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from _mp_pc_problem import problems  # noqa: E402

from _jax_processes import run_two_processes  # noqa: E402


def test_pc_two_processes_equal_one_process(tmp_path):
    results = run_two_processes(HERE / "_mp_pc_worker.py", tmp_path)
    with jax.enable_x64(False):  # the workers run in JAX's default precision
        _compare(results)


def _compare(results):
    mesh = Mesh(np.array(jax.devices()), ("tests",)) if jax.device_count() > 1 else None
    for name, (x, test) in problems().items():
        ref = np.asarray(pc(x, ci_test=test).graph)
        assert np.abs(ref).sum() > 0, name  # the comparison is of graphs with edges
        if mesh is not None:
            np.testing.assert_array_equal(np.asarray(pc(x, ci_test=test, mesh=mesh, max_batch=64).graph), ref)
        for r in results:
            assert int(r["num_processes"]) == 2 and int(r["num_devices"]) == 4
            np.testing.assert_array_equal(r[name], ref, err_msg=name)
    x, _ = problems()["fisherz"]
    boot = bootstrap_pc(jax.random.key(0), x, 4)
    for r in results:
        np.testing.assert_array_equal(r["bootstrap_directed"], np.asarray(boot.directed_frequency))
        np.testing.assert_array_equal(r["bootstrap_undirected"], np.asarray(boot.undirected_frequency))
