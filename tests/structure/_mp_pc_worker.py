"""One process of the two-process ``pc`` run (``test_structure_distributed.py``): PC with its CI-test batches
sharded over a global mesh of the devices of both processes.

Run as ``python _mp_pc_worker.py <process_id> <num_processes> <port> <out.npz>``; each process owns two fake CPU
devices, so the mesh has four, two per process. Both processes make the same calls on the same data (as on a
cluster) and each writes the graphs it got, and
the bootstrap frequencies of four resamples run in lockstep.
"""

import sys
from pathlib import Path


def main() -> None:
    here = Path(__file__).resolve().parent
    sys.path[:0] = [str(here), str(here.parent)]
    from _jax_processes import join

    _, _, out = join()

    import jax
    import numpy as np
    from _mp_pc_problem import problems
    from jax.sharding import Mesh

    from icmlx.structure import bootstrap_pc, pc

    mesh = Mesh(np.array(jax.devices()), ("tests",))
    graphs = {name: np.asarray(pc(x, ci_test=test, mesh=mesh, max_batch=64).graph)
              for name, (x, test) in problems().items()}
    x, _ = problems()["fisherz"]
    boot = bootstrap_pc(jax.random.key(0), x, 4, mesh=mesh, max_batch=64)  # the resamples' tests in one batch
    graphs["bootstrap_directed"] = np.asarray(boot.directed_frequency)
    graphs["bootstrap_undirected"] = np.asarray(boot.undirected_frequency)
    np.savez(out, num_devices=jax.device_count(), num_processes=jax.process_count(), **graphs)
    jax.distributed.shutdown()


if __name__ == "__main__":
    main()
