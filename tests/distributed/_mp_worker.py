"""One process of a two-process run (``tests/distributed/``): DASH and the stats CRN driver over a global mesh.

Run as ``python _mp_worker.py <process_id> <num_processes> <port> <out.npz>``. Every process owns two fake CPU
devices; ``jax.distributed.initialize`` joins them into one global mesh of ``2 * num_processes`` devices with
CPU collectives over gloo. Both multi-process checks share this one launch (start-up is most of its time):

- DASH (``dash_*`` entries): the factor/root stacks are sharded over all devices;
- ``simulate_risk_ratios`` (``stats_*`` entries): the replicates are split over all devices and every process
  reads the full result.
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
    from _mp_problem import dash_problem, stats_problem
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()), ("blocks",))
    replicated = NamedSharding(mesh, P())
    params, losses, state = dash_problem(mesh, lambda a: jax.make_array_from_process_local_data(replicated, a))
    shards = [r.addressable_shards[0].data.shape[0] for r in state.roots]
    cmp = stats_problem(shard=True)
    np.savez(out, dash_w=np.asarray(params["w"].addressable_data(0)), dash_losses=np.asarray(losses),
             dash_stack_sizes=np.asarray([r.shape[0] for r in state.roots]), dash_local_rows=np.asarray(shards),
             stats_loss=np.asarray(cmp.loss), stats_mean_loss=np.asarray(cmp.mean_loss),
             stats_ratio=np.asarray(cmp.ratio), stats_ratio_se=np.asarray(cmp.ratio_se),
             stats_names=np.asarray(cmp.names),
             num_devices=jax.device_count(), num_local=jax.local_device_count(), num_processes=jax.process_count())
    jax.distributed.shutdown()


if __name__ == "__main__":
    main()
