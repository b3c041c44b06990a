"""One process of the two-process FSDP run: ``python _fsdp_worker.py <process_id> <num_processes> <port> <out>``.

Each process owns two fake CPU devices; ``jax.distributed.initialize`` joins them into one mesh of four devices
(CPU collectives over gloo), the weights are sharded over all four, and each process saves what it holds.
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
    from _fsdp_problem import param_spec, run
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()), ("fsdp",))
    replicated = NamedSharding(mesh, P())

    def put_param(name, a):
        sharding = NamedSharding(mesh, param_spec(name))
        return jax.make_array_from_callback(a.shape, sharding, lambda idx: a[idx])

    saved = {}
    for kind in ("dash", "soap"):
        params, losses, _ = run(kind, mesh, lambda a: jax.make_array_from_process_local_data(replicated, a),
                                put_param)
        saved[f"{kind}_losses"] = np.asarray(losses)
        for k, v in params.items():
            # this process's rows of the weight, with where they start
            for i, shard in enumerate(v.addressable_shards):
                saved[f"{kind}_{k}_{i}"] = np.asarray(shard.data)
                saved[f"{kind}_{k}_{i}_start"] = np.asarray(shard.index[0].start or 0)
    np.savez(out, num_devices=jax.device_count(), num_processes=jax.process_count(), **saved)
    jax.distributed.shutdown()


if __name__ == "__main__":
    main()
