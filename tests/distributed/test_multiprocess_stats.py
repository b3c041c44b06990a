"""``simulate_risk_ratios`` across two local processes (2 x 2 fake CPU devices; the launch is in ``conftest.py``).

The 10 replicates are padded to 12 and split over the four devices of both processes; each process must get the
full result, equal to a one-process run on 4 devices (``shard=True`` here, where conftest gives 4 fake devices)
and on 1 device (``shard=False``). Tolerances: the losses are integer counts (``delta0 = deltaA = 1``) from the
same random numbers, so they must be exactly equal; the ratios and their SEs are float32 means of those same
counts, compared with ``rtol=1e-6``.
"""

import sys

import jax
import numpy as np
import pytest


def test_simulate_risk_ratios_two_processes_equal_one_process(two_process_results):
    from _mp_problem import stats_problem

    assert jax.device_count() == 4
    refs = {"4 devices": stats_problem(shard=True), "1 device": stats_problem(shard=False)}
    for name, ref in refs.items():
        loss = np.asarray(ref.loss)
        assert loss.shape == (3, 10), name
        # counts: integers, so exact
        assert np.array_equal(loss, np.round(loss)), name
        for r in two_process_results:
            assert int(r["num_processes"]) == 2 and int(r["num_devices"]) == 4
            assert tuple(r["stats_names"]) == ref.names == ("oracle", "bonf", "bh")
            np.testing.assert_array_equal(r["stats_loss"], loss, err_msg=name)
            for field in ("mean_loss", "ratio", "ratio_se"):
                np.testing.assert_allclose(r[f"stats_{field}"], np.asarray(getattr(ref, field)), rtol=1e-6,
                                           err_msg=f"{field} vs {name}")
    # the two processes got the same (full) result
    np.testing.assert_array_equal(two_process_results[0]["stats_loss"], two_process_results[1]["stats_loss"])
    # the comparison is of rules that differ: Bonferroni loses more than the oracle on these draws
    ratio = np.asarray(refs["1 device"].ratio)
    assert ratio[0] == 1.0 and ratio[1] > 1.0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
