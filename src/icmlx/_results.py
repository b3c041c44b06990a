"""The library's one status vocabulary and the record every iterative routine returns.

`RESULTS` extends `lineax.RESULTS` (the diffrax/optimistix anchor pattern), so a lineax status
promotes into it and ``lineax.linear_solve`` results compare against it. `Solution` is lineax's
``Solution`` shape (``value``, ``result``, ``stats``) for icmlx's own iterative routines; subpackages subclass it
to add named fields.
"""

from __future__ import annotations

import warnings
from typing import Any

import equinox as eqx
import jax
import lineax as lx
import numpy as np

from ._repr import record_repr, status_names

__all__ = ["RESULTS", "Solution", "result_name", "raise_if_failed"]


with warnings.catch_warnings():
    # Equinox warns when a subclass changes an inherited message; giving ``successful`` a name is deliberate so
    # that a successful status prints as ``RESULTS<successful>`` rather than ``RESULTS<>``.
    warnings.simplefilter("ignore")

    class RESULTS(lx.RESULTS):
        """Status codes shared by every iterative routine in icmlx.

        It extends `lineax.RESULTS` (``successful``, ``max_steps_reached``, ``singular``, ``breakdown``,
        ``stagnation``, ``conlim``, ``nonfinite_input``) with the outcomes the techniques need (``diverged``,
        ``nonfinite``, ``accuracy_limit``, ``inaccurate``, ``degenerate_bridges``). Compare with ``==`` (works
        under ``jit``); `result_name` gives the item's name on the host.

        Examples:
          >>> import icmlx
          >>> icmlx.RESULTS.successful
          icmlx.RESULTS<successful>
          >>> icmlx.result_name(icmlx.RESULTS.diverged)
          'diverged'
        """

        __module__ = "icmlx"
        successful = "successful"
        diverged = (
            "The iteration diverged (its error grew or went non-finite); the last good iterate was returned. "
            "Regularise more (a larger epsilon/ridge), or pass throw=False and inspect the result."
        )
        nonfinite = (
            "The output has non-finite (NaN or inf) entries. Check the inputs for NaN/inf or extreme scale, "
            "or regularise more."
        )
        accuracy_limit = (
            "The true residual stopped improving above the tolerance: the working precision (float32 unless x64 is "
            "on) cannot reach rtol/atol for this system.\nEnable float64 with "
            "jax.config.update('jax_enable_x64', True), or loosen rtol."
        )
        inaccurate = (
            "A fixed-work method (a set number of iterations or a set polynomial degree) ended with its accuracy "
            "check above the tolerance.\nRaise the iteration count or degree, or use the iterative method."
        )
        degenerate_bridges = (
            "Some bridges collapsed (all importance weights zero) and were left out of the M-step. "
            "Use more particles (num_particles), weaker guidance, or pass throw=False to accept the fit."
        )


def result_name(result: Any) -> str | np.ndarray:
    """The name of a concrete `RESULTS` item (``"successful"``, ``"max_steps_reached"``, ...).

    A batched (vmapped) item gives an array of names. Not for use on traced values.
    """
    cls = result._enumeration
    by_index = status_names(cls)
    value = np.asarray(result._value)
    if value.ndim == 0:
        return by_index[int(value)]
    return np.vectorize(lambda v: by_index[int(v)])(value)


def _failure_text(name: str, where: str = "") -> str:
    """The text of a failed status: its name and what happened on the first line, then the fix."""
    item = RESULTS._name_to_item[name]
    return (f"{name}{where}: {item._enumeration[item]}\n"
            "Pass throw=False to get the result record instead of this error.")


def raise_if_failed(token: Any, result: RESULTS, throw: bool) -> Any:
    """Raise when ``throw`` and ``result`` (scalar or batched) is not successful; return ``token``.

    A concrete ``result`` (an eager call) is checked on the host and raises a ``RuntimeError`` whose text is the
    item's name and message (what happened, then what to do), without the traceback of a compiled program. A
    traced ``result`` (inside the user's ``jit``) threads `equinox.branched_error_if` onto ``token`` instead,
    which raises the same text when the program runs. There the exception is made by XLA's runtime, not by
    Python code of icmlx: under ``jax.jit`` its first line is JAX's ``INTERNAL: CpuCallback error calling
    callback:`` followed by the Python frames, and the icmlx text is the exception line below them
    (``_EquinoxRuntimeError: max_steps_reached: ...``); under ``equinox.filter_jit`` it is the
    ``equinox.EquinoxRuntimeError:`` line. Nothing a library runs inside the compiled program can change the
    first line; ``throw=False`` and ``sol.result`` avoid the exception.
    """
    if not throw:
        return token
    value = result._value
    if isinstance(value, jax.core.Tracer):
        names = status_names(RESULTS)
        msgs = [_failure_text(names[i]) for i in range(len(names))]
        return eqx.branched_error_if(token, result != RESULTS.successful, value, msgs)
    codes = np.ravel(np.asarray(value))
    ok = int(RESULTS.successful._value)
    bad = codes[codes != ok]
    if bad.size:
        name = status_names(RESULTS)[int(bad[0])]
        where = f" ({bad.size} of {codes.size} in the batch)" if codes.size > 1 else ""
        raise RuntimeError(_failure_text(name, where))
    return token


class Solution(eqx.Module):
    """The record an iterative icmlx routine returns (lineax's ``Solution`` shape).

    Attributes:
      value: the answer (a solution vector, an inverse root, a fitted drift, ...).
      result: a `RESULTS` item, ``RESULTS.successful`` exactly when the routine's accuracy criterion held.
      stats: diagnostics as a dict of arrays; ``stats["num_steps"]`` is always present.
    """

    value: Any
    result: RESULTS
    stats: dict[str, Any]

    @property
    def num_steps(self):
        """``stats["num_steps"]``: the iterations the routine took."""
        return self.stats["num_steps"]

    def __repr__(self) -> str:
        # Status by name and scalar diagnostics by value (``result=successful, num_steps=12``), arrays by shape.
        return record_repr(self)
