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


def test_no_callback_in_the_program_of_a_checked_public_function():
    # benjamini_hochberg checks its concrete p-values on the host, so its compiled program has no host callback
    # (JAX would not store such a program in the persistent compilation cache).
    from icmlx.stats._fdr import _bh_bucket_decisions, _check_pvalues

    p = _check_pvalues(np.linspace(0.0, 1.0, 11))
    hlo = _bh_bucket_decisions.lower(p, jnp.asarray(0.1, p.dtype)).as_text()
    assert "callback" not in hlo.lower()


def test_is_traced():
    assert not is_traced(jnp.ones(2))
    assert jax.jit(lambda x: jnp.asarray(is_traced(x)))(jnp.ones(2))
