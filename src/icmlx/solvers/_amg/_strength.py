"""Strength of connection for smoothed aggregation, as strategy objects: the symmetric threshold measure and the
evolution (ODE-based) measure of Olson, Schroder & Tuminaro, each with its host (NumPy/SciPy) graph builder.

A strategy's `AbstractStrength.strong_graph` turns one level's operator into the symmetric strong pattern
(node level, no diagonal) that standard aggregation reads. Everything is vectorised over entries and rows; the
evolution measure's small constrained least-squares problems (one per row) are solved as one batch.
"""

import abc
from typing import Any

import equinox as eqx
import numpy as np

from ..._checks import check_int
from .._convert import check_real
from ._levels import node_matrix, symmetric_pattern, symmetric_strength

__all__ = ["AbstractStrength", "SymmetricStrength", "EvolutionStrength", "evolution_strength"]


class AbstractStrength(eqx.Module):
    """Which off-diagonal couplings count as strong when aggregating (a strategy object, static fields only).

    Pass one as ``strength=`` to `amg_setup` or `solve`. Subclasses
    implement `strong_graph` (host side, called once per level of the set-up).
    """

    @abc.abstractmethod
    def strong_graph(self, A: Any, *, B: np.ndarray, node_of: np.ndarray, num_nodes: int, rho: float) -> Any:
        """The strong pattern of one level: a symmetric ``num_nodes × num_nodes`` SciPy CSR matrix of ones with
        sorted columns and no diagonal.

        Args:
          A: the level operator (canonical SciPy CSR, ``n × n`` over dofs).
          B: ``float64[n, k]`` the level's near-nullspace candidates (before the finest level's improvement).
          node_of: ``int[n]`` the node of each dof (consecutive dofs per node).
          num_nodes: the number of nodes.
          rho: an estimate of ``ρ(D⁻¹A)``.
        """

    @property
    def is_graph_of_a(self) -> bool:
        """Whether the strong pattern is the whole off-diagonal graph of a scalar ``A`` (the set-up then reuses it
        for the colouring)."""
        return False


class SymmetricStrength(AbstractStrength):
    r"""Symmetric strength of connection: nodes ``i ≠ j`` are strongly coupled when
    $\|A_{ij}\| \ge \theta \sqrt{\|A_{ii}\|\,\|A_{jj}\|}$ (Frobenius norms of the node blocks; entries for
    scalar problems), symmetrised.

    Attributes:
      theta: threshold in ``[0, 1)``; ``0`` (PyAMG's default for SA) keeps every nonzero coupling.

    References:
      Vaněk, Mandel & Brezina, Computing 56 (1996), eq. (3.1).

    Examples:
      >>> from icmlx.solvers import SymmetricStrength
      >>> SymmetricStrength(theta=0.25)
      SymmetricStrength(theta=0.25)
    """

    theta: float = eqx.field(static=True, default=0.0)

    def __check_init__(self):
        t = self.theta
        check_real(t, "theta", "SymmetricStrength")
        if isinstance(t, bool) or not isinstance(t, (int, float, np.floating)) or not 0.0 <= t < 1.0:
            raise ValueError(f"SymmetricStrength: theta must be a number in [0, 1), got theta={t!r}")

    def strong_graph(self, A, *, B, node_of, num_nodes, rho):
        return symmetric_strength(node_matrix(A, node_of, num_nodes), float(self.theta))

    @property
    def is_graph_of_a(self) -> bool:
        return self.theta == 0


class EvolutionStrength(AbstractStrength):
    r"""Evolution strength of connection (Olson, Schroder & Tuminaro): how well the near-nullspace explains where
    a point source spreads under a few Jacobi steps.

    For each dof ``i`` the impulse $\delta_i$ is evolved ``k`` steps of $\dot z = -D^{-1}A z$ with the
    step $1/\rho(D^{-1}A)$,

    $$
    z^{(i)} = \bigl(I - \tfrac{1}{\rho(D^{-1}A)} D^{-1}A\bigr)^k \delta_i ,
    $$

    and read on the pattern $J_i$ of row ``i`` of ``A`` (for several dofs per node, only the dofs of the same
    component as ``i``). The best fit from the candidates ``B`` that is exact at ``i`` solves

    $$
    \min_x \|z^{(i)}_{J_i} - B_{J_i} x\|_2 \quad\text{s.t.}\quad B_i x = z^{(i)}_i ,
    $$

    and the distance of ``j ∈ J_i`` is the relative error $s_{ij} = |1 - (B_j x)/z^{(i)}_j|$ (weak, hence
    dropped, where the fit has the opposite sign or is below ``1e-4`` of $z^{(i)}_j$; an error under
    $\sqrt{\varepsilon_{64}}$ counts as ``1e-4``). Row by row, ``j`` is strong when
    $s_{ij} \le \epsilon \min_{l \ne i} s_{il}$; the kept distances are symmetrised, amalgamated to nodes
    (the smallest over a node block) and inverted, so large values are strong. With one candidate the fit is the
    constraint alone: $B_j x = z^{(i)}_i B_j / B_i$.

    The candidates are those of the level: the ``near_nullspace`` of the set-up (before its Jacobi improvement)
    on the finest level, the coarse candidates below. Aggregation reads the strong pattern.

    Attributes:
      k: Jacobi steps of the evolution (a positive int; ``2``, PyAMG's default).
      epsilon: drop tolerance ``≥ 1`` relative to each row's smallest distance (``4.0``, PyAMG's default);
        smaller keeps fewer couplings.

    References:
      Olson, Schroder & Tuminaro, "A new perspective on strength measures in algebraic multigrid", Numer. Linear
      Algebra Appl. 17 (2010) 713–733, doi:10.1002/nla.669.

    Examples:
      >>> import numpy as np, scipy.sparse as sp
      >>> from icmlx.solvers import EvolutionStrength, solve
      >>> EvolutionStrength(epsilon=2.0)
      EvolutionStrength(epsilon=2.0)
      >>> T = sp.diags([-np.ones(39), 2 * np.ones(40), -np.ones(39)], [-1, 0, 1])
      >>> A = (sp.kron(T, sp.eye(40)) + 1e-3 * sp.kron(sp.eye(40), T)).tocsr()  # anisotropic
      >>> steps = {s: int(solve(A, np.ones(1600), strength=s, max_coarse=50).num_steps)
      ...          for s in ("symmetric", "evolution")}
      >>> steps["evolution"] < steps["symmetric"]  # the weak direction no longer aggregated
      True
    """

    k: int = eqx.field(static=True, default=2)
    epsilon: float = eqx.field(static=True, default=4.0)

    def __check_init__(self):
        check_int(self.k, "k", where="EvolutionStrength", minimum=1, maximum=8)
        e = self.epsilon
        check_real(e, "epsilon", "EvolutionStrength")
        if isinstance(e, bool) or not isinstance(e, (int, float, np.floating)) or not e >= 1.0:
            raise ValueError(f"EvolutionStrength: epsilon must be a number >= 1, got epsilon={e!r}")

    def strong_graph(self, A, *, B, node_of, num_nodes, rho):
        C = evolution_strength(A, B, node_of=node_of, num_nodes=num_nodes, rho=rho, k=self.k, epsilon=self.epsilon)
        return symmetric_pattern(C, lambda data, rows, cols: data != 0)


def _component(node_of: np.ndarray) -> np.ndarray:
    """The position of each dof within its node (dofs of a node are consecutive)."""
    n = node_of.size
    if n == 0:
        return np.zeros(0, np.int64)
    first = np.r_[True, node_of[1:] != node_of[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    return np.arange(n) - start


def evolution_strength(A: Any, B: np.ndarray, *, rho: float, node_of: np.ndarray | None = None,
                       num_nodes: int | None = None, k: int = 2, epsilon: float = 4.0) -> Any:
    """The evolution strength matrix of `EvolutionStrength` (host NumPy/SciPy): a node-level CSR matrix
    with ones on the diagonal and the inverted distances of the strong couplings, each row scaled by its largest
    entry (PyAMG's ``evolution_strength_of_connection`` convention).

    Args:
      A: square SciPy sparse matrix (dofs) with a nonzero diagonal.
      B: ``float[n]`` or ``float[n, k]`` candidates.
      node_of: the node of each dof (default: one dof per node).
      num_nodes: their number.
      rho: an estimate of ``ρ(D⁻¹A)`` (the set-up's `._levels.rho_dinv_a`).
      k, epsilon: as `EvolutionStrength`.
    """
    import scipy.sparse as sp

    A = sp.csr_matrix(A, dtype=np.float64)
    A.sum_duplicates()
    A.eliminate_zeros()
    n = A.shape[0]
    B = np.asarray(B, np.float64).reshape(n, -1)
    if node_of is None:
        node_of, num_nodes = np.arange(n), n
    d = A.diagonal()
    dinv = np.where(d != 0, 1.0 / np.where(d != 0, d, 1.0), 1.0)
    # Mᵀ with M = I − D⁻¹A/ρ: row i of (Mᵀ)^k is z⁽ⁱ⁾, the evolved impulse at i
    DA = A.copy()
    DA.data *= np.repeat(dinv / rho, np.diff(A.indptr))
    Mt = (sp.identity(n, format="csr") - DA).T.tocsr()
    X = Mt
    for _ in range(k - 1):
        X = (X @ Mt).tocsr()
    comp = _component(np.asarray(node_of))
    rows = np.repeat(np.arange(n), np.diff(A.indptr))
    same = comp[rows] == comp[A.indices]
    mask = _csr_in_order(rows[same], A.indices[same], np.ones(int(same.sum())), n)
    Z = X.multiply(mask).tocsr()  # z⁽ⁱ⁾ on the pattern of row i of A (same component)
    Z.eliminate_zeros()
    Z.sort_indices()
    zr = np.repeat(np.arange(n), np.diff(Z.indptr))
    zc, z = Z.indices, Z.data
    zii = Z.diagonal()
    if B.shape[1] == 1:
        b = np.where(B[:, 0] == 0, 1.0, B[:, 0])
        fit = zii[zr] / b[zr] * b[zc]
    else:
        fit = _constrained_fit(Z, zr, zii, B)
    ratio = fit / z
    s = np.abs(1.0 - ratio)
    weak = (fit * z < 0) | (np.abs(ratio) < 1e-4) | (zr == zc)
    s = np.where(s < np.sqrt(np.finfo(np.float64).eps), 1e-4, s)
    keep = ~weak
    r, c, s = zr[keep], zc[keep], s[keep]
    # the distance filter: strong when s_ij <= epsilon · min_l s_il
    rmin = np.full(n, np.inf)
    np.minimum.at(rmin, r, s)
    strong = s <= epsilon * rmin[r]
    F = _csr_in_order(r[strong], c[strong], s[strong], n)
    F = (0.5 * (F + F.T)).tocsr()
    F.eliminate_zeros()
    # to nodes: the smallest distance over each node block (the diagonal: 1, a node to itself)
    Fc = F.tocoo()
    ni, nj = np.asarray(node_of)[Fc.row], np.asarray(node_of)[Fc.col]
    off = ni != nj
    key = ni[off].astype(np.int64) * num_nodes + nj[off]
    dist = Fc.data[off]
    order = np.lexsort((dist, key))
    key, dist = key[order], dist[order]
    first = np.r_[True, key[1:] != key[:-1]] if key.size else np.zeros(0, bool)
    key, dist = key[first], dist[first]
    kr = np.r_[key // num_nodes, np.arange(num_nodes)]
    kc = np.r_[key % num_nodes, np.arange(num_nodes)]
    C = sp.csr_matrix((np.r_[1.0 / dist, np.ones(num_nodes)], (kr, kc)), shape=(num_nodes, num_nodes))
    C.sort_indices()
    top = np.maximum.reduceat(C.data, C.indptr[:-1]) if C.nnz else np.ones(num_nodes)
    C.data /= np.repeat(top, np.diff(C.indptr))
    return C


def _csr_in_order(rows, cols, vals, n):
    """An ``n × n`` CSR matrix of entries already in CSR order (rows non-decreasing, sorted columns in each row,
    no repeats): the index arrays are used as they are, without a COO conversion."""
    import scipy.sparse as sp

    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    M = sp.csr_matrix((vals, cols, indptr), shape=(n, n))
    M.has_sorted_indices = True
    return M


def _constrained_fit(Z, zr, zii, B):
    """``B_j x`` for every stored ``(i, j)`` of ``Z``: ``x`` the least-squares fit of row ``i`` of ``Z`` by the rows
    of ``B`` on that row's pattern, constrained to be exact at ``j = i``: one batched solve of the KKT systems
    over the rows (where a system is singular, its minimum-norm solution: a direction of ``x`` that the row's
    candidates do not see leaves the fit unchanged)."""
    n, nb = B.shape
    cnt = np.diff(Z.indptr)
    w = int(cnt.max()) if n else 1
    slot = np.arange(Z.nnz) - np.repeat(Z.indptr[:-1], cnt)
    zp = np.zeros((n, w))
    zp[zr, slot] = Z.data
    Bp = np.zeros((n, w, nb))
    Bp[zr, slot] = B[Z.indices]
    K = np.zeros((n, nb + 1, nb + 1))
    K[:, :nb, :nb] = np.einsum("nwk,nwl->nkl", Bp, Bp)
    K[:, :nb, nb] = B
    K[:, nb, :nb] = B
    rhs = np.concatenate([np.einsum("nwk,nw->nk", Bp, zp), zii[:, None]], axis=1)
    # a candidate that is zero on the whole row pattern (elasticity: a translation on the other component's
    # dofs) drops out exactly (x_c = 0); the rest is one batched LU solve, and only the rows whose system is
    # still (near) singular go through the pseudo-inverse
    gone = ~np.any(Bp != 0, axis=1)  # (n, nb)
    r_, c_ = np.nonzero(gone)
    K[r_, c_, c_] = 1.0
    rhs[r_, c_] = 0.0
    try:
        with np.errstate(all="ignore"):
            sol = np.linalg.solve(K, rhs[..., None])[..., 0]
        res = np.abs(np.einsum("nkl,nl->nk", K, sol) - rhs).max(axis=1)
        # a solution that meets its equations gives the fit (unique even where x is not)
        bad = ~(res <= 1e-10 * (np.abs(rhs).max(axis=1) + np.abs(K).max(axis=(1, 2)) * np.abs(sol).max(axis=1)))
    except np.linalg.LinAlgError:  # (an exactly singular system in the batch)
        sol, bad = np.zeros((n, nb + 1)), np.ones(n, bool)
    if bad.any():
        sol[bad] = np.einsum("nkl,nl->nk", np.linalg.pinv(K[bad], rcond=1e-12, hermitian=True), rhs[bad])
    x = sol[:, :nb]
    return np.einsum("ek,ek->e", B[Z.indices], x[zr])

