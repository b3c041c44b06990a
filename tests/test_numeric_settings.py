"""Numeric settings: one shared check (``icmlx._checks``), and every public function that takes a numeric setting
answers a string for a number with a ``TypeError`` naming the argument.

The public-API cases are found by ``tests/_numeric_settings_cases.py`` (every public callable with a numeric
parameter) and run there in a fresh interpreter, without the test suite's runtime type-checking import hook, which
would raise a ``TypeError`` of its own for any annotated argument and so hide what the library itself does. A
handful of cases (one or two per subpackage, including the two of issue #40) run in the default suite; the whole
sweep is ``slow``.

Every subpackage validates its settings with ``icmlx._checks.check_int`` / ``check_number`` (directly or
through a thin private wrapper), so no case is expected to fail.
"""

import json
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx._checks import check_int, check_number, default_float_dtype

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _numeric_settings_cases as cases_module  # noqa: E402

# --------------------------------------------------------------------------------------------- the shared check


@pytest.mark.parametrize("bad", ["3", b"3", 3.0, np.float32(3.0), True, np.bool_(True), None, [3], 3 + 0j,
                                 np.array([3])])
def test_check_int_refuses_what_is_not_an_integer(bad):
    with pytest.raises(TypeError, match=r"f: num_steps must be an integer"):
        check_int(bad, "num_steps", where="f")


def test_check_int_accepts_integers_and_checks_the_range():
    assert check_int(np.int64(5), "k") == 5 and type(check_int(np.int64(5), "k")) is int
    assert check_int(np.array(7), "k") == 7
    assert check_int(0, "k", minimum=0, maximum=0) == 0
    with pytest.raises(ValueError, match=r"g: k must be an integer in \[1, inf\), got k=0"):
        check_int(0, "k", where="g", minimum=1)
    with pytest.raises(ValueError, match=r"k must be an integer in \(-inf, 4\], got k=5"):
        check_int(5, "k", maximum=4)


def test_check_int_refuses_a_traced_count():
    with pytest.raises(TypeError, match="static setting"):
        jax.jit(lambda n: check_int(n, "num_steps"))(3)


@pytest.mark.parametrize("bad", ["0.05", b"0.05", True, np.bool_(False), None, 1j, np.complex64(1), [0.1],
                                 np.array(["0.1"]), jnp.array(True), np.array([0.1, 0.2])])
def test_check_number_refuses_what_is_not_a_real_scalar(bad):
    with pytest.raises(TypeError, match=r"bh: alpha must be"):
        check_number(bad, "alpha", where="bh")


@pytest.mark.parametrize("good", [0.05, 1, np.float32(0.5), np.int8(1), np.array(0.25), jnp.float32(0.5)])
def test_check_number_returns_a_real_scalar_unchanged(good):
    assert check_number(good, "alpha", minimum=0, maximum=1) is good


@pytest.mark.parametrize(("value", "kw", "shown"), [
    (0.0, dict(minimum=0, open_minimum=True), r"\(0, inf\)"),
    (1.5, dict(minimum=0, maximum=1), r"\[0, 1\]"),
    (1.0, dict(maximum=1, open_maximum=True), r"\(-inf, 1\)"),
    (float("nan"), {}, r"\(-inf, inf\), finite"),
    (float("inf"), {}, r"finite"),
])
def test_check_number_range_errors_show_the_range_and_the_value(value, kw, shown):
    with pytest.raises(ValueError, match=shown):
        check_number(value, "rtol", **kw)


def test_check_number_inf_only_when_allowed_and_arrays_only_when_allowed():
    assert check_number(float("inf"), "c2", allow_inf=True) == float("inf")
    with pytest.raises(ValueError):
        check_number(float("nan"), "c2", allow_inf=True)
    arr = np.array([0.1, 0.2])
    assert check_number(arr, "sigma", minimum=0, allow_array=True) is arr
    with pytest.raises(ValueError, match="sigma must lie in"):
        check_number(np.array([0.1, -0.2]), "sigma", minimum=0, allow_array=True)


def test_check_number_checks_a_traced_value_when_the_program_runs():
    f = jax.jit(lambda a: check_number(a, "alpha", minimum=0, maximum=1) * 2)
    assert float(f(jnp.float32(0.25))) == 0.5
    with pytest.raises(Exception, match="alpha must lie in"):
        jax.block_until_ready(f(jnp.float32(2.0)))


def test_default_float_dtype_is_the_dtype_jax_gives_new_float_arrays():
    assert default_float_dtype() == jnp.asarray(1.0).dtype
    assert default_float_dtype() == (np.dtype("float64") if jax.config.jax_enable_x64 else np.dtype("float32"))


# -------------------------------------------------------------------------------- every public numeric setting

FAST = ["icmlx.stats.benjamini_hochberg(alpha)", "icmlx.optim.dash(learning_rate)", "icmlx.structure.pc(alpha)",
        "icmlx.sde.simulate(save_every)", "icmlx.solvers.cg(rtol)", "icmlx.solvers.GRANS(max_steps)"]


def _all_cases() -> list[tuple[str, str]]:
    return [(f"{q}({arg})", q) for q, _, _, arg, _ in cases_module.cases()]


ALL = _all_cases()


def _params(selected):
    out = []
    for case, _qualname in ALL:
        if (case in FAST) != selected:
            continue
        out.append(pytest.param(case, id=case))
    return out


def _run(cases: list[str]) -> dict[str, dict]:
    proc = subprocess.run([sys.executable, str(HERE / "_numeric_settings_cases.py"), *cases], capture_output=True,
                          text=True, timeout=900, cwd=HERE.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return {r["case"]: r for r in rows}


@pytest.fixture(scope="module")
def fast_results():
    return _run(FAST)


@pytest.fixture(scope="module")
def all_results():
    return _run([])


def _check(result: dict, case: str) -> None:
    if result["outcome"] == "skipped":
        pytest.skip(f"no test value for {result['missing']} (add it to VALUES in tests/_numeric_settings_cases.py)")
    arg = case[case.index("(") + 1:-1]
    assert result["outcome"] == "TypeError" and result["names_argument"], (
        f"{case}: a string for {arg} gave {result['outcome']}: {result.get('message', '')}")


def test_every_fast_case_exists():
    assert set(FAST) <= {c for c, _ in ALL}


@pytest.mark.parametrize("case", _params(True))
def test_string_for_a_number_is_a_type_error_naming_it(case, fast_results):
    _check(fast_results[case], case)


@pytest.mark.slow
@pytest.mark.parametrize("case", _params(False))
def test_string_for_a_number_is_a_type_error_naming_it_everywhere(case, all_results):
    _check(all_results[case], case)
