"""Strength of connection strategies: the evolution measure against PyAMG's ``evolution_strength_of_connection``
(the peer; its spectral-radius estimate replaced by the exact dense eigenvalue, which both sides then use), and
``solve(strength="evolution")`` against PyAMG SA+CG with the same measure."""

import jax
import numpy as np
import pytest

import icmlx
from icmlx.solvers import EvolutionStrength, SymmetricStrength, amg_setup, solve
from icmlx.solvers._amg._strength import evolution_strength

sp = pytest.importorskip("scipy.sparse")
pyamg = pytest.importorskip("pyamg")
pstrength = pytest.importorskip("pyamg.strength")
from pyamg.gallery import diffusion_stencil_2d, linear_elasticity, poisson, stencil_grid  # noqa: E402

X64 = bool(jax.config.jax_enable_x64)
RTOL = 1e-8 if X64 else 1e-5


def aniso(m, theta=np.pi / 8):
    return stencil_grid(diffusion_stencil_2d(epsilon=1e-3, theta=theta, type="FE"), (m, m), format="csr")


def exact_rho(M, **_):
    return float(np.max(np.abs(np.linalg.eigvals(sp.csr_matrix(M).toarray()))))


def _cases():
    rng = np.random.default_rng(0)
    A = aniso(14)
    E, EB = linear_elasticity((8, 8), format="bsr")
    return {
        "aniso, constant": (A, np.ones((A.shape[0], 1)), 1, {}),
        "poisson, constant": (poisson((12, 12), format="csr"), np.ones((144, 1)), 1, {}),
        "aniso, two candidates": (A, np.c_[np.ones(A.shape[0]), rng.standard_normal(A.shape[0])], 1, {}),
        "aniso, k=4, epsilon=2": (A, np.ones((A.shape[0], 1)), 1, dict(k=4, epsilon=2.0)),
        "elasticity, rigid-body modes": (E, EB, 2, {}),
        "grid-aligned anisotropy": (aniso(12, theta=0.0), np.ones((144, 1)), 1, dict(epsilon=2.0)),
    }


@pytest.mark.parametrize("name", sorted(_cases()))
def test_evolution_strength_is_pyamgs(name, monkeypatch):
    A, B, bs, kw = _cases()[name]
    monkeypatch.setattr(pstrength, "approximate_spectral_radius", exact_rho)
    ref = sp.csr_matrix(pstrength.evolution_strength_of_connection(A, B, **kw))
    ref.eliminate_zeros()
    C = sp.csr_matrix(A)
    n = C.shape[0]
    rho = exact_rho(sp.diags(1.0 / C.diagonal()) @ C)
    got = evolution_strength(C, B, node_of=np.arange(n) // bs, num_nodes=n // bs, rho=rho, **kw)
    assert ((got != 0) != (ref != 0)).nnz == 0  # the same strong pattern, entry for entry
    assert abs(got - ref).max() <= 1e-10  # values in (0, 1], float64 rounding of the same arithmetic


def test_evolution_strength_graph_is_symmetric_without_diagonal():
    A = aniso(10)
    S = EvolutionStrength().strong_graph(A, B=np.ones((100, 1)), node_of=np.arange(100), num_nodes=100,
                                         rho=exact_rho(sp.diags(1.0 / A.diagonal()) @ A))
    assert (S != S.T).nnz == 0 and S.diagonal().sum() == 0 and S.has_sorted_indices
    assert 0 < S.nnz < A.nnz - 100  # some couplings are weak, the graph is not the matrix graph


def test_strength_settings_are_checked():
    with pytest.raises(ValueError, match="k must be"):
        EvolutionStrength(k=0)
    with pytest.raises(ValueError, match="epsilon must be"):
        EvolutionStrength(epsilon=0.5)
    with pytest.raises(ValueError, match="epsilon must be"):
        EvolutionStrength(epsilon=float("nan"))
    with pytest.raises(ValueError, match="evolution"):
        amg_setup(poisson((8, 8), format="csr"), strength="ode")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["grid-aligned", "rotated", "elasticity"])
def test_evolution_iterations_within_1p5x_of_pyamg_evolution(name):
    if name == "elasticity":
        A, B = linear_elasticity((24, 24), format="bsr")
    else:
        A, B = aniso(40, theta=0.0 if name == "grid-aligned" else np.pi / 8), None
    b = np.random.default_rng(1).standard_normal(A.shape[0])
    res = []
    pyamg.smoothed_aggregation_solver(A, B=B, strength="evolution").solve(b, tol=RTOL, accel="cg", residuals=res)
    sol = solve(A, b, near_nullspace=B, strength="evolution")
    x = np.asarray(sol.value, np.float64)
    assert sol.result == icmlx.RESULTS.successful
    assert np.linalg.norm(b - A @ x) <= 1.01 * RTOL * np.linalg.norm(b)
    assert int(sol.num_steps) <= 1.5 * (len(res) - 1) + 1, (int(sol.num_steps), len(res) - 1)
    if name == "grid-aligned":  # the case the measure is for: symmetric strength aggregates across the weak axis
        sym = solve(A, b, strength=SymmetricStrength())
        assert int(sol.num_steps) < int(sym.num_steps)


@pytest.mark.slow
def test_evolution_strength_with_a_reused_pattern():
    A = aniso(24, theta=0.0)
    b = np.ones(A.shape[0])
    s = amg_setup(A, strength=EvolutionStrength(), reuse_pattern=True)
    s2 = s.update(2.0 * A)  # the aggregates of the first matrix, the values of the second
    for M, solver in ((A, s), (2.0 * A, s2)):
        x = np.asarray(solver.solve(b).value, np.float64)
        assert np.linalg.norm(b - M @ x) <= 1.01 * RTOL * np.linalg.norm(b)
