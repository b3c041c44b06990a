"""`AMGSolver`: a multigrid hierarchy with its Krylov method, as a lineax solver (the type `amg_setup` and
`air_setup` return; apart from the set-ups so that both import it)."""

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np

from .._inputs import to_device
from .._results import RESULTS, raise_if_failed
from ._amg._build import freed_after_compile
from ._amg._hierarchy import EllMatrix, MultilevelHierarchy
from ._amg._numeric import numeric_setup_jit
from ._convert import as_scipy_csr, as_vector, check_tolerances, positive_int
from ._krylov._methods import bicgstab_loop, cg_loop, gmres_loop, implicit_solve, transposed_preconditioner
from ._solution import LinearSolution

__all__ = ["AMGSolver"]


METHODS = ("auto", "cg", "gmres", "bicgstab")
_RESTART = 30  # GMRES cycle length


# the share of stored entries in the nonzero bs × bs blocks above which A is taken for a vector PDE: 3-D P1
# elasticity from scikit-fem fills 95% of its 3 × 3 blocks, scalar stencils under a third of theirs
BLOCK_FILL = 0.9
_BLOCK_ROWS_READ = 16384  # block rows that _vector_block_size reads (evenly spaced)

_LOOPS = {"cg": (cg_loop, ()), "bicgstab": (bicgstab_loop, ()), "gmres": (gmres_loop, (_RESTART,))}


def default_rtol(dtype: Any) -> float:
    """The default relative tolerance of a working dtype: ``1e-8`` in float64, ``1e-5`` in float32."""
    return 1e-8 if jnp.finfo(dtype).dtype == jnp.float64 else 1e-5  # (complex128: 1e-8 too)


class AMGSolver(lx.AbstractLinearSolver):
    r"""A multigrid hierarchy of ``A`` and the Krylov method it preconditions; `solve` solves ``A x = b`` for one
    right-hand side (jit- and vmap-safe: the set-up is done, only arrays remain).

    Build with `amg_setup` (smoothed aggregation) or `air_setup` (approximate ideal restriction, for nonsymmetric
    ``A``; ``builder`` says which). `update` and `values_of`, which redo the numeric set-up on a kept sparsity
    pattern, exist for ``amg_setup(A, reuse_pattern=True)`` only: AIR's set-up (C/F splitting, local restriction
    solves) is eager and keeps no pattern, so a new matrix takes a new ``air_setup``. The iteration always runs on
    ``A`` itself (padded with identity rows to the hierarchy's size); one multigrid cycle preconditions each step.
    The solve is differentiable in ``b`` and in the values given to `update` by implicit differentiation: the
    adjoint system $A^\top\lambda = \bar x$ is solved by the same method, preconditioned by the same hierarchy
    (its transposed cycle for GMRES/BiCGStab).

    It is a ``lineax.AbstractLinearSolver``: ``lx.linear_solve(op, b, amg_setup(A))`` solves with the
    hierarchy of ``A`` as the preconditioner of the set-up's Krylov method applied to the lineax operator ``op``
    (``A`` itself, or a matrix close to it); `as_preconditioner` gives the cycle as a lineax operator for
    ``lx.CG``/``lx.GMRES``.

    Attributes:
      hierarchy: the `MultilevelHierarchy` (its ``ops[0]`` is ``A``, or the M-matrix
        envelope of ``A`` when ``A`` has a non-positive diagonal entry: see ``hierarchy_on``).
      A: ``A`` as a padded `EllMatrix`.
      method: ``"cg"``, ``"gmres"`` or ``"bicgstab"``.
      n: the size of ``A``.
      hierarchy_on: ``"A"`` or ``"envelope"``.
      pattern: with ``amg_setup(reuse_pattern=True)``, the symbolic set-up that `update` reuses (its
        ``rows``/``cols`` give the order of a values array), else ``None``.
      builder: ``"amg_setup"`` or ``"air_setup"``, the set-up that built the hierarchy.
    """

    hierarchy: MultilevelHierarchy
    A: EllMatrix
    method: str = eqx.field(static=True)
    n: int = eqx.field(static=True)
    hierarchy_on: str = eqx.field(static=True, default="A")
    pattern: Any = None  # the symbolic set-up (amg_setup(reuse_pattern=True)), what update() reuses
    builder: str = eqx.field(static=True, default="amg_setup")

    def __repr__(self) -> str:
        H = self.hierarchy
        return (f"AMGSolver(n={self.n}, method={self.method!r}, num_levels={H.num_levels}, "
                f"relaxation={H.relaxation!r}, cycle={H.cycle!r}, hierarchy_on={self.hierarchy_on!r}, "
                f"builder={self.builder!r})")

    def as_preconditioner(self, n: int | None = None) -> lx.FunctionLinearOperator:
        r"""One multigrid cycle $r \mapsto B r \approx A^{-1} r$ as a lineax operator on ``float[n]`` vectors.

        For ``options={"preconditioner": ...}`` of ``lx.CG`` (the operator is tagged symmetric positive
        semidefinite when the set-up chose CG, whose cycle is symmetric), ``lx.GMRES`` or ``lx.BiCGStab``. The
        solver itself is accepted as ``preconditioner=`` by `cg`, ``gmres`` and ``bicgstab``.

        Args:
          n: the vector length (default and only accepted value: the size of ``A``).

        Examples:
          >>> import numpy as np, scipy.sparse as sp, jax.numpy as jnp, lineax as lx
          >>> from icmlx.solvers import SparseMatrix, amg_setup
          >>> A = sp.diags([-np.ones(99), 2 * np.ones(100), -np.ones(99)], [-1, 0, 1], format="csr")
          >>> solver = amg_setup(A, max_coarse=10)
          >>> op = SparseMatrix.from_scipy(A).with_tags(lx.positive_semidefinite_tag)
          >>> sol = lx.linear_solve(op, jnp.ones(100), lx.CG(rtol=1e-5, atol=0.0),
          ...                       options={"preconditioner": solver.as_preconditioner()})
          >>> int(sol.stats["num_steps"]) < 10
          True
        """
        if n is not None and n != self.n:
            raise ValueError(f"AMGSolver.as_preconditioner: this set-up is for {self.n}-vectors, got n={n}")
        dtype = self.A.val.dtype
        tags = (lx.symmetric_tag, lx.positive_semidefinite_tag) if self.method == "cg" else ()
        return lx.FunctionLinearOperator(self.hierarchy.as_preconditioner(self.n),
                                         jax.ShapeDtypeStruct((self.n,), dtype), tags=tags)

    # -- lineax interface --------------------------------------------------------------------------------------
    def init(self, operator: lx.AbstractLinearOperator, options: dict[str, Any]) -> tuple:
        if not isinstance(operator, lx.AbstractLinearOperator):
            raise TypeError(f"AMGSolver.init: operator must be a lineax operator, got {type(operator).__name__}")
        if operator.in_size() != self.n or operator.out_size() != self.n:
            raise ValueError(f"AMGSolver: this set-up is for {self.n} × {self.n} matrices, the operator is "
                             f"{operator.out_size()} × {operator.in_size()}")
        return operator, self.hierarchy.as_preconditioner(self.n), False

    def compute(self, state: tuple, vector: jax.Array, options: dict[str, Any]):
        operator, cycle, transposed = state
        dtype = self.A.val.dtype
        M = transposed_preconditioner(cycle, vector) if transposed and self.method != "cg" else cycle
        loop, static = _LOOPS[self.method]
        rtol = jnp.asarray(options.get("rtol", default_rtol(dtype)), vector.dtype)
        atol = jnp.asarray(options.get("atol", 0.0), vector.dtype)
        y0 = options.get("y0", jnp.zeros_like(vector))
        x, result, stats = implicit_solve(loop, operator.mv, M, None, vector, y0, rtol, atol, static,
                                         int(options.get("max_steps", 1000)), False, self.method == "cg", False)
        ok = result == RESULTS.successful
        lx_result = lx.RESULTS.where(ok, lx.RESULTS.successful, lx.RESULTS.where(
            result == RESULTS.breakdown, lx.RESULTS.breakdown, lx.RESULTS.max_steps_reached))
        return x, lx_result, {**stats, "result": result}

    def transpose(self, state: tuple, options: dict[str, Any]):
        operator, cycle, transposed = state
        return (operator.transpose(), cycle, not transposed), options

    def conj(self, state: tuple, options: dict[str, Any]):
        return state, options

    def assume_full_rank(self) -> bool:
        return True

    def values_of(self, A: Any) -> jax.Array:
        """The values of a concrete matrix on this solver's pattern, in the order `update` takes (eager).

        Raises:
          ValueError: the solver keeps no pattern, ``A`` has the wrong shape, NaN/Inf entries or a nonzero outside
            the pattern.
        """
        P = self._need_pattern("values_of")
        M = as_scipy_csr(A, name="A").tocoo()
        if M.shape != (self.n, self.n):
            raise ValueError(f"AMGSolver.values_of: A must be {self.n} × {self.n} (the set-up's size), got {M.shape}")
        rows, cols = np.asarray(P.rows, np.int64), np.asarray(P.cols, np.int64)
        keys = rows * self.n + cols
        q = M.row.astype(np.int64) * self.n + M.col
        pos = np.minimum(np.searchsorted(keys, q), keys.size - 1)
        off = (keys[pos] != q) & (M.data != 0)
        if np.any(off):
            i = int(np.nonzero(off)[0][0])
            raise ValueError(f"AMGSolver.update: A has a nonzero at ({int(M.row[i])}, {int(M.col[i])}), outside the "
                             "set-up's sparsity pattern; run amg_setup on it instead")
        if not np.all(np.isfinite(M.data)):
            raise ValueError("AMGSolver.values_of: A has NaN or Inf entries; a hierarchy built from them would be NaN")
        vals = np.zeros(keys.size)
        np.add.at(vals, pos[~off], M.data[~off])
        return to_device(vals, self.A.val.dtype)

    def update(self, A: Any) -> "AMGSolver":
        r"""The solver of a new matrix on the same sparsity pattern: the numeric set-up redone in JAX.

        Keeps the symbolic set-up of the first matrix (aggregates, candidate columns kept, the patterns of
        ``T``, ``P`` and ``PᵀAP`` and the pair lists of their products) and recomputes, with gathers and segment
        sums, ``ρ(D⁻¹A)``, the improved candidates and their per-aggregate QR, $P = (I - \omega D^{-1}A)T$,
        $A_c = P^\top A P$ on every level, the relaxation data and the coarsest pseudo-inverse. With a
        values array the call is jittable and differentiable (``jax.jit(lambda s, v: s.update(v))`` compiles
        once for every matrix of the pattern); ``method`` stays that of the first matrix, so the new one must be
        of the same class (symmetric with a positive diagonal for CG). The aggregates do not follow the new
        values: with the default ``SymmetricStrength(theta=0)`` they depend on the pattern only anyway.

        Args:
          A: ``float[nnz]`` values in the order of ``solver.pattern.rows``/``cols`` (a JAX array, traced or not),
            or a concrete matrix of the same size whose nonzeros lie on the pattern (see `values_of`).

        Returns:
          A new `AMGSolver` (same shapes: a jitted ``solve`` does not compile again).

        Raises:
          ValueError: the solver was set up without ``reuse_pattern=True`` or by `air_setup` (whose set-up keeps
            no pattern); values of the wrong length or (when concrete) with NaN/Inf; a matrix off the pattern.
        """
        P = self._need_pattern("update")
        if isinstance(A, (jax.Array, np.ndarray)) and jnp.ndim(A) == 1:
            if A.shape[0] != P.nnz:
                raise ValueError(f"AMGSolver.update: values must have length {P.nnz} (solver.pattern.rows), got "
                                 f"{A.shape[0]}")
            if not isinstance(A, jax.core.Tracer) and not bool(np.all(np.isfinite(np.asarray(A)))):
                raise ValueError("AMGSolver.update: the values have NaN or Inf entries; a hierarchy built from them "
                                 "would be NaN")
            values = jnp.asarray(A, self.A.val.dtype)
        else:
            values = self.values_of(A)
        H, K = numeric_setup_jit(P, values)  # compiled once per pattern (an eager call reuses amg_setup's)
        return AMGSolver(H, K, self.method, self.n, self.hierarchy_on, P)

    def _need_pattern(self, where: str):
        if self.builder == "air_setup":
            raise ValueError(f"AMGSolver.{where}: this solver was built by air_setup, whose set-up (C/F splitting, "
                             "local restriction solves) runs eagerly in NumPy and keeps no sparsity pattern to "
                             "update; call air_setup(A_new) for the new matrix (or amg_setup(A, "
                             "reuse_pattern=True), smoothed aggregation, for a jittable update)")
        if self.pattern is None:
            raise ValueError(f"AMGSolver.{where} needs the symbolic set-up: build the solver with "
                             "amg_setup(A, reuse_pattern=True)")
        return self.pattern

    def solve(self, b: Any, x0: Any = None, *, rtol: float | None = None, atol: float = 0.0,
              max_steps: int | None = None, throw: bool = True) -> LinearSolution:
        r"""Solve ``A x = b`` to $\|b - A x\|_2 \le \max(\mathrm{rtol}\,\|b\|_2, \mathrm{atol})$ (true residual;
        the default ``rtol=None`` adds the rounding floor below).

        Args:
          b: right-hand side ``float[n]``.
          x0: initial guess (zeros if ``None``).
          rtol: relative tolerance. ``None`` (the default) asks for ``1e-5`` in float32 and ``1e-8`` in float64,
            *or* a residual at the working precision's rounding floor when that tolerance is out of reach (see
            below); an explicit ``rtol`` is held as given.
          atol: absolute tolerance.
          max_steps: cap on Krylov steps (default 1000).
          throw: raise unless ``result`` is ``RESULTS.successful``.

        With ``rtol=None`` the stopping rule is

        $$
        \|b - A x\|_2 \le \max\bigl(r_0 \|b\|_2,\ \mathrm{atol},\ \varepsilon\,\|\,|A|\,|x| + |b|\,\|_2\bigr),
        $$

        ``r₀`` the dtype's default and ``ε`` its machine epsilon. The last term bounds the rounding error of
        evaluating ``b − A x`` itself, so a residual below it is as small as the precision can certify (``x`` has
        a normwise backward error of order ``ε``). A float32 solve of a large, ill-conditioned system (2-D Poisson
        past about 64², whose attainable relative residual is about ``ε κ(A)``) then ends ``successful`` at that
        floor rather than with ``accuracy_limit``; ``stats["residual_floor"]`` holds the bound.

        Returns:
          A `LinearSolution` (``stats``: ``num_steps``, ``residual_norm``,
          ``residual_history``, ``residual_floor``), as `cg` returns.

        Raises:
          ValueError: ``b`` or ``x0`` of the wrong length or with NaN/Inf, a bad tolerance or ``max_steps``.
          RuntimeError: with ``throw=True``, when the tolerance was not met (the status and what to change).
        """
        dtype = self.A.val.dtype
        floor = rtol is None  # the default: rtol_default, or the rounding floor when that is out of reach
        rtol = default_rtol(dtype) if rtol is None else rtol
        max_steps = 1000 if max_steps is None else max_steps
        rtol, atol = check_tolerances(rtol, atol, "AMGSolver.solve")
        max_steps = positive_int(max_steps, "max_steps", "AMGSolver.solve", minimum=0)
        b = as_vector(_on_host(b, dtype), self.n, name="b", dtype=dtype, allow_complex=True)
        x0 = None if x0 is None else as_vector(_on_host(x0, dtype), self.n, name="x0", dtype=dtype,
                                               allow_complex=True)
        rdt = jnp.finfo(dtype).dtype  # (tolerances are real for a complex system too)
        with freed_after_compile():  # (a first call compiles: its leftovers go before the work vectors come)
            x, result, stats = _amg_solve(self.method, self.A, self.hierarchy, b, x0, to_device(rtol, rdt),
                                          to_device(atol, rdt), max_steps, to_device(floor, bool), throw)
        return raise_if_failed(LinearSolution(x, result, stats, self.method), result, throw)


@eqx.filter_jit
def _amg_solve(method: str, A: EllMatrix, H: MultilevelHierarchy, b, x, rtol, atol, max_steps: int, floor,
               throw: bool = True):
    """The preconditioned Krylov loop and, with ``floor``, the default stopping rule's rounding-floor clause, in
    one compiled program (``floor`` a traced flag: a default and an explicit ``rtol`` share the program)."""
    loop, static = _LOOPS[method]
    n = b.shape[0]
    b = jnp.zeros((A.shape[0],), b.dtype).at[:n].set(b)  # padded with identity rows: zeros there
    x = jnp.zeros_like(b) if x is None else jnp.zeros_like(b).at[:n].set(x)
    x, result, stats = implicit_solve(loop, A.mv, H, A.val, b, x, rtol, atol, static, max_steps, False,
                                     method == "cg", throw)
    # ε‖|A||x| + |b|‖₂ bounds the rounding error of evaluating b − A x itself in the working precision: a residual
    # below it is as small as that precision can certify (Arioli, Demmel & Duff 1989, the normwise form)
    eps = jnp.finfo(b.dtype).eps
    level = eps * jnp.linalg.norm(_abs_mv(A, jnp.abs(x)) + jnp.abs(b))
    stats = {**stats, "residual_floor": level}
    held = floor & (stats["residual_norm"] <= level) & jnp.all(jnp.isfinite(x))
    result = RESULTS.where(held, RESULTS.successful, result)
    return x[:n], result, stats


def _abs_mv(A: EllMatrix, v: jax.Array) -> jax.Array:
    """``|A| v`` slot by slot, taking ``|a_ij|`` inside the loop: no ``|A|`` beside ``A`` (a copy of all its
    values, the largest temporary of the solve otherwise)."""
    def body(j, y):
        return y + jnp.abs(A.val[j]) * v[A.idx[j]]

    return jax.lax.fori_loop(1, A.idx.shape[0], body, body(0, 0.0))  # (A has a slot: its padding rows' 1)


def _on_host(v: Any, dtype: Any) -> Any:
    """A floating NumPy vector converted on the host (a device-side cast compiles a program per length)."""
    if isinstance(v, np.ndarray) and (v.dtype.kind == "f" or v.dtype.kind == "c" == np.dtype(dtype).kind):
        return np.asarray(v, np.dtype(dtype))
    return v
