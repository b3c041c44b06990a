"""icmlx._checks.check_values: host check (ValueError) on concrete input, equinox error under jit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx._checks import check_values, is_traced


def _neg(xp, v):
    return v < 0


def test_concrete_input_raises_value_error_now():
    with pytest.raises(ValueError, match="must be >= 0"):
        check_values(np.array([1.0, -1.0]), _neg, "x must be >= 0")
    x = jnp.array([1.0, 2.0])
    assert check_values(x, _neg, "x must be >= 0") is x


def test_traced_input_is_checked_when_the_program_runs():
    f = jax.jit(lambda x: check_values(x, _neg, "x must be >= 0") * 2)
    np.testing.assert_array_equal(np.asarray(f(jnp.array([1.0, 2.0]))), [2.0, 4.0])
    with pytest.raises(Exception, match="x must be >= 0"):
        jax.block_until_ready(f(jnp.array([1.0, -2.0])))


def test_public_boundary_checks_concrete_input_on_the_host():
    # A concrete bad input must fail with a plain ValueError before any program runs (the host check), not with
    # equinox's runtime error from an ``error_if`` compiled into the program: such a program also holds a host
    # callback, which keeps it out of the persistent compilation cache.
    import equinox as eqx

    from icmlx.stats import benjamini_hochberg

    with pytest.raises(ValueError) as info:
        benjamini_hochberg(jnp.array([0.01, jnp.nan, 0.5]), alpha=0.1)
    assert not isinstance(info.value, eqx.EquinoxRuntimeError)
    assert len(str(info.value).splitlines()) <= 2


def test_is_traced():
    assert not is_traced(jnp.ones(2))
    assert jax.jit(lambda x: jnp.asarray(is_traced(x)))(jnp.ones(2))
