"""The shared helpers behind ``progress=``, the plot helpers, DataFrame inputs and readable result reprs."""

import io

import numpy as np
import pytest

from icmlx import _inputs, _progress, _repr


def test_progress_rule(monkeypatch):
    monkeypatch.delenv("ICMLX_PROGRESS", raising=False)
    assert _progress.resolve_progress(True) is True
    assert _progress.resolve_progress(False) is False
    # pytest captures stderr, so the automatic choice is off here, and in-program loops are off unless asked.
    assert _progress.resolve_progress(None) is False
    assert _progress.resolve_progress(None, in_program=True) is False
    monkeypatch.setenv("ICMLX_PROGRESS", "1")
    assert _progress.resolve_progress(None, in_program=True) is True
    assert _progress.resolve_progress(False) is False
    with pytest.raises(TypeError):
        _progress.resolve_progress("yes")


def test_progress_bar_writes_only_when_enabled():
    out = io.StringIO()
    with _progress.ProgressBar("pc", total=3, enabled=True, stream=out, min_interval=0.0, unit="level") as bar:
        for k in range(3):
            bar.update(1, tests=10 * k)
    text = out.getvalue()
    assert "pc:" in text and "3/3" in text and "tests=20" in text
    out = io.StringIO()
    with _progress.ProgressBar("pc", total=3, enabled=False, stream=out) as bar:
        bar.update(1)
    assert out.getvalue() == ""


def test_table_values_keeps_dataframe_names():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0]})
    values, names = _inputs.table_values(df)
    assert names == ("a", "b")
    np.testing.assert_array_equal(values, [[1.0, 3.0], [2.0, 4.0]])
    x = np.ones((2, 2))
    assert _inputs.table_values(x)[0] is x and _inputs.table_values(x)[1] is None
    values, names = _inputs.table_values(pd.Series([1.0, 2.0], name="z"))
    assert names is None and values.shape == (2,)


def test_summarise_reads_like_numbers():
    import jax.numpy as jnp

    import icmlx

    assert _repr.summarise(jnp.float32(0.125)) == "0.125"
    assert _repr.summarise(jnp.zeros((3, 4), jnp.float32)) == "f32[3, 4]"
    assert _repr.summarise(np.array([1, 2], np.int32)) == "[1, 2]"
    assert _repr.summarise(icmlx.RESULTS.max_steps_reached) == "max_steps_reached"
    sol = icmlx.Solution(value=jnp.zeros(10), result=icmlx.RESULTS.successful, stats={"num_steps": jnp.array(7)})
    assert repr(sol) == "Solution(value=f32[10], result=successful, stats={num_steps=7})"


def test_raise_if_failed_is_short_on_the_host_and_runs_under_jit():
    import jax
    import jax.numpy as jnp

    import icmlx
    from icmlx._results import raise_if_failed

    ok = icmlx.RESULTS.successful
    bad = icmlx.RESULTS.max_steps_reached
    assert raise_if_failed(1, ok, True) == 1
    assert raise_if_failed(1, bad, False) == 1
    with pytest.raises(RuntimeError) as info:
        raise_if_failed(1, bad, True)
    text = str(info.value)
    assert text.startswith("max_steps_reached:") and "max_steps" in text and "throw=False" in text
    assert len(text.splitlines()) <= 3
    batch = jax.vmap(lambda c: icmlx.RESULTS.where(c, ok, bad))(jnp.array([True, False, False]))
    with pytest.raises(RuntimeError, match=r"2 of 3 in the batch"):
        raise_if_failed(1, batch, True)
    f = jax.jit(lambda t: raise_if_failed(t, icmlx.RESULTS.where(t > 0, ok, bad), True))
    assert float(f(jnp.float32(1.0))) == 1.0
    with pytest.raises(Exception, match="max_steps"):
        jax.block_until_ready(f(jnp.float32(-1.0)))


def test_to_device_converts_on_the_host_and_compiles_nothing():
    import jax

    compiled, active = [], [True]

    def listen(event, duration, **kwargs):
        if active[0] and event.endswith("backend_compile_duration"):
            compiled.append(event)

    jax.monitoring.register_event_duration_secs_listener(listen)  # (stays registered, inert once the test ends)
    try:
        # shapes no other test uses, so a staging program could not come from this process's own cache
        x = _inputs.to_device(np.arange(37, dtype=np.int64).reshape(37, 1), np.float64)
        y = _inputs.to_device([[1, 2, 3]] * 41)
    finally:
        active[0] = False
    assert compiled == []
    assert isinstance(x, jax.Array) and x.shape == (37, 1)
    assert x.dtype == jax.dtypes.canonicalize_dtype(np.float64)
    assert y.dtype == jax.dtypes.canonicalize_dtype(np.int64)
    np.testing.assert_array_equal(np.asarray(x)[:, 0], np.arange(37))
    assert _inputs.to_device(x) is x  # a device array in its dtype stays where it is (no host round trip)
    # the check can fail: a device-side conversion of a new shape compiles a program
    active[0] = True
    try:
        jax.numpy.asarray(np.arange(43, dtype=np.int32)).astype(np.float32)
    finally:
        active[0] = False
    assert compiled


# -- padded sizes: one ladder rule for every subpackage ------------------------------------------------------------


def _ladder(minimum, growth, steps, top=2**22):
    """Every rung of the ladder, enumerated directly (the reference)."""
    if steps == 1:
        rungs, b = [], minimum
        while b <= top:
            rungs.append(b)
            b *= growth
        return rungs
    rungs = {minimum}
    e = 0
    while 2**e <= top:
        rungs.update(2**e * (steps + j) // steps for j in range(steps + 1))
        e += 1
    return sorted(r for r in rungs if r >= minimum)


@pytest.mark.parametrize("minimum,growth,steps", [(1, 2, 1), (1024, 2, 1), (8, 2, 1), (64, 4, 1), (256, 4, 1),
                                                  (64, 2, 4), (16, 2, 4)])
def test_size_bucket_is_the_smallest_rung_at_or_above_n(minimum, growth, steps):
    from icmlx._buckets import size_bucket

    rungs = np.array(_ladder(minimum, growth, steps))
    rng = np.random.default_rng(0)
    for n in list(range(0, 300)) + list(rng.integers(300, 2**21, 300)):
        want = int(rungs[np.searchsorted(rungs, max(int(n), 1))]) if n > minimum else minimum
        assert size_bucket(int(n), minimum=minimum, growth=growth, steps=steps) == want, n
        if steps > 1 and n > minimum:  # at most 1/steps of the bucket is padding
            assert want - n < want / steps


def test_size_bucket_cap_and_round_up():
    from icmlx._buckets import round_up, size_bucket

    assert size_bucket(10**6, minimum=64, growth=4, maximum=2**16) == 2**16
    assert size_bucket(10, minimum=64, growth=4, maximum=16) == 16
    assert [round_up(n, 8) for n in (0, 1, 8, 9, 17)] == [8, 8, 8, 16, 24]
    with pytest.raises(ValueError, match="growth=2"):
        size_bucket(10, growth=4, steps=4)
