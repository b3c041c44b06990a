"""DASH across two local processes joined by ``jax.distributed`` (the launch is in ``conftest.py``).

The global mesh has four devices split across two processes, as on a two-host cluster. The sharded result must
equal the same computation in one process without a mesh.
"""

import sys

import jax.numpy as jnp
import numpy as np
import pytest


def test_dash_two_processes_equal_one_process(two_process_results):
    from _mp_problem import dash_problem

    ref_params, ref_losses, ref_state = dash_problem(None, jnp.asarray)
    ref_w = np.asarray(ref_params["w"])
    for r in two_process_results:
        assert int(r["num_processes"]) == 2 and int(r["num_devices"]) == 4 and int(r["num_local"]) == 2
        # each stack padded to a multiple of 4 devices, each device holding a quarter: the blocks really are split
        assert np.all(r["dash_stack_sizes"] % 4 == 0) and np.all(r["dash_local_rows"] * 4 == r["dash_stack_sizes"])
        # same maths per block on other devices; float32 sharded matmuls may round differently
        np.testing.assert_allclose(r["dash_losses"], ref_losses, rtol=1e-4)
        np.testing.assert_allclose(r["dash_w"], ref_w, rtol=2e-4, atol=2e-5 * float(np.abs(ref_w).max()))
    # the loss went down, so the comparison is of a run that did something
    assert ref_losses[-1] < 0.8 * ref_losses[0]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
