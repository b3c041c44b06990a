"""What DASH's update program is built from, for compile time: host-made constants equal their in-program form."""

import jax
import jax.numpy as jnp
import numpy as np


def test_power_iteration_start_vectors_are_jax_random_normal():
    # The power iteration's start vectors are jax.random.normal(key(1729)) with the threefry bits made in NumPy
    # (no hash in the compiled program): the reference is JAX's own generator, compared bit for bit, jitted (as in
    # DASH's update) and eagerly.
    from icmlx.optim._root_kernels import _start_vectors, _threefry_bits

    shapes = [(128, 16), (17, 5)]
    ref = jax.jit(lambda: [jax.random.normal(jax.random.key(1729), s, jnp.float32) for s in shapes])()
    got = jax.jit(lambda: [_start_vectors(*s) for s in shapes])()
    for s, r, g in zip(shapes, ref, got):
        assert np.array_equal(np.asarray(r), np.asarray(g)), s
    bits = np.asarray(jax.random.bits(jax.random.key(1729), (17 * 5,)))
    assert np.array_equal(bits, _threefry_bits(1729, 17 * 5))
