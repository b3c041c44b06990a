"""P1 assembly in JAX against scikit-fem (independent FEM library), resonance filter against eigsh."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx.solvers.fem import (
    EQUATIONS,
    assemble_p1,
    make_problem,
    mesh_from_arrays,
    quadrature_points,
    resonance_gap,
    unit_square_mesh,
)

skfem = pytest.importorskip("skfem")

X64 = bool(jax.config.jax_enable_x64)
# float64: assembly is a sum of O(10) products -> 1e-12 relative; float32: ~1e-6 relative.
TOL = 1e-12 if X64 else 2e-6


def _skfem_system(refine, kappa_fn, c, beta, f_fn):
    from skfem import Basis, BilinearForm, ElementTriP1, LinearForm, MeshTri, condense
    from skfem.helpers import dot, grad

    m = MeshTri.init_sqsymmetric().refined(refine)
    X = np.array([[1 / 6, 2 / 3, 1 / 6], [1 / 6, 1 / 6, 2 / 3]])
    basis = Basis(m, ElementTriP1(), quadrature=(X, np.full(3, 1 / 6)))

    @BilinearForm
    def a(u, v, w):
        return (kappa_fn(w.x) * dot(grad(u), grad(v)) + beta[0] * grad(u)[0] * v
                + beta[1] * grad(u)[1] * v + c * u * v)

    @LinearForm
    def lin(v, w):
        return f_fn(w.x) * v

    K, F = condense(a.assemble(basis), lin.assemble(basis), D=m.boundary_nodes(), expand=False)[:2]
    return m, K.toarray(), F


@pytest.mark.x64
@pytest.mark.parametrize("case", ["poisson", "reaction", "advection", "helmholtz"])
def test_assembly_matches_scikit_fem(case):
    kfn = lambda x: np.exp(np.sin(3 * x[0]) * np.cos(2 * x[1])) if case == "poisson" else 1.0 + 0 * x[0]
    c = {"poisson": 0.0, "reaction": 50.0, "advection": 0.0, "helmholtz": -144.0}[case]
    beta = (30.0, -20.0) if case == "advection" else (0.0, 0.0)
    ffn = lambda x: 1.0 + x[0] * x[1]
    m, K, F = _skfem_system(3, kfn, c, beta, ffn)
    bnd = np.isin(np.arange(m.p.shape[1]), m.boundary_nodes())
    mesh = mesh_from_arrays(m.p, m.t, dirichlet=bnd)
    xq = np.asarray(quadrature_points(mesh), np.float64)
    dt = jnp.zeros(()).dtype
    A, b = assemble_p1(mesh, kappa=jnp.asarray(kfn(np.moveaxis(xq, -1, 0)), dt), reaction=c,
                       beta=beta, source=jnp.asarray(ffn(np.moveaxis(xq, -1, 0)), dt))
    Ad = np.asarray(A.as_matrix(), np.float64)
    assert np.abs(Ad - K).max() <= TOL * np.abs(K).max()
    assert np.abs(np.asarray(b, np.float64) - F).max() <= TOL * np.abs(F).max()


def test_structured_mesh_sizes_and_symmetry():
    for refine, n in [(3, 225), (4, 961)]:
        mesh = unit_square_mesh(refine)
        assert mesh.n == n
    pb = make_problem(jax.random.key(0), unit_square_mesh(3), "poisson")
    A = np.asarray(pb.A.as_matrix(), np.float64)
    assert np.allclose(A, A.T, rtol=0, atol=1e-5 * np.abs(A).max())
    assert np.all(np.linalg.eigvalsh(A) > 0)  # SPD (independent dense check)


def test_equations_character():
    mesh = unit_square_mesh(3)
    key = jax.random.key(3)
    mats = {eq: np.asarray(make_problem(key, mesh, eq).A.as_matrix(), np.float64) for eq in EQUATIONS}
    assert not np.allclose(mats["advection"], mats["advection"].T)
    ev = np.linalg.eigvalsh(mats["helmholtz"])
    assert ev.min() < 0 < ev.max()  # indefinite
    assert np.linalg.eigvalsh(mats["reaction"]).min() > 0


def test_resonance_gap_against_discrete_spectrum():
    sp = pytest.importorskip("scipy.sparse")
    sla = pytest.importorskip("scipy.sparse.linalg")
    mesh = unit_square_mesh(4)
    K, _ = assemble_p1(mesh)
    M, _ = assemble_p1(mesh, kappa=0.0, reaction=1.0)
    Ks = sp.csr_array(np.asarray(K.as_matrix(), np.float64))
    Ms = sp.csr_array(np.asarray(M.as_matrix(), np.float64))
    for k in (10.0, 12.0):
        lam = sla.eigsh(Ks, M=Ms, sigma=k * k, k=4, return_eigenvectors=False)
        discrete = np.abs(lam - k * k).min() / (k * k)
        # continuous vs P1 eigenvalues differ by O(h^2) ~ 1-2% at h = 1/32
        assert abs(discrete - resonance_gap(k)) < 0.03
    with pytest.raises(ValueError, match="eigenvalue"):
        make_problem(jax.random.key(0), mesh, "helmholtz", param=10.0)


def test_bad_inputs():
    with pytest.raises(ValueError):
        make_problem(jax.random.key(0), unit_square_mesh(2), "maxwell")
    with pytest.raises(ValueError):
        make_problem(jax.random.key(0), unit_square_mesh(2), "poisson", shift=-1.0)
    with pytest.raises(ValueError):
        unit_square_mesh(-1)
    with pytest.raises(ValueError):
        mesh_from_arrays([[0, 0], [1, 0]], [[0, 1, 5]])
