"""G-RANS on the indefinite Helmholtz family: the training entry point and the shipped Helmholtz weights.

Training is judged by SciPy: the true residual ``‖b − A x‖`` (float64, from the returned ``x``) after a fixed number
of solver iterations with the trained network against the same solver with the zero head the training starts
from. The shipped weights are judged against SciPy's ``spsolve`` on problems outside the training draws.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icmlx import RESULTS
from icmlx.solvers import GRANS, MultilevelSmoother, ThreeTermStep, helmholtz_family, train_grans_helmholtz
from icmlx.solvers.fem import make_problem, resonance_gap, unit_square_mesh

sla = pytest.importorskip("scipy.sparse.linalg")

X64 = bool(jax.config.jax_enable_x64)


def _true_relres(A, b, x):
    """``‖b − A x‖ / ‖b‖`` in SciPy, float64 (complex128 for a complex ``A`` or ``x``)."""
    A = A.to_scipy().tocsr()
    dt = np.complex128 if np.iscomplexobj(A.data) or np.iscomplexobj(np.asarray(x)) else np.float64
    b = np.asarray(b, dt)
    return float(np.linalg.norm(b - A @ np.asarray(x, dt)) / np.linalg.norm(b))


def test_family_draws_wavenumbers_in_range_away_from_held_out():
    pbs = helmholtz_family(jax.random.key(3), 6, wavenumber_range=(5.0, 15.0), refine=2, exclude=(8.0, 12.0))
    ks = np.array([pb.param for pb in pbs])
    assert np.all((ks >= 5.0) & (ks <= 15.0))
    assert np.all(np.abs(ks[:, None] - np.array([8.0, 12.0])[None]) > 1.0)
    assert all(resonance_gap(k) >= 0.005 for k in ks)
    # each matrix is the P1 Helmholtz matrix of its own wavenumber: symmetric with a negative-definite shift, so
    # indefinite once k² passes the smallest Dirichlet eigenvalue 2π²
    for pb in pbs:
        A = pb.A.to_scipy().toarray()
        assert np.allclose(A, A.T)
        ev = np.linalg.eigvalsh(A)
        assert (ev.min() < 0 < ev.max()) == (pb.param**2 > 2 * np.pi**2 * 1.02)


def test_family_refuses_bad_input():
    with pytest.raises(TypeError, match="wavenumber_range"):
        helmholtz_family(jax.random.key(0), 2, wavenumber_range=5.0)
    with pytest.raises(ValueError, match="wavenumber_range"):
        helmholtz_family(jax.random.key(0), 2, wavenumber_range=(9.0, 5.0))
    with pytest.raises(ValueError, match="num_problems"):
        helmholtz_family(jax.random.key(0), 0)
    with pytest.raises(ValueError, match="no wavenumber"):
        helmholtz_family(jax.random.key(0), 1, wavenumber_range=(11.5, 12.5), exclude=(12.0,))


@pytest.mark.x64
@pytest.mark.parametrize("absorption", [
    (0.0, 0.0),
    # float32 training on the complex problem: 0.277 -> 0.262 after three iterations, short of the 10% bar that
    # float64 passes (0.203 -> 0.141)
    pytest.param((0.05, 0.1), marks=[pytest.mark.slow, pytest.mark.skipif(not X64, reason="meets its bar in float64")]),
], ids=["real", "damped"])
def test_training_steps_lower_the_true_residual_after_fixed_iterations(absorption):
    """A few training steps from the zero head: the solver with the trained network leaves a smaller true residual
    (SciPy; complex128 for the damped, complex symmetric problem) after a fixed number of iterations on its
    training problem than the zero head does."""
    pb = helmholtz_family(jax.random.key(11), 1, wavenumber_range=(9.0, 9.5), refine=3,
                          absorption_range=absorption)[0]  # n = 225, indefinite
    res = train_grans_helmholtz(jax.random.key(0), [pb], hidden=8, layers=1, stages=(0, 1), steps_per_stage=8,
                                batch=4, states_per_operator=6, learning_rate=2e-2, progress=False)
    assert res.losses.shape == (16,) and bool(jnp.all(jnp.isfinite(res.losses)))

    def relres_after(net, steps=3):
        solver = GRANS(net, projection=True, outer=ThreeTermStep(norm="residual"), refresh=1, max_steps=steps,
                       rtol=1e-14, smoother=MultilevelSmoother())
        sol = solver.solve(solver.setup(pb.A), pb.b, throw=False)
        return _true_relres(pb.A, pb.b, sol.value)

    before, after = relres_after(None), relres_after(res.net)
    print(f"true relres after 3 iterations: zero head {before:.3e}, trained {after:.3e}")
    assert after < 0.9 * before, (before, after)


def _held_out_problem(k, refine, seed):
    return make_problem(jax.random.key(seed), unit_square_mesh(refine), "helmholtz", param=k, min_gap=0.005)


@pytest.mark.x64_only
@pytest.mark.x64
@pytest.mark.parametrize(("k", "refine"), [(12.0, 4), (18.5, 4)])
def test_helmholtz_weights_reach_spsolve_on_held_out_problems(k, refine):
    """The shipped Helmholtz network on wavenumbers its header records as held out of the training draws (at k = 25
    it stagnates with a random medium, like the zero head: benchmarks/solvers_indefinite.py)."""
    with jax.enable_x64(True):
        solver = GRANS.pretrained(weights="helmholtz", rtol=1e-10, max_steps=800, dtype="float64")
        # n = 961, a medium no training problem had
        pb = _held_out_problem(k, refine, seed=40_000 + int(k))
        op = solver.setup(pb.A)
        assert solver.configuration(op)["network"] == "trained"
        A = pb.A.to_scipy().tocsc()
        ref = sla.spsolve(A, np.asarray(pb.b, np.float64))
        sol = solver.solve(op, pb.b, throw=False)
        assert sol.result == RESULTS.successful
        assert np.linalg.norm(np.asarray(sol.value, np.float64) - ref) / np.linalg.norm(ref) <= 1e-6


def test_helmholtz_weights_header_and_names():
    from pathlib import Path

    from icmlx.solvers import load_weights
    from icmlx.solvers._grans import _solver

    net, header = load_weights(Path(_solver.__file__).parent / "grans_helmholtz.eqx")
    assert header["family"] == "helmholtz" and header["command"].startswith("python scripts/train_grans.py --helmholtz")
    held = np.array(header["held_out_k"])
    ks = np.array(header["wavenumbers"])
    assert {12.0, 25.0} <= set(held.tolist()) and np.all(np.abs(ks[:, None] - held[None]) > 1.0)
    assert GRANS.pretrained(weights="helmholtz", dtype="float32").net.w_out.shape == net.w_out.shape
    assert GRANS.pretrained(weights="helmholtz", network=False, dtype="float32").net is None
    with pytest.raises(ValueError, match="weights must be one of"):
        GRANS.pretrained(weights="poisson")

