"""Outcome classes and the case runner shared by the fuzz suite (``tests/fuzz/test_<pkg>_fuzz.py``).

Every case calls one public entry point with a bad or extreme input, the way a careful user would (eagerly, under
``jit``, under ``vmap``), and ends in exactly one of six outcome classes:

``right``          the call returned an answer and the case's independent check (NumPy/SciPy float64, a closed
                   form, a peer library) accepts it.
``clear_error``    the call raised an error whose message names the problem (one of the case's ``words``), or it
                   returned a record whose status is not successful and whose message names the problem.
``unclear_error``  it raised, but an internal error (``AttributeError``, ``IndexError``, ...) or a message that
                   does not say what was wrong; or a non-success status with an unrelated message.
``silent_nan``     it returned without complaint and the answer has NaN/Inf entries.
``silent_wrong``   it returned a finite answer, with a successful status where it has one, that the check rejects
                   (or, for a case that must fail, any answer at all).
``hang_crash``     it did not return within the case's time limit, or it killed the process.

A case passes when its outcome is ``right`` or ``clear_error``. ``tests/fuzz/census.py`` runs every case of
every module in watched subprocesses (so a hang or a crash is counted, not fatal) and prints the counts per
subpackage and outcome.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import threading
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
import pytest

OUTCOMES = ("right", "clear_error", "unclear_error", "silent_nan", "silent_wrong", "hang_crash")
GOOD = frozenset({"right", "clear_error"})

# Exceptions that mean the library fell over rather than refused the input, whatever their text says.
INTERNAL_ERRORS = (AttributeError, IndexError, KeyError, NameError, UnboundLocalError, ZeroDivisionError,
                   RecursionError, AssertionError, NotImplementedError)


@dataclasses.dataclass(frozen=True)
class Case:
    """One bad-input call and what counts as its right outcome.

    Attributes:
      name: ``"<pkg>.<entry point>.<what is bad>[.<mode>]"``, unique within the module; the test id.
      run: performs the call and returns what the user gets (a result record, an array, a graph, ...).
      check: ``check(out) -> bool`` is true when ``out`` is the right answer, compared against an independent
        reference. ``None`` when no answer is right: the call must raise or report a non-success status.
      words: an error (or a non-success status message) counts as clear when it contains one of these
        (case-insensitive): the argument's name or the problem ("nan", "cyclic", "max_steps", ...).
      status: ``status(out) -> (successful, message)`` for a result record with a status; a non-success status
        whose message contains one of ``words`` is a clear error. ``None``: the output has no status.
      timeout: seconds before the call counts as a hang.
      slow: deselected from the default suite (still run by ``-m slow`` and by the census).
      marks: extra pytest marks (``pytest.mark.x64`` to run in the x64 pass too).
    """

    name: str
    run: Callable[[], Any]
    check: Callable[[Any], Any] | None = None
    words: Sequence[str] = ()
    status: Callable[[Any], tuple[bool, str]] | None = None
    timeout: float = 60.0
    slow: bool = False
    marks: Sequence[Any] = ()

    @property
    def package(self) -> str:
        return self.name.split(".", 1)[0]


class CaseTimeout(BaseException):
    """Raised inside a case that ran past its time limit (a ``BaseException`` so library code cannot swallow it)."""


@contextlib.contextmanager
def time_limit(seconds: float):
    """Interrupt the block after ``seconds`` (SIGALRM; main thread only, a no-op elsewhere).

    Only Python-level loops can be interrupted this way; a compiled program that never returns is caught by the
    census's watchdog process instead.
    """
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def _raise(signum, frame):
        raise CaseTimeout(f"no result within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _mentions(message: str, words: Sequence[str]) -> bool:
    text = message.lower()
    return any(w.lower() in text for w in words)


def _float_leaves(out: Any) -> list[np.ndarray]:
    leaves = []
    for leaf in jax.tree_util.tree_leaves(out):
        try:
            arr = np.asarray(leaf)
        except Exception:  # noqa: BLE001 - objects that are not arrays (graphs, strings) carry no NaN
            continue
        if arr.dtype.kind in "fc":
            leaves.append(arr)
    return leaves


def has_nonfinite(out: Any) -> bool:
    """Whether any floating leaf of ``out`` (a pytree or record) has a NaN or Inf entry."""
    return any(not np.all(np.isfinite(a)) for a in _float_leaves(out))


def classify(case: Case) -> tuple[str, str]:
    """Run ``case`` once and return ``(outcome, detail)``; ``outcome`` is one of :data:`OUTCOMES`."""
    try:
        with time_limit(case.timeout):
            out = case.run()
            out = jax.block_until_ready(out) if _float_leaves(out) else out
    except CaseTimeout as e:
        return "hang_crash", str(e)
    except MemoryError as e:
        return "hang_crash", f"MemoryError: {e}"
    except Exception as e:  # noqa: BLE001 - classifying every error is the point
        message = f"{type(e).__name__}: {e}"
        first = message.strip().splitlines()[0][:300] if message.strip() else type(e).__name__
        if isinstance(e, INTERNAL_ERRORS):
            return "unclear_error", f"internal error {first}"
        if case.words and _mentions(str(e), case.words):
            return "clear_error", first
        return "unclear_error", f"message names none of {tuple(case.words)}: {first}"
    if case.status is not None:
        try:
            ok, message = case.status(out)
        except Exception as e:  # noqa: BLE001
            return "unclear_error", f"status unreadable: {type(e).__name__}: {e}"
        if not ok:
            if case.words and _mentions(message, case.words):
                return "clear_error", f"status: {message.strip().splitlines()[0][:200]}"
            return "unclear_error", f"non-success status naming none of {tuple(case.words)}: {message[:200]}"
    if case.check is not None:
        try:
            verdict = case.check(out)
        except Exception as e:  # noqa: BLE001 - a check that cannot read the answer rejects it
            verdict = False
            why = f"check raised {type(e).__name__}: {e}"
        else:
            why = "check rejected the answer"
        if verdict is True or (verdict is not False and bool(verdict)):
            return "right", "answer matches the reference"
    else:
        why = "an answer was returned where none is right"
    if has_nonfinite(out):
        return "silent_nan", f"non-finite answer without an error ({why})"
    return "silent_wrong", why


def status_of(record: Any) -> tuple[bool, str]:
    """``(successful, message)`` of an icmlx/lineax record with a ``result`` field (batched: all must succeed)."""
    import icmlx

    result = record.result
    codes = np.ravel(np.asarray(result._value))
    ok = int(icmlx.RESULTS.successful._value)
    if np.all(codes == ok):
        return True, ""
    bad = int(codes[codes != ok][0])
    enum = result._enumeration  # the RESULTS class (``type(result)`` is equinox's item class)
    name = icmlx._repr.status_names(enum)[bad]
    return False, f"{name}: {enum[enum._name_to_item[name]]}"


def params(cases: Sequence[Case]) -> list[Any]:
    """``pytest.param`` per case, with ``slow`` and the case's extra marks, id = case name."""
    names = [c.name for c in cases]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise ValueError(f"duplicate fuzz case names: {sorted(dupes)}")
    out = []
    for c in cases:
        marks = list(c.marks) + ([pytest.mark.slow] if c.slow else [])
        out.append(pytest.param(c, id=c.name, marks=marks))
    return out


def assert_good(case: Case) -> None:
    """The test body of every fuzz case: the outcome is ``right`` or ``clear_error``."""
    outcome, detail = classify(case)
    assert outcome in GOOD, f"{case.name}: {outcome}: {detail}"
