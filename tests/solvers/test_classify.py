"""The matrix classification behind G-RANS's outer step: a symmetric positive definite P2 stiffness matrix (positive
off-diagonal entries, rows next to the boundary summing below zero) is SPD-like, an indefinite Helmholtz matrix is
not.

References: scikit-fem assembles the matrices (P2 Poisson, P1 Helmholtz $K - k^2 M$); NumPy's ``eigvalsh`` on the
dense matrix decides definiteness independently.
"""

import numpy as np
import pytest

from icmlx.solvers import GRANS
from icmlx.solvers._classify import classify, positive_definite_by_inertia

sp = pytest.importorskip("scipy.sparse")
spla = pytest.importorskip("scipy.sparse.linalg")
skfem = pytest.importorskip("skfem")
from skfem.models.poisson import laplace, mass  # noqa: E402

EPS = float(np.finfo(np.float64).eps)


def interior(element, nref, k=0.0):
    mesh = skfem.MeshTri().refined(nref)
    basis = skfem.Basis(mesh, element)
    A = skfem.asm(laplace, basis)
    if k:
        A = A - k**2 * skfem.asm(mass, basis)
    keep = basis.complement_dofs(basis.get_dofs())
    return A[keep][:, keep].tocsr()


def test_p2_poisson_is_spd_like_and_helmholtz_is_not():
    P2 = interior(skfem.ElementTriP2(), 3)
    H = interior(skfem.ElementTriP1(), 4, k=12.0)
    assert np.linalg.eigvalsh(P2.toarray()).min() > 0  # SPD ...
    rowsum = np.asarray(P2.sum(axis=1)).ravel()
    assert rowsum.min() < -1e-8 * abs(P2).max()  # ... with rows that sum below zero (the row-sum test fails)
    assert np.linalg.eigvalsh(H.toarray()).min() < 0  # indefinite
    assert not classify(P2, EPS).spd_like  # the row-sum test alone
    assert classify(P2, EPS, probe_definite=True).spd_like
    assert not classify(H, EPS, probe_definite=True).spd_like
    assert GRANS().setup(P2).matrix_class == "spd_like"
    assert GRANS().setup(H).matrix_class == "symmetric"


@pytest.mark.parametrize("shift", [-0.5, 0.05, 0.5, 3.0])
def test_inertia_agrees_with_eigvalsh(shift):
    rng = np.random.default_rng(int(10 * shift) + 7)
    B = sp.random(80, 80, density=0.05, random_state=rng)
    S = (B + B.T + sp.diags(np.full(80, 1.0))).toarray()
    lam = np.linalg.eigvalsh(S)
    A = sp.csr_matrix(S - (lam.min() - shift) * np.eye(80))  # smallest eigenvalue = shift
    assert positive_definite_by_inertia(A) is (shift > 0)


@pytest.mark.x64
@pytest.mark.x64_only
def test_grans_solves_p2_poisson_as_spd():
    P2 = interior(skfem.ElementTriP2(), 3)
    b = np.ones(P2.shape[0])
    solver = GRANS(rtol=1e-8)
    op = solver.setup(P2)
    sol = solver.solve(op, b)
    x = np.asarray(sol.value, np.float64)
    assert np.linalg.norm(b - P2 @ x) <= 1e-8 * np.linalg.norm(b)
    x_ref = spla.spsolve(P2.tocsc(), b)
    assert np.linalg.norm(x - x_ref) <= 1e-5 * np.linalg.norm(x_ref)


def test_is_symmetric_matches_a_dense_max_norm_test_for_transpose_and_conjugate_transpose():
    """`is_symmetric` against the dense float64 test max|A - B| <= 1e3 eps max|A| with B = Aᵀ or A^H, on complex
    matrices that are symmetric, Hermitian, or either up to a perturbation just inside or outside the tolerance;
    a complex64 matrix gets float32's epsilon (`input_eps`)."""
    import scipy.sparse as sp

    from icmlx.solvers._classify import input_eps, is_symmetric

    rng = np.random.default_rng(0)
    M = sp.random(30, 30, density=0.2, random_state=1) + 1j * sp.random(30, 30, density=0.2, random_state=2)
    M = (M + sp.eye(30)).tocsr()
    assert input_eps(M.astype(np.complex64)) == float(np.finfo(np.float32).eps)
    for base, conj in ((M + M.T, False), (M + M.conj().T, True)):
        base = sp.csr_matrix(base)
        for rel in (0.0, 1e-14, 1e-11, 1e-6):
            eps = float(np.finfo(np.float64).eps)
            P = base.copy()
            P.data = P.data + rel * np.abs(P.data).max() * rng.standard_normal(P.nnz)
            D = P.toarray()
            ref = np.abs(D - (D.conj().T if conj else D.T)).max() <= 1e3 * eps * np.abs(D).max()
            assert is_symmetric(P, eps, conjugate=conj) == ref
            # a complex symmetric matrix is Hermitian only when it is real, and conversely
            assert not is_symmetric(base, eps, conjugate=not conj)
