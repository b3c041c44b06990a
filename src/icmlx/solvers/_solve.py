"""One call for users: ``solve(A, b)`` (like ``pyamg.solve``), and the set-up/solve split behind it,
``amg_setup(A)`` → `AMGSolver` → ``solver.solve(b)`` for many right-hand sides."""

import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import is_traced
from .._results import RESULTS, raise_if_failed
from ._amg._build import build_hierarchy
from ._amg._hierarchy import EllMatrix
from ._amg_solver import (
    _BLOCK_ROWS_READ,
    BLOCK_FILL,
    METHODS,
    AMGSolver,
)
from ._convert import as_scipy_csr, check_square
from ._solution import LinearSolution
from ._sparse import SparseMatrix

__all__ = ["AMGSolver", "amg_setup", "solve"]


def amg_setup(A: Any, *, near_nullspace: Any = None, block_size: int | None = None, strength: Any = None,
              relaxation: Any = None, cycle: str = "V", method: str = "auto", max_coarse: int = 500,
              max_levels: int = 10, improve_candidates: int = 4, dtype: Any = None,
              reuse_pattern: bool = False) -> AMGSolver:
    r"""Set up smoothed-aggregation multigrid for ``A`` (eager NumPy/SciPy; returns JAX arrays).

    Per level: strength of connection on the node graph (symmetric by default), standard aggregation of the
    strong graph (PyAMG's greedy passes), the tentative prolongator ``T`` from a thin QR of the candidates ``B``
    on each aggregate (so ``B`` lies exactly in the range of ``T``, and the coarse candidates are the ``R``
    factors), Jacobi smoothing on ``A`` itself,

    $$
    P = \bigl(I - \tfrac{4}{3\rho(D^{-1}A)} D^{-1}A\bigr) T, \qquad A_c = P^\top A P,
    $$

    down to at most ``max_coarse`` unknowns, solved by a dense pseudo-inverse. ``method="auto"`` takes CG for a
    symmetric ``A`` with a positive diagonal (the cycle is then symmetric positive definite) and GMRES(30)
    otherwise; a ``A`` with a non-positive diagonal entry gets its hierarchy on the M-matrix envelope
    (`m_matrix_envelope`) as the preconditioner of the Krylov iteration on ``A``.

    A complex ``A`` gets complex smoothed aggregation on ``A`` itself: strength from $|a_{ij}|$, the candidates'
    QR with conjugated inner products, restriction $P^H$ and $A_c = P^H A P$; CG when ``A`` is Hermitian with a
    real positive diagonal, GMRES otherwise (complex symmetric Helmholtz with absorption). It needs a nonzero
    diagonal and the symmetric strength, and does not keep a pattern (``reuse_pattern=False``).

    Args:
      A: the n × n matrix: SciPy sparse in any format (a BSR matrix gives ``block_size``), BCOO, dense or
        `SparseMatrix` (concrete).
      near_nullspace: ``float[n, k]`` candidates ``B`` with ``A B ≈ 0`` (default: the constant vector);
        `rigid_body_modes` for elasticity.
      block_size: dofs per node (default: the BSR block size, else 1); strength is measured between nodes.
      strength: an `AbstractStrength` (default ``SymmetricStrength(theta=0.0)``;
        `EvolutionStrength` for anisotropic problems) or ``"symmetric"``, ``"evolution"``.
      relaxation: an `AbstractRelaxation` (default ``ChebyshevRelaxation(degree=3)``
        for symmetric ``A``, which needs no colouring; ``JacobiRelaxation()`` otherwise;
        ``GaussSeidelRelaxation()`` is a multicolour symmetric sweep) or ``"chebyshev"``,
        ``"jacobi"``, ``"gauss_seidel"``.
      cycle: ``"V"`` or ``"W"``.
      method: ``"auto"``, ``"cg"``, ``"gmres"`` or ``"bicgstab"``.
      max_coarse: largest coarsest level.
      max_levels: cap on the number of levels.
      improve_candidates: damped-Jacobi sweeps on ``A B = 0`` applied to ``B`` on the finest level.
      dtype: floating dtype of the solve (default: JAX's default float).
      reuse_pattern: also keep the symbolic set-up, so that `AMGSolver.update` recomputes the hierarchy
        of another matrix on the same pattern in JAX (jittable); the values of this first hierarchy then come
        from that JAX numeric set-up as well. Needs a positive diagonal.

    Returns:
      An `AMGSolver`; ``solver.solve(b)`` solves for one right-hand side (jit/vmap it for many).

    Raises:
      ValueError: ``A`` not square, empty, with NaN/Inf or an empty row; ``near_nullspace`` of the wrong shape,
        non-finite or rank-deficient; ``block_size`` not dividing ``n``; an unknown ``cycle``/``method``/strategy;
        a graph that does not coarsen below the dense limit.
      TypeError: an unsupported matrix type, or called under ``jax.jit``.

    References:
      Vaněk, Mandel & Brezina, Computing 56 (1996); Bell, Olson & Schroder, PyAMG (JOSS 2023).

    Examples:
      >>> import numpy as np, scipy.sparse as sp
      >>> from icmlx.solvers import amg_setup
      >>> T = sp.diags([-np.ones(39), 2 * np.ones(40), -np.ones(39)], [-1, 0, 1])
      >>> A = (sp.kron(T, sp.eye(40)) + sp.kron(sp.eye(40), T)).tocsr()
      >>> solver = amg_setup(A, max_coarse=50)
      >>> sol = solver.solve(np.ones(1600))
      >>> bool(np.linalg.norm(np.ones(1600) - A @ np.asarray(sol.value, float)) <= 1e-5 * 40), solver.method
      (True, 'cg')
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got method={method!r}")
    _refuse_traced(A, "amg_setup")
    H, symmetric, on, pattern, K = build_hierarchy(
        A, near_nullspace=near_nullspace, block_size=block_size, strength=strength, relaxation=relaxation,
        cycle=cycle, max_coarse=max_coarse, max_levels=max_levels, improve_candidates=improve_candidates,
        dtype=dtype, reuse_pattern=reuse_pattern)
    if method == "auto":
        method = "cg" if symmetric and on == "A" else "gmres"
    if pattern is not None:
        return AMGSolver(H, K, method, H.n, on, pattern)
    if K is None:  # (an envelope hierarchy: the iteration runs on A itself, not on the finest operator)
        K = EllMatrix.from_scipy(as_scipy_csr(A, name="A"), num_rows=H.sizes[0], num_cols=H.sizes[0],
                                 pad_identity=True, dtype=H.coarse_inv.dtype)
    return AMGSolver(H, K, method, H.n, on)


def solve(A: Any, b: Any, *, rtol: float | None = None, atol: float = 0.0, max_steps: int | None = None,
          near_nullspace: Any = None, method: str = "auto", throw: bool = True, **setup: Any) -> LinearSolution:
    r"""Solve ``A x = b`` with smoothed-aggregation multigrid and a Krylov method: ``amg_setup`` then ``solve``.

    Like ``pyamg.solve``: CG preconditioned by a symmetric V-cycle for symmetric ``A`` with a positive diagonal,
    GMRES(30) with the cycle otherwise. A real nonsymmetric ``A`` with a positive diagonal (convection–diffusion,
    upwinded transport) gets GMRES(30) preconditioned by nonsymmetric multigrid, `air_setup` (approximate ideal
    restriction), unless ``near_nullspace``, an explicit ``method`` or an option only smoothed aggregation takes
    (``strength``, ``relaxation``, ``cycle``, ``block_size``, ``improve_candidates``) asks for `amg_setup`; should
    AIR + GMRES not converge, smoothed aggregation + GMRES runs with the same budget. Stops when the true residual
    meets $\|b - A x\|_2 \le \max(\mathrm{rtol}\,\|b\|_2, \mathrm{atol})$.

    A symmetric matrix with a positive diagonal may still be indefinite (Helmholtz, $K - k^2 M$). CG then meets
    a non-positive curvature $p^\top A p \le 0$ (usually in its first step, the cycle amplifying exactly the
    smooth modes of negative energy) and ends with ``breakdown``; with ``method="auto"`` `solve` then runs
    BiCGStab, which needs neither symmetry nor definiteness, preconditioned by the same hierarchy (no second
    set-up). If that fails too, the error names the cause and the methods to pass. ``sol.method`` and
    ``sol.method_reason`` record which method produced the answer and why. A symmetric matrix given without
    ``near_nullspace`` whose pattern comes in dense 2 × 2 or 3 × 3 blocks (a vector PDE with interleaved dofs, or
    a ``block_size``/BSR block above 1) gets a ``UserWarning`` and a note in ``method_reason``: for elasticity
    ``near_nullspace=rigid_body_modes(coords)`` usually cuts the iterations several-fold.

    Args:
      A: the n × n matrix (SciPy sparse in any format, BCOO, dense or ``SparseMatrix``; concrete).
      b: right-hand side ``float[n]``.
      rtol: relative tolerance. ``None`` (the default): ``1e-5`` in float32, ``1e-8`` in float64, or the
        rounding floor ``ε‖|A||x| + |b|‖₂`` of the working precision where that is larger (the rule in
        `AMGSolver.solve`), so a default float32 call on a large system succeeds at the accuracy float32
        allows; an explicit ``rtol`` is held as given.
      atol: absolute tolerance.
      max_steps: cap on Krylov steps (default 1000).
      near_nullspace: ``float[n, k]`` near-nullspace candidates (default: constants); e.g.
        `rigid_body_modes` for elasticity.
      method: ``"auto"``, ``"cg"``, ``"gmres"`` or ``"bicgstab"``.
      throw: raise unless ``result`` is ``RESULTS.successful``.
      **setup: further keyword arguments of `amg_setup` (``strength``, ``relaxation``, ``cycle``,
        ``block_size``, ``max_coarse``, ``max_levels``, ``improve_candidates``, ``dtype``).

    Returns:
      A `LinearSolution` with ``stats["num_steps"]`` (of the method that produced ``value``), a true status,
      ``method`` and ``method_reason``.

    Raises:
      ValueError, TypeError: as in `amg_setup` and `AMGSolver.solve`; a ``TypeError`` for a traced BCOO or dense
        ``A`` (under ``jit``/``grad``/``vmap``), naming the calls that take one (a hierarchy built eagerly with
        `amg_setup` and used under ``jit``, or a `SparseMatrix` with concrete indices).
      RuntimeError: with ``throw=True``, when the tolerance was not met.

    References:
      Vaněk, Mandel & Brezina, Computing 56 (1996); Saad, *Iterative Methods for Sparse Linear Systems* (2003);
      Manteuffel, Ruge & Southworth, SIAM J. Sci. Comput. 40 (2018) A4105 (ℓAIR, the nonsymmetric choice);
      Arioli, Demmel & Duff, SIAM J. Matrix Anal. Appl. 10 (1989) (the backward-error floor of the default rule).

    Examples:
      >>> import numpy as np, scipy.sparse as sp
      >>> from icmlx.solvers import solve
      >>> A = sp.diags([-np.ones(299), 2 * np.ones(300), -np.ones(299)], [-1, 0, 1], format="csr")
      >>> sol = solve(A, np.ones(300), rtol=1e-5)
      >>> bool(np.linalg.norm(np.ones(300) - A @ np.asarray(sol.value, float)) <= 1e-5 * np.sqrt(300))
      True
      >>> sol.method
      'cg'
      >>> H = (A * 300**2 - 30.0**2 * sp.eye(300)).tocsr()  # -u'' - k²u, k = 30: indefinite
      >>> sol = solve(H, np.ones(300))
      >>> sol.method, "CG broke down" in sol.method_reason
      ('bicgstab', True)
    """
    unknown = set(setup) - {"strength", "relaxation", "cycle", "block_size", "max_coarse", "max_levels",
                            "improve_candidates", "dtype"}
    if unknown:
        raise TypeError(f"solve() got unexpected keyword arguments {sorted(unknown)}; see amg_setup for the set-up "
                        "options")
    if not isinstance(A, SparseMatrix):
        _refuse_traced(A, "solve")
    if isinstance(A, SparseMatrix) and is_traced(A.vals):
        solver, values = _traced_setup(A, near_nullspace, method, setup)
        solver = solver.update(values)
        reason = (f"method={method!r} was passed" if method != "auto" else
                  "A's values are traced, so its symmetry is unknown: GMRES holds for any nonsingular A")
    else:
        solver = _air_for_transport(A, near_nullspace, method, setup)
        if solver is not None:
            reason = _AIR_REASON
        else:
            solver = amg_setup(A, near_nullspace=near_nullspace, method=method, **setup)
            reason = f"method={method!r} was passed" if method != "auto" else _auto_reason(solver)
        if near_nullspace is None and solver.method == "cg":
            bs = _vector_block_size(A, setup.get("block_size"))
            if bs > 1:
                advice = (f"A looks like a vector PDE ({bs} dofs per node: its nonzeros come in {bs}×{bs} "
                          "blocks) and no near_nullspace was given, so the hierarchy knows only the constant "
                          "vectors; for elasticity, near_nullspace=rigid_body_modes(coords) (the rotations as well) "
                          "usually cuts the iterations several-fold")
                reason = f"{reason}; {advice}"
                warnings.warn(f"solve: {advice}", UserWarning, stacklevel=2)
    sol = solver.solve(b, rtol=rtol, atol=atol, max_steps=max_steps, throw=False)
    if reason is _AIR_REASON and not is_traced(sol.result._value) and not bool(sol.result == RESULTS.successful):
        # AIR's splitting reads strength from negative off-diagonals: on a matrix far from an M-matrix its cycle
        # can fail where the aggregation cycle holds, so smoothed aggregation + GMRES gets the same budget
        from .._results import result_name

        air_steps, air_status = int(sol.num_steps), result_name(sol.result)
        solver = amg_setup(A, method=method, **setup)
        sol = solver.solve(b, rtol=rtol, atol=atol, max_steps=max_steps, throw=False)
        sa = _auto_reason(solver).removeprefix("method='auto': A is not symmetric, so ")
        reason = f"{_AIR_REASON}, but AIR + GMRES ended with {air_status} after {air_steps} steps, so {sa} took over"
    if method == "auto" and solver.method == "cg" and not is_traced(sol.result._value) and bool(
            (sol.result == RESULTS.breakdown) | (sol.result == RESULTS.nonfinite)):
        # CG met a non-positive curvature pᵀAp (or rᵀBr): A, or its cycle, is not positive definite. BiCGStab
        # needs neither symmetry nor definiteness and takes the same hierarchy as its preconditioner.
        cg_steps = int(sol.num_steps)
        fallback = AMGSolver(solver.hierarchy, solver.A, "bicgstab", solver.n, solver.hierarchy_on)
        sol = fallback.solve(b, rtol=rtol, atol=atol, max_steps=max_steps, throw=False)
        reason = (f"{reason}, but CG broke down after {cg_steps} step(s) (a non-positive curvature: A is "
                  "indefinite or its cycle is not positive definite), so BiCGStab preconditioned by the same "
                  "hierarchy took over")
        sol = LinearSolution(sol.value, sol.result, sol.stats, "bicgstab", reason)
        if throw and not bool(sol.result == RESULTS.successful):
            from .._results import result_name

            name = result_name(sol.result)
            res = float(sol.residual_norm) / max(float(jnp.linalg.norm(jnp.asarray(b, sol.value.dtype))), 1e-300)
            fix = ("The working precision cannot reach rtol here: enable float64 "
                   "(jax.config.update('jax_enable_x64', True)), loosen rtol, or leave rtol=None (the rounding "
                   "floor)" if name == "accuracy_limit" else
                   "Pass method='bicgstab' with a larger max_steps, or method='gmres', or use GRANS() (flexible "
                   "GCR, for symmetric indefinite systems)")
            raise RuntimeError(
                f"{name}: solve: A is symmetric but not positive definite (CG broke down after {cg_steps} "
                f"step(s) with a non-positive curvature pᵀAp); BiCGStab with the same multigrid preconditioner "
                f"then stopped after {int(sol.num_steps)} steps at relative residual {res:.2e}. {fix}; "
                "throw=False returns the result record.")
        return sol
    sol = LinearSolution(sol.value, sol.result, sol.stats, solver.method, reason)
    return raise_if_failed(sol, sol.result, throw)


_AIR_REASON = ("method='auto': A is not symmetric and has a positive diagonal (transport-like, e.g. "
               "convection-dominated), so GMRES(30) preconditioned by AIR (air_setup: approximate ideal "
               "restriction, built for nonsymmetric operators)")
# the set-up options that only smoothed aggregation knows: passing one asks for amg_setup
_SA_ONLY = ("strength", "relaxation", "cycle", "block_size", "improve_candidates")


def _air_for_transport(A: Any, near_nullspace: Any, method: str, setup: dict) -> "AMGSolver | None":
    """``air_setup(A)`` when ``method="auto"`` meets a real, nonsymmetric matrix with a positive diagonal and no
    option that only smoothed aggregation takes; ``None`` otherwise (or when AIR's coarsening stalls).

    On upwinded 2-D convection–diffusion (``benchmarks/solvers_amg.py --problems convdiff``) AIR + GMRES takes
    6-7 iterations at Péclet 100 and 1,000 where smoothed aggregation + GMRES takes 19-98 at 16k unknowns and
    does not converge in 1,000 at Péclet 1,000 with 65k."""
    if method != "auto" or near_nullspace is not None or any(k in setup for k in _SA_ONLY):
        return None
    from ._amg._air import air_setup
    from ._classify import classify, input_eps

    try:
        M = as_scipy_csr(A, name="A", allow_complex=True)
    except (TypeError, ValueError):  # (amg_setup raises its own error for the same input)
        return None
    if np.iscomplexobj(M.data) or not M.nnz:
        return None
    cls = classify(M, input_eps(A))
    if cls.symmetric or not cls.positive_diagonal:
        return None
    try:
        return air_setup(M, **{k: setup[k] for k in ("max_coarse", "max_levels", "dtype") if k in setup})
    except ValueError:  # coarsening stalled above the dense coarsest limit: smoothed aggregation instead
        return None


def _refuse_traced(A: Any, where: str) -> None:
    """A traced matrix (a BCOO or dense array under ``jit``/``grad``/``vmap``) cannot reach the host set-up: say
    which calls can take it instead."""
    leaves = (A.data, A.indices) if hasattr(A, "indices") and hasattr(A, "data") else (A,)
    if not is_traced(leaves):
        return
    raise TypeError(
        f"{where}: A is traced ({type(A).__name__} under jax.jit, grad or vmap), and the multigrid set-up "
        "(aggregation, on the host) needs a concrete matrix. Build the hierarchy eagerly, outside the traced "
        "function: solver = amg_setup(A0), then call solver.solve(b), or cg(op, b, preconditioner=solver) / "
        "gmres / bicgstab with the traced matrix as op, under jit; for new values on a fixed pattern, "
        "amg_setup(A0, reuse_pattern=True) outside and solver.update(values).solve(b) inside; or pass "
        "SparseMatrix(rows, cols, vals, shape) with concrete rows/cols and traced vals, which solve sets up from "
        "the pattern")


def _vector_block_size(A: Any, block_size: Any) -> int:
    """Dofs per node of a vector PDE: ``block_size`` when given, a BSR matrix's block size, else the ``bs`` in
    (3, 2) for which the ``bs × bs`` blocks of ``A``'s pattern that hold a nonzero are nearly full (at least
    `BLOCK_FILL` of their entries stored: interleaved ordering, as scikit-fem and PyAMG assemble vector elements,
    some couplings exactly zero on structured meshes; counted on up to ``_BLOCK_ROWS_READ`` evenly spaced block
    rows); 1 when none fits (a scalar PDE's pattern fills a small
    fraction of its blocks)."""
    if block_size is not None:
        return int(block_size)
    bsr = getattr(A, "blocksize", None)
    if bsr is not None and bsr[0] == bsr[1] and bsr[0] > 1:
        return int(bsr[0])
    if not hasattr(A, "tocsr"):
        return 1
    import scipy.sparse as sp  # set-up only

    M = sp.csr_matrix(A)
    n = M.shape[0]
    for bs in (3, 2):
        if n % bs or n < 2 * bs or M.nnz == 0:
            continue
        # the fill is counted on evenly spaced block rows (all of them up to _BLOCK_ROWS_READ): a pattern copy and
        # block products of the whole matrix would be the largest host transient of solve() on a large system
        nb = n // bs
        take = np.unique(np.linspace(0, nb - 1, min(nb, _BLOCK_ROWS_READ)).astype(np.int64))
        sub = M[(take[:, None] * bs + np.arange(bs)).ravel()]
        pat = sp.csr_matrix((np.ones(sub.nnz), sub.indices, sub.indptr), shape=sub.shape)
        pat.sum_duplicates()
        block_row = np.repeat(np.arange(sub.shape[0]) // bs, np.diff(pat.indptr))
        blocks = np.unique(block_row * nb + pat.indices // bs).size
        if pat.nnz >= BLOCK_FILL * blocks * bs * bs:
            return bs
    return 1


def _auto_reason(solver: AMGSolver) -> str:
    """Why ``method="auto"`` gave the set-up's Krylov method (the matrix class `amg_setup` found)."""
    if solver.method == "cg":
        return "method='auto': A is symmetric with a positive diagonal, so CG with the symmetric V-cycle"
    if solver.hierarchy_on == "envelope":
        return ("method='auto': A has a non-positive diagonal entry (indefinite or of mixed sign), so GMRES(30) "
                "with the cycle of its M-matrix envelope")
    return "method='auto': A is not symmetric, so GMRES(30) with the V-cycle"


def _traced_setup(A: SparseMatrix, near_nullspace: Any, method: str, setup: dict) -> tuple[AMGSolver, jax.Array]:
    """The symbolic set-up of a ``SparseMatrix`` whose values are traced (under ``jit``/``grad``), and its values
    in the set-up's order: the hierarchy is built from the pattern (a placeholder M-matrix with that pattern) and
    then computed from the traced values by `AMGSolver.update`, so the solve differentiates in the values."""
    if is_traced((A.rows, A.cols)):
        raise TypeError("solve: A is a SparseMatrix whose indices (rows/cols) are traced; its sparsity pattern must "
                        "be concrete. Close over concrete indices (under jit, convert NumPy indices inside "
                        "`with jax.ensure_compile_time_eval():`), or call amg_setup(A0, reuse_pattern=True) "
                        "outside and solver.update(values) inside")
    import scipy.sparse as sp  # set-up only

    n = check_square(A.shape, "A")
    rows, cols = np.asarray(A.rows, np.int64), np.asarray(A.cols, np.int64)
    pattern = sp.coo_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n)).tocsr()
    pattern.sum_duplicates()
    pattern.data[:] = -1.0
    pattern = (pattern + sp.diags(np.asarray(abs(pattern).sum(axis=1)).ravel() + 1.0)).tocsr()
    if method == "auto":
        method = "gmres"  # the symmetry of traced values is unknown: GMRES holds for any nonsingular A
    with jax.ensure_compile_time_eval():  # the set-up of the placeholder runs eagerly, as outside the trace
        solver = amg_setup(pattern, near_nullspace=near_nullspace, method=method, reuse_pattern=True,
                           **{"dtype": A.vals.dtype, **setup})
    keys = np.asarray(solver.pattern.rows, np.int64) * n + np.asarray(solver.pattern.cols, np.int64)
    pos = np.searchsorted(keys, rows * n + cols)
    values = jnp.zeros((keys.size,), A.vals.dtype).at[jnp.asarray(pos)].add(A.vals)
    return solver, values

