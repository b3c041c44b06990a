"""GMRES counts ``max_steps`` in Arnoldi steps: a NumPy float64 minimal-residual reference and SciPy's count."""

import jax
import numpy as np
import pytest

from icmlx import RESULTS
from icmlx.solvers import gmres

sp = pytest.importorskip("scipy.sparse")
sla = pytest.importorskip("scipy.sparse.linalg")

X64 = bool(jax.config.jax_enable_x64)
TOL = 1e-9 if X64 else 2e-4  # agreement with the float64 reference (float32: a few hundred ulps of the iterate)


@pytest.fixture(scope="module")
def system():
    rng = np.random.default_rng(1)
    n = 60
    A = (sp.random(n, n, density=0.1, random_state=1) + 4.0 * sp.eye(n)).tocsr()
    return A, rng.standard_normal(n)


def _minres_step(A, b, x0, k):
    """The iterate of one GMRES cycle of k steps from x0: argmin ‖b − A x‖ over x0 + span{r0, A r0, …}."""
    r0 = b - A @ x0
    K = np.empty((b.size, k))
    v = r0.copy()
    for j in range(k):
        K[:, j] = v / np.linalg.norm(v)
        v = A @ K[:, j]
    Q, _ = np.linalg.qr(K)
    y = np.linalg.lstsq(A @ Q, r0, rcond=None)[0]
    return x0 + Q @ y


@pytest.mark.x64
@pytest.mark.parametrize("k", [1, 3, 7])
def test_max_steps_is_the_number_of_arnoldi_steps(system, k):
    A, b = system
    sol = gmres(A, b, rtol=1e-14, restart=30, max_steps=k, throw=False)
    assert int(sol.stats["num_steps"]) == k
    assert sol.result == RESULTS.max_steps_reached
    ref = _minres_step(A, b, np.zeros_like(b), k)
    assert np.linalg.norm(np.asarray(sol.value, np.float64) - ref) <= TOL * np.linalg.norm(ref)
    hist = np.asarray(sol.stats["residual_history"])
    assert np.all(np.isfinite(hist[: k + 1])) and np.all(np.isnan(hist[k + 1:]))
    assert hist[k] == pytest.approx(np.linalg.norm(b - A @ ref) / np.linalg.norm(b), rel=1e-3 if X64 else 1e-2)


@pytest.mark.x64
def test_max_steps_cuts_the_last_cycle(system):
    """restart=4, max_steps=10: cycles of 4, 4 and 2 steps, as computed by hand."""
    A, b = system
    sol = gmres(A, b, rtol=1e-14, restart=4, max_steps=10, throw=False)
    assert int(sol.stats["num_steps"]) == 10
    x = np.zeros_like(b)
    for k in (4, 4, 2):
        x = _minres_step(A, b, x, k)
    assert np.linalg.norm(np.asarray(sol.value, np.float64) - x) <= TOL * np.linalg.norm(x)
    assert int(gmres(A, b, max_steps=0, throw=False).stats["num_steps"]) == 0


@pytest.mark.x64
def test_steps_to_convergence_match_scipy(system):
    """A converged solve stops inside its cycle: the step count is SciPy's count of inner iterations."""
    A, b = system
    rtol = 1e-8 if X64 else 1e-4
    sol = gmres(A, b, rtol=rtol, restart=30)
    count = []
    sla.gmres(A, b, rtol=rtol, restart=30, callback=lambda r: count.append(r), callback_type="pr_norm")
    assert abs(int(sol.stats["num_steps"]) - len(count)) <= 1
    assert np.linalg.norm(b - A @ np.asarray(sol.value, np.float64)) <= rtol * np.linalg.norm(b)
