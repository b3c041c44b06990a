r"""Nonsymmetric algebraic multigrid by approximate ideal restriction (ℓAIR) for convection-dominated problems.

A reduction-based hierarchy: the unknowns of each level split into C- and F-points, the restriction approximates
the ideal one, $R = [-A_{CF}A_{FF}^{-1},\ I]$, row by row on a small F-neighbourhood of each C-point, the
interpolation is one-point (each F-point takes the value of its strongest C-neighbour), $A_c = R A P$, and the
relaxation is FC-Jacobi (`FCJacobiRelaxation`). The host set-up (NumPy/SciPy, float64) is vectorised over nodes: the
C/F splitting runs in rounds of independent sets, and the local restriction systems are gathered into padded
batches and solved by one batched dense solve per neighbourhood-size bucket. The device side reuses the multigrid
machinery of smoothed aggregation (`MultilevelHierarchy`, its cycle, and `AMGSolver`'s Krylov loop).
"""

from typing import Any

import equinox as eqx
import numpy as np

from ..._checks import check_int, check_number
from ..._strategy import as_strategy
from .._convert import as_scipy_csr, positive_int
from ._hierarchy import _MAX_DENSE_COARSE, _nbr_max
from ._relaxation import AbstractRelaxation, JacobiRelaxation, _check_int, _check_range

__all__ = ["FCJacobiRelaxation", "air_setup"]

_AIR_METHODS = ("gmres", "bicgstab")


class FCJacobiRelaxation(AbstractRelaxation):
    r"""FC-Jacobi relaxation of a C/F split level: Jacobi sweeps on the F-points, then on the C-points.

    $$
    x_F \leftarrow x_F + \omega D_{FF}^{-1}(b - A x)_F \ (\texttt{f\_iterations}\ \text{times}),\qquad
    x_C \leftarrow x_C + \omega D_{CC}^{-1}(b - A x)_C \ (\texttt{c\_iterations}\ \text{times}).
    $$

    With an approximately ideal restriction the coarse correction removes the error in the range of ``P``, and
    F-relaxation, which converges fast when $A_{FF}$ is dominated by its diagonal (upwind-ordered transport), the
    rest. It needs the C/F splitting of each level, which `air_setup` stores in the hierarchy; smoothed
    aggregation has none (use `JacobiRelaxation` there).

    Attributes:
      omega: damping in ``(0, 2]``.
      f_iterations: F-sweeps per relaxation.
      c_iterations: C-sweeps after them (``0`` for F-relaxation only).
      presmooth: relax before the coarse correction as well (the default, ``False``, relaxes after it only, as
        PyAMG's ``air_solver``; the relaxation before the correction is the one that starts from a zero guess).

    References:
      Manteuffel, Ruge & Southworth, "Nonsymmetric algebraic multigrid based on local approximate ideal
      restriction (ℓAIR)", SIAM J. Sci. Comput. 40 (2018) A4105, doi:10.1137/17M1144350.

    Examples:
      >>> from icmlx.solvers import FCJacobiRelaxation
      >>> FCJacobiRelaxation(f_iterations=3)
      FCJacobiRelaxation(f_iterations=3)
    """

    omega: float = eqx.field(static=True, default=1.0)
    f_iterations: int = eqx.field(static=True, default=2)
    c_iterations: int = eqx.field(static=True, default=1)
    presmooth: bool = eqx.field(static=True, default=False)

    def __check_init__(self):
        _check_range(self.omega, "omega", "FCJacobiRelaxation", 0.0, 2.0)
        _check_int(self.f_iterations, "f_iterations", "FCJacobiRelaxation")
        check_int(self.c_iterations, "c_iterations", where="FCJacobiRelaxation", minimum=0)
        if not isinstance(self.presmooth, bool):
            raise TypeError(f"FCJacobiRelaxation: presmooth must be a bool, got presmooth={self.presmooth!r}")

    def relax(self, A, dinv, lambda_max, colors, b, x, zero: bool):
        # ``colors``: this level's F-point indicator (1.0 on F-points, 0.0 on C-points and padding rows)
        if colors is None:
            raise ValueError("FCJacobiRelaxation needs the C/F splitting of each level: use it with air_setup, not "
                             "with a smoothed-aggregation hierarchy (take JacobiRelaxation there)")
        if zero and not self.presmooth:
            return x
        wf = self.omega * colors * dinv
        wc = self.omega * (1.0 - colors) * dinv  # (dinv is 0 on padding rows: they stay 0)
        for k in range(self.f_iterations):  # static, small
            x = wf * b if (zero and k == 0) else x + wf * (b - A.mv(x))
        for _ in range(self.c_iterations):
            x = x + wc * (b - A.mv(x))
        return x


# -- host set-up -------------------------------------------------------------------------------------------------------
def _row_max(indptr: np.ndarray, v: np.ndarray, n: int, fill: float) -> np.ndarray:
    """``max_j v_ij`` per CSR row (``fill`` for an empty row)."""
    out = np.full(n, fill)
    has = np.diff(indptr) > 0
    if v.size:
        out[has] = np.maximum.reduceat(v, indptr[:-1][has])
    return out


def classical_strength(A: Any, theta: float, norm: str) -> Any:
    r"""Classical strength of connection without the diagonal: $i$ depends strongly on $j \ne i$ when

    $$ s_{ij} \ge \theta \max_{k \ne i} s_{ik},\qquad s_{ij} = -a_{ij}\ (\texttt{"min"})\ \text{or}\ |a_{ij}|\
    (\texttt{"abs"}), $$

    and $s_{ij} > 0$. Returns a canonical CSR matrix holding $|a_{ij}|$ on the strong connections."""
    import scipy.sparse as sp

    n = A.shape[0]
    row = np.repeat(np.arange(n), np.diff(A.indptr))
    off = A.indices != row
    s = -A.data if norm == "min" else np.abs(A.data)
    s = np.where(off, s, -np.inf)
    m = _row_max(A.indptr, s, n, -np.inf)
    keep = off & (s > 0) & (s >= theta * m[row])
    indptr = np.zeros(n + 1, A.indptr.dtype)
    np.cumsum(np.bincount(row[keep], minlength=n), out=indptr[1:])
    return sp.csr_matrix((np.abs(A.data[keep]), A.indices[keep], indptr), shape=A.shape)


def _ones(M: Any) -> Any:
    import scipy.sparse as sp

    return sp.csr_matrix((np.ones(M.nnz), M.indices, M.indptr), shape=M.shape)


def cf_splitting(S: Any, *, second_pass: bool = True, seed: int = 0) -> np.ndarray:
    """A Ruge–Stüben-like C/F splitting of the strength graph ``S`` (``S_ij``: ``i`` depends strongly on ``j``),
    computed in rounds of independent sets; ``True`` marks C-points.

    First pass: ``λ_i`` counts the points that depend strongly on ``i``. Each round, every undecided point whose
    ``λ`` (plus a pseudo-random fraction that breaks ties) beats every undecided neighbour's becomes a C-point, the
    undecided points depending on it become F-points, and as in the sequential algorithm the points those F-points
    depend on gain one in ``λ`` per such F-point while the points the new C-points depend on lose one. Points that
    no one depends on are F-points from the start. Second pass: two F-points with a strong connection and no
    common strong C-neighbour violate the interpolation condition; rounds of independent sets of the violation
    graph (most violations first) turn points into C-points until no violation is left.
    """
    n = S.shape[0]
    S1 = _ones(S)
    T1 = S1.T.tocsr()
    G = ((S1 + T1) > 0).tocsr()
    G.setdiag(0)
    G.eliminate_zeros()
    lam = np.diff(T1.indptr).astype(np.float64)
    tie = np.random.default_rng(seed).permutation(n) / max(n, 1)
    state = np.zeros(n, np.int8)  # 0 undecided, 1 C, 2 F
    state[lam == 0] = 2
    while True:
        und = state == 0
        if not und.any():
            break
        w = np.where(und, lam + tie, -1.0)
        new_c = und & (w == _nbr_max(G.indptr, G.indices, w))
        state[new_c] = 1
        c = new_c.astype(np.float64)
        new_f = (state == 0) & (S1 @ c > 0)
        state[new_f] = 2
        lam += T1 @ new_f.astype(np.float64) - T1 @ c
    cpt = state == 1
    if second_pass:
        coo = S1.tocoo()
        i, j = coo.row, coo.col
        for _ in range(100):
            # a new C-point only removes violations (its pairs, or as a common neighbour), so each round
            # re-checks the violating pairs of the last
            i, j, bad = _violations(S1, cpt, i, j)
            if bad.nnz == 0:
                break
            deg = np.diff(bad.indptr).astype(np.float64)
            w = np.where(deg > 0, deg + tie, -1.0)
            new_c = (deg > 0) & (w == _nbr_max(bad.indptr, bad.indices, w))
            cpt = cpt | new_c
    return cpt


def _violations(S1: Any, cpt: np.ndarray, i: np.ndarray, j: np.ndarray):
    """Of the strong pairs ``(i, j)``, those of two F-points with no common strong C-neighbour: ``(i, j, V)``,
    ``V`` their symmetric graph."""
    import scipy.sparse as sp

    f = ~cpt
    n = S1.shape[0]
    pair = f[i] & f[j]
    i, j = i[pair], j[pair]
    if i.size:
        SC = (S1 @ sp.diags(cpt.astype(np.float64))).tocsr()  # strong C-neighbours
        SC.eliminate_zeros()
        common = np.asarray((SC[i].multiply(SC[j])).sum(axis=1)).ravel() > 0
        i, j = i[~common], j[~common]
    V = sp.csr_matrix((np.ones(2 * i.size), (np.concatenate([i, j]), np.concatenate([j, i]))), shape=(n, n))
    V.sum_duplicates()
    return i, j, V


def one_point_interpolation(A: Any, S: Any, cpt: np.ndarray) -> Any:
    """``P``: the identity on C-points, and each F-point with a strong C-neighbour takes the value of the one with
    the largest ``|a_ij|`` (weight 1); an F-point without one interpolates nothing."""
    import scipy.sparse as sp

    n = A.shape[0]
    cidx = np.cumsum(cpt) - 1
    row = np.repeat(np.arange(n), np.diff(S.indptr))
    onc = cpt[S.indices] & ~cpt[row]
    v = np.where(onc, S.data, -1.0)
    best = _row_max(S.indptr, v, n, -1.0)
    hit = onc & (v == best[row])
    # the first strongest entry of each F row (the rows of a canonical CSR matrix come in order)
    r_hit = row[hit]
    take = np.ones(r_hit.size, bool)
    take[1:] = r_hit[1:] != r_hit[:-1]
    f_rows, f_cols = r_hit[take], S.indices[hit][take]
    c_rows = np.nonzero(cpt)[0]
    rows = np.concatenate([c_rows, f_rows])
    cols = np.concatenate([cidx[c_rows], cidx[f_cols]])
    P = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, int(cpt.sum())))
    P.sum_duplicates()
    return P


def _lookup(A: Any, r: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``A[r, c]`` elementwise for a canonical CSR matrix (0 off the pattern): SciPy's per-row search, in C."""
    if r.size == 0:
        return np.zeros(r.shape)
    return np.asarray(A[r.ravel(), c.ravel()], np.float64).reshape(r.shape)


def _bucket(k: np.ndarray) -> np.ndarray:
    """Padded neighbourhood sizes: 1, 2, 4, then multiples of 4 up to 16, then of 8 (few batches, little padding)."""
    return np.where(k <= 2, k, np.where(k <= 16, -(-k // 4) * 4, -(-k // 8) * 8))


def air_restriction(A: Any, cpt: np.ndarray, *, theta: float, distance: int) -> Any:
    r"""The local approximate ideal restriction ``R = [-Z, I]`` (rows: C-points, in order).

    Row ``c`` of ``Z`` lives on the F-points ``N_c`` strongly connected to ``c`` (strength $|a_{ij}| \ge \theta
    \max_k |a_{ik}|$), with ``distance=2`` also those strongly connected to one of them, and solves
    $(R A)_{c, N_c} = 0$, i.e. $A_{N_c N_c}^\top z = -a_{c, N_c}^\top$. The systems are padded to bucketed sizes
    (identity on the padding) and solved in one batched dense solve per bucket (a least-squares solve where a
    local matrix is singular)."""
    import scipy.sparse as sp

    n = A.shape[0]
    SR = _ones(classical_strength(A, theta, "abs"))
    fmask = sp.diags((~cpt).astype(np.float64))
    cp = np.nonzero(cpt)[0]
    N = SR[cp] @ fmask
    if distance == 2:
        N = N + (N @ SR) @ fmask
    N = N.tocsr()
    N.data[:] = 1.0
    N.eliminate_zeros()
    N.sort_indices()
    nc = cp.size
    k = np.diff(N.indptr)
    zrow, zcol, zval = [], [], []
    sizes = _bucket(k)
    for kb in np.unique(sizes[k > 0]):  # (a handful of buckets)
        rows = np.nonzero(sizes == kb)[0]
        cnt = k[rows]
        slot = np.arange(kb)[None, :]
        real = slot < cnt[:, None]
        nbr = np.where(real, N.indices[np.minimum(N.indptr[rows][:, None] + slot, N.indices.size - 1)], -1)
        nb = np.maximum(nbr, 0)
        # M[b, a, e] = A[nbr[b, e], nbr[b, a]] (the transposed local block), identity on padding
        both = real[:, :, None] & real[:, None, :]
        M = np.zeros(both.shape)
        M[both] = _lookup(A, np.broadcast_to(nb[:, None, :], both.shape)[both],
                          np.broadcast_to(nb[:, :, None], both.shape)[both])
        M[:, np.arange(kb), np.arange(kb)] += ~real
        rhs = np.zeros(real.shape)
        rhs[real] = -_lookup(A, np.broadcast_to(cp[rows][:, None], real.shape)[real], nb[real])
        try:
            z = np.linalg.solve(M, rhs[..., None])[..., 0]
        except np.linalg.LinAlgError:  # a singular local block: the least-squares solution (PyAMG's choice)
            z = (np.linalg.pinv(M) @ rhs[..., None])[..., 0]
        zrow.append(np.repeat(rows, kb)[real.ravel()])
        zcol.append(nb[real])
        zval.append(z[real])
    rows = np.concatenate([*zrow, np.arange(nc)])
    cols = np.concatenate([*zcol, cp])
    vals = np.concatenate([*zval, np.ones(nc)])
    R = sp.csr_matrix((vals, (rows, cols)), shape=(nc, n))
    R.sum_duplicates()
    R.eliminate_zeros()
    return R


def air_levels(A: Any, *, theta: float, restrict_theta: float, distance: int, second_pass: bool,
               max_coarse: int, max_levels: int):
    """The host levels ``[(A_ℓ, P_ℓ, ρ-bound, d_ℓ, R_ℓ, None)]``, the F-point indicator of each level and the
    coarsest operator."""
    levels, fpts = [], []
    cur = A
    while cur.shape[0] > max_coarse and len(levels) < max_levels - 1:
        d = cur.diagonal()
        if np.any(d == 0) or not np.all(np.isfinite(cur.data)):
            break
        S = classical_strength(cur, theta, "min")
        cpt = cf_splitting(S, second_pass=second_pass)
        nc = int(cpt.sum())
        if nc == 0 or nc == cur.shape[0]:
            break
        P = one_point_interpolation(cur, S, cpt)
        R = air_restriction(cur, cpt, theta=restrict_theta, distance=distance)
        nxt = (R @ (cur @ P)).tocsr()
        nxt.sum_duplicates()
        nxt.eliminate_zeros()
        row = np.repeat(np.arange(cur.shape[0]), np.diff(cur.indptr))
        gersh = float(np.max(np.bincount(row, weights=np.abs(cur.data), minlength=cur.shape[0]) / np.abs(d)))
        levels.append((cur, P, gersh, d, R, None))
        fpts.append((~cpt).astype(np.float64))
        cur = nxt
    return levels, fpts, cur


def air_setup(A: Any, *, theta: float = 0.3, restrict_theta: float = 0.05, distance: int = 2,
              second_pass: bool = True, relaxation: Any = None, method: str = "gmres", max_coarse: int = 500,
              max_levels: int = 20, dtype: Any = None):
    r"""Set up nonsymmetric algebraic multigrid by local approximate ideal restriction (ℓAIR) for ``A``.

    For convection-dominated (nonsymmetric, transport-like) problems, where smoothed aggregation, built for
    symmetric operators, preconditions poorly. Each level splits its unknowns into C- and F-points (a
    Ruge–Stüben-like splitting of the classical strength graph, $-a_{ij} \ge \theta \max_{k \ne i}(-a_{ik})$),
    and builds

    $$
    R = [-Z,\ I],\quad Z_{c, N_c} A_{N_c N_c} = A_{c, N_c},\qquad
    P = \begin{bmatrix} W \\ I \end{bmatrix},\qquad A_c = R A P,
    $$

    ``Z`` approximating the ideal $A_{CF} A_{FF}^{-1}$ on each C-point's F-neighbourhood ``N_c`` (distance 1 or 2
    in the strength graph with threshold ``restrict_theta``), ``W`` one-point interpolation from each F-point's
    strongest C-neighbour. The cycle relaxes with `FCJacobiRelaxation` after each coarse correction (no
    pre-relaxation), and the coarsest level (at most ``max_coarse`` unknowns) is solved by a dense inverse. The
    set-up is eager NumPy/SciPy in float64 (vectorised over nodes; the local systems in batched dense solves); the
    solve is JAX.

    Args:
      A: the n × n matrix with a nonzero diagonal: SciPy sparse in any format, BCOO, dense or `SparseMatrix`
        (concrete).
      theta: strength threshold of the C/F splitting, in ``[0, 1)``.
      restrict_theta: strength threshold of the restriction's neighbourhoods, in ``[0, 1)``.
      distance: ``1`` or ``2``: the F-neighbourhood of a C-point in the restriction.
      second_pass: add C-points until every two strongly connected F-points share a strong C-neighbour (as the
        second pass of Ruge–Stüben coarsening).
      relaxation: an `AbstractRelaxation` (default ``FCJacobiRelaxation()``, or ``"fc_jacobi"``, ``"jacobi"``).
      method: the Krylov method the cycle preconditions: ``"gmres"`` (GMRES(30)) or ``"bicgstab"``.
      max_coarse: largest coarsest level.
      max_levels: cap on the number of levels.
      dtype: floating dtype of the solve (default: JAX's default float).

    Returns:
      An `AMGSolver` (``hierarchy_on="A"``, ``builder="air_setup"``, no symbolic pattern): ``solver.solve(b)``
      solves for one right-hand side (jit/vmap it for many; differentiable in ``b``), and
      ``solver.as_preconditioner()`` gives the cycle as a lineax operator. ``solver.update(values)`` raises a
      ``ValueError``: the set-up keeps no pattern, so a new matrix takes a new ``air_setup``.

    Raises:
      ValueError: ``A`` not square, empty, with NaN/Inf or a zero diagonal entry; a threshold outside ``[0, 1)``;
        ``distance`` not 1 or 2; an unknown ``method`` or relaxation; a coarsest level past the dense limit.
      TypeError: an unsupported matrix type, a non-number setting, or called under ``jax.jit``.

    References:
      Manteuffel, Ruge & Southworth, "Nonsymmetric algebraic multigrid based on local approximate ideal
      restriction (ℓAIR)", SIAM J. Sci. Comput. 40 (2018) A4105, doi:10.1137/17M1144350; Manteuffel, Münzenmaier,
      Ruge & Southworth, "Nonsymmetric reduction-based algebraic multigrid", SIAM J. Sci. Comput. 41 (2019) S242
      (arXiv:1704.05001); Ruge & Stüben, "Algebraic multigrid", in *Multigrid Methods* (SIAM 1987).

    Examples:
      >>> import numpy as np, scipy.sparse as sp
      >>> from icmlx.solvers import air_setup
      >>> m = 40  # upwinded 1-D transport with a little diffusion, on an m × m grid
      >>> T = sp.diags([-np.ones(m - 1), np.ones(m)], [-1, 0])
      >>> A = (sp.kron(T, sp.eye(m)) + sp.kron(sp.eye(m), T) + 0.01 * sp.eye(m * m)).tocsr()
      >>> solver = air_setup(A, max_coarse=50)
      >>> sol = solver.solve(np.ones(m * m), rtol=1e-5)
      >>> bool(np.linalg.norm(np.ones(m * m) - A @ np.asarray(sol.value, float)) <= 1e-5 * m), solver.method
      (True, 'gmres')
    """
    import jax.numpy as jnp

    from .._amg_solver import AMGSolver
    from ._build import _assemble

    for name, v in (("theta", theta), ("restrict_theta", restrict_theta)):
        check_number(v, name, where="air_setup", minimum=0.0, maximum=1.0, open_maximum=True)
    distance = positive_int(distance, "distance", "air_setup")
    if distance not in (1, 2):
        raise ValueError(f"air_setup: distance must be 1 or 2, got distance={distance}")
    if not isinstance(second_pass, bool):
        raise TypeError(f"air_setup: second_pass must be a bool, got second_pass={second_pass!r}")
    if method not in _AIR_METHODS:
        raise ValueError(f"air_setup: method must be one of {_AIR_METHODS} (the cycle is not symmetric), got "
                         f"method={method!r}")
    max_coarse = positive_int(max_coarse, "max_coarse", "air_setup")
    max_levels = positive_int(max_levels, "max_levels", "air_setup")
    relaxation = as_strategy(FCJacobiRelaxation() if relaxation is None else relaxation, AbstractRelaxation,
                             {"fc_jacobi": FCJacobiRelaxation, "jacobi": JacobiRelaxation}, "relaxation")
    A = as_scipy_csr(A, name="A").copy()
    n = A.shape[0]
    if n == 0:
        raise ValueError("air_setup: A is empty (0 × 0); there is nothing to solve")
    A.sum_duplicates()
    A.eliminate_zeros()
    if not np.all(np.isfinite(A.data)):
        raise ValueError("air_setup: A has NaN or Inf entries; fix them first")
    zero = np.nonzero(A.diagonal() == 0)[0]
    if zero.size:
        raise ValueError(f"air_setup: A has a zero diagonal entry (row {int(zero[0])}); relaxation divides by the "
                         "diagonal: reorder or fix the matrix")
    levels, fpts, coarse = air_levels(A, theta=float(theta), restrict_theta=float(restrict_theta),
                                      distance=distance, second_pass=second_pass, max_coarse=max_coarse,
                                      max_levels=max_levels)
    if coarse.shape[0] > _MAX_DENSE_COARSE:
        raise ValueError(f"air_setup: coarsening stopped at {coarse.shape[0]} unknowns (> {_MAX_DENSE_COARSE}), too "
                         "many for the dense coarsest solve: lower theta (more strong connections) or raise "
                         "max_levels.")
    dtype = jnp.result_type(float) if dtype is None else dtype
    H, K = _assemble(levels, coarse, relaxation, "V", n, dtype, False, A, level_data=fpts)
    return AMGSolver(H, K, method, n, "A", builder="air_setup")
