"""The fuzz harness sorts each kind of outcome into its class (synthetic calls, no library code)."""

import time

import numpy as np
import pytest

from _harness import Case, assert_good, classify


def _sleep_forever():
    while True:
        time.sleep(0.01)


def _raise(exc):
    raise exc


@pytest.mark.parametrize(
    "case, expected",
    [
        (Case("t.right", lambda: np.ones(3), check=lambda out: np.allclose(out, 1.0)), "right"),
        (Case("t.clear", lambda: _raise(ValueError("`x` has NaN entries")), words=("nan",)), "clear_error"),
        (Case("t.unclear_words", lambda: _raise(ValueError("bad")), words=("nan",)), "unclear_error"),
        (Case("t.internal", lambda: _raise(AttributeError("nan")), words=("nan",)), "unclear_error"),
        (Case("t.nan", lambda: np.array([np.nan]), check=lambda out: False), "silent_nan"),
        (Case("t.wrong", lambda: np.array([2.0]), check=lambda out: np.allclose(out, 1.0)), "silent_wrong"),
        (Case("t.must_fail", lambda: np.array([2.0])), "silent_wrong"),
        (Case("t.status", lambda: np.array([2.0]), status=lambda out: (False, "diverged: regularise more"),
              words=("diverged",)), "clear_error"),
        (Case("t.status_success_wrong", lambda: np.array([2.0]), status=lambda out: (True, ""),
              check=lambda out: False), "silent_wrong"),
        (Case("t.hang", _sleep_forever, timeout=0.3), "hang_crash"),
    ],
    ids=lambda v: v.name if isinstance(v, Case) else v,
)
def test_classify(case, expected):
    outcome, _ = classify(case)
    assert outcome == expected


def test_assert_good_fails_on_silent_answers():
    with pytest.raises(AssertionError, match="silent_wrong"):
        assert_good(Case("t.must_fail", lambda: np.array([2.0])))


def test_status_of_reads_icmlx_and_batched_statuses():
    import types

    import jax.numpy as jnp

    import icmlx
    from _harness import status_of

    ok, msg = status_of(types.SimpleNamespace(result=icmlx.RESULTS.diverged))
    assert not ok and msg.startswith("diverged: ") and "regularise" in msg.lower()
    assert status_of(types.SimpleNamespace(result=icmlx.RESULTS.successful)) == (True, "")
    import jax

    batch = jax.vmap(lambda ok: icmlx.RESULTS.where(ok, icmlx.RESULTS.successful, icmlx.RESULTS.nonfinite_input))(
        jnp.array([True, False]))
    ok, msg = status_of(types.SimpleNamespace(result=batch))
    assert not ok and msg.startswith("nonfinite_input: ")
