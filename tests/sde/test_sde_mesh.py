"""infer_drift(mesh=...): the bridges split over the 4 fake CPU devices of tests/conftest.py give the one-device
result (float32 sums in another order: drift values to 1e-4, sigma and losses to 1e-5 relative)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx.sde import infer_drift, simulate


def _double_well(x):
    return x - x**3


@pytest.fixture(scope="module")
def sparse_paths():
    return simulate(jax.random.key(0), _double_well, 0.7, jnp.zeros((1, 1)), 40.0, 0.01, save_every=100)


@pytest.mark.slow  # two EM compilations (one device, four): about 25 s on 2 cores
def test_sharded_em_equals_one_device(sparse_paths):
    if len(jax.devices()) < 4:
        pytest.skip("needs the 4 fake CPU devices of tests/conftest.py")
    p = sparse_paths
    cfg = dict(num_steps=2, num_particles=8, num_time_steps=4)
    one = infer_drift(jax.random.key(1), p, None, **cfg)
    mesh = jax.make_mesh((4,), ("bridges",))
    four = infer_drift(jax.random.key(1), p, None, mesh=mesh, **cfg)
    x = jnp.linspace(-1.5, 1.5, 31)[:, None]
    np.testing.assert_allclose(np.asarray(four.drift(x)), np.asarray(one.drift(x)), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(float(four.sigma), float(one.sigma), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(four.history.loss), np.asarray(one.history.loss), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(four.degenerate), np.asarray(one.degenerate))


def test_mesh_errors(sparse_paths):
    p = sparse_paths
    with pytest.raises(TypeError, match="mesh"):
        infer_drift(jax.random.key(1), p, None, 0.7, mesh="devices", num_steps=1)
    if len(jax.devices()) >= 3:
        mesh = jax.make_mesh((3,), ("bridges",), devices=jax.devices()[:3])  # 32 padded intervals
        with pytest.raises(ValueError, match="do not divide over the mesh's 3 devices"):
            infer_drift(jax.random.key(1), p, None, 0.7, mesh=mesh, num_steps=1)


def test_sharded_chunks_equal_one_device_all_at_once(sparse_paths):
    """Chunks of 8 intervals, each split over the 4 devices, against the one-device run of all intervals at once
    (a well-conditioned class: float32 sums in another order agree to 1e-4)."""
    if len(jax.devices()) < 4:
        pytest.skip("needs the 4 fake CPU devices of tests/conftest.py")
    from icmlx.sde import PolynomialBasis, RidgeRegression

    cfg = dict(num_steps=2, num_particles=8, num_time_steps=4, guidance="none",
               function_class=RidgeRegression(PolynomialBasis(1, 3), 1e-3))
    one = infer_drift(jax.random.key(1), sparse_paths, None, 0.7, **cfg)
    four = infer_drift(jax.random.key(1), sparse_paths, None, 0.7, mesh=jax.make_mesh((4,), ("bridges",)),
                       chunk_size=8, **cfg)
    np.testing.assert_allclose(np.asarray(four.drift.weights), np.asarray(one.drift.weights), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(four.history.loss), np.asarray(one.history.loss), rtol=1e-5)
