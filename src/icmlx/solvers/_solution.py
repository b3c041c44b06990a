"""The one record every linear solver of ``icmlx.solvers`` returns (G-RANS and the Krylov baselines)."""

from typing import Any

import equinox as eqx

from .._results import Solution

__all__ = ["LinearSolution"]


class LinearSolution(Solution):
    r"""What `cg`, `gmres`, `bicgstab` and
    `GRANS.solve` return: an `icmlx.Solution`.

    ``result`` is ``icmlx.RESULTS.successful`` exactly when the solver's stopping rule
    $\|r\|_2 \le \max(\mathrm{rtol}\,\|b\|_2, \mathrm{atol})$ held for the true residual
    $r = b - A x$ (computed in the working dtype); otherwise ``max_steps_reached``,
    ``breakdown`` (Krylov), ``accuracy_limit`` (CG/BiCGStab: the precision cannot reach the tolerance),
    ``nonfinite`` (Krylov: the operator or preconditioner produced NaN/Inf) or ``stagnation`` (G-RANS).

    Attributes:
      value: the iterate ``x`` (``float[n]``).
      result: an ``icmlx.RESULTS`` item.
      stats: ``"num_steps"`` (iterations; matrix-vector products for GMRES), ``"residual_norm"`` (the final
        true residual norm $\|b - A x\|_2$), ``"residual_history"`` (relative residuals
        $\|r_k\|_2 / \|b\|_2$ for ``k = 0..max_steps``, NaN after the last step, kept in a fixed-size
        buffer of the loop state: true residuals for G-RANS, one per restart cycle for GMRES, the recursive
        residual for CG and BiCGStab (true at a residual replacement); `plot_residuals`
        draws it), and for G-RANS also ``"num_rejected"`` (iterations whose proposal the monotone safeguard
        rejected).
        The same entries read as attributes: ``sol.num_steps``, ``sol.residual_norm``, ...
      method: the Krylov method that produced ``value`` (``"cg"``, ``"gmres"``, ``"bicgstab"``) when `solve` or
        ``AMGSolver.solve`` ran it, else ``None``.
      method_reason: why `solve` used that method (the matrix class it found, a CG breakdown it recovered from,
        or the ``method`` passed), and any advice on the set-up (a missing near-nullspace); ``""`` elsewhere.
        Both are static (plain strings, not arrays), so a jitted or vmapped solve returns them unchanged.

    Examples:
      >>> import jax.numpy as jnp, icmlx
      >>> from icmlx.solvers import SparseMatrix, cg
      >>> sol = cg(SparseMatrix.from_dense(jnp.array([[4.0, 1.0], [1.0, 3.0]])), jnp.array([1.0, 2.0]))
      >>> sol.result == icmlx.RESULTS.successful, int(sol.num_steps), sorted(sol.stats)
      (Array(True, dtype=bool), 2, ['num_steps', 'residual_history', 'residual_norm'])
    """

    method: str | None = eqx.field(static=True, default=None)
    method_reason: str = eqx.field(static=True, default="")

    def __repr__(self) -> str:
        from .._repr import record_repr

        skip = {"method"} if self.method is None else set()
        skip |= {"method_reason"} if not self.method_reason else set()
        return record_repr(self, [f for f in ("value", "result", "stats", "method", "method_reason") if f not in skip])

    def _stat(self, name: str) -> Any:
        try:
            return self.stats[name]
        except KeyError:
            raise AttributeError(f"this LinearSolution has no {name!r} (its stats are {sorted(self.stats)})") from None

    @property
    def residual_norm(self) -> Any:
        """``stats["residual_norm"]``: the final true residual norm ``‖b − A x‖₂``."""
        return self._stat("residual_norm")

    @property
    def residual_history(self) -> Any:
        """``stats["residual_history"]``: relative residuals per step, NaN after the last (see the class)."""
        return self._stat("residual_history")

    @property
    def num_rejected(self) -> Any:
        """``stats["num_rejected"]`` (G-RANS): iterations whose proposal the monotone safeguard rejected."""
        return self._stat("num_rejected")
