"""estimate_diffusion with a basis model: a state-dependent sigma(x) recovered from dense observations, against
the known sigma(x) of an Euler-Maruyama simulation run in float64 NumPy (and SFI's infer_diffusion_linear on the
same data when it is installed)."""

import jax.numpy as jnp
import numpy as np
import pytest

from icmlx.sde import DiffusionField, PolynomialBasis, estimate_diffusion


def _sigma(x):
    return 0.5 + 0.3 * x**2


def _simulate(seed=0, n_traj=20, n_obs=2001, tau=0.01, sub=10):
    """dX = -X dt + sigma(X) dW by Euler-Maruyama at tau / sub, observed every tau (float64 NumPy)."""
    rng = np.random.default_rng(seed)
    h = tau / sub
    x = rng.normal(0.0, 0.6, n_traj)
    out = np.empty((n_traj, n_obs))
    out[:, 0] = x
    for k in range(1, n_obs):
        for _ in range(sub):
            x = x - x * h + _sigma(x) * np.sqrt(h) * rng.normal(size=n_traj)
        out[:, k] = x
    return out[..., None], np.arange(n_obs) * tau


@pytest.fixture(scope="module")
def dense():
    return _simulate()


def test_state_dependent_sigma_within_a_few_percent(dense):
    """sigma(x) = 0.5 + 0.3 x^2 (sigma sigma^T quartic in x) from dense data (tau = 0.01, 40,000 intervals) in
    monomials up to degree 4: within 5% on the central 90% of the visited states. Sampling error of the fitted
    variance there is about 2% (40,000 squared increments over five weights), the O(tau) bias about 1%."""
    y, ts = dense
    est = estimate_diffusion(y, ts, model=PolynomialBasis(1, 4))
    assert est.model == "basis" and isinstance(est.field, DiffusionField)
    lo, hi = np.quantile(y, [0.05, 0.95])
    x = np.linspace(lo, hi, 25)[:, None]
    sig = np.asarray(est.field.sigma(jnp.asarray(x, jnp.float32)))[:, 0, 0]
    np.testing.assert_allclose(sig, _sigma(x[:, 0]), rtol=0.05)
    np.testing.assert_allclose(np.asarray(est.field.diffusion(jnp.asarray(x, jnp.float32)))[:, 0, 0],
                               0.5 * _sigma(x[:, 0]) ** 2, rtol=0.1)
    # a constant basis is the scalar estimator without its first-order correction: the state-averaged variance
    const = estimate_diffusion(y, ts, model=PolynomialBasis(1, 0))
    s2 = float(const.field(jnp.zeros((1,)))[0, 0])
    r = np.diff(y[..., 0], axis=1)
    assert abs(s2 - np.mean(r**2) / 0.01) / s2 < 0.03
    # the state-dependent field is not the scalar average: sigma at the edges exceeds it
    assert float(est.field.sigma(jnp.array([hi], jnp.float32))[0, 0]) > 1.1 * float(const.sigma)


@pytest.mark.slow
def test_state_dependent_sigma_beside_sfi(dense):
    """SFI's infer_diffusion_linear on one trajectory (2,000 intervals) and the same basis: both within 15% of the
    true D(x) = sigma(x)^2 / 2 on the central 90% of the states (the fitted variance's sampling error is about 7%
    there, so 15% is two standard errors), and within 10% of each other (both regress the same squared
    increments; SFI's default estimator also corrects for measurement noise)."""
    pytest.importorskip("SFI")
    from SFI import OverdampedLangevinInference
    from SFI.bases import monomials_up_to
    from SFI.trajectory import TrajectoryCollection

    y, ts = dense
    inf = OverdampedLangevinInference(TrajectoryCollection.from_arrays(X=y[0], dt=0.01))
    inf.compute_diffusion_constant()  # sets the measurement-noise level that the "auto" estimator needs
    inf.infer_diffusion_linear(monomials_up_to(order=4, dim=1, rank="matrix"))
    lo, hi = np.quantile(y[0], [0.05, 0.95])
    x = np.linspace(lo, hi, 15)[:, None]
    d_sfi = np.asarray(inf.diffusion_inferred(x)).reshape(-1)
    est = estimate_diffusion(y[0], ts, model=PolynomialBasis(1, 4))
    d_ours = np.asarray(est.field.diffusion(jnp.asarray(x, jnp.float32))).reshape(-1)
    truth = 0.5 * _sigma(x[:, 0]) ** 2
    np.testing.assert_allclose(d_ours, truth, rtol=0.15)
    np.testing.assert_allclose(d_sfi, truth, rtol=0.15)
    np.testing.assert_allclose(d_ours, d_sfi, rtol=0.10)


def test_basis_model_errors(dense):
    y, ts = dense
    with pytest.raises(ValueError, match="model must be one of"):
        estimate_diffusion(y, ts, model="diag")
    with pytest.raises(ValueError, match="basis"):
        estimate_diffusion(y, ts, model=PolynomialBasis(2, 2))   # a basis for d = 2
    with pytest.raises(ValueError, match="intervals"):
        estimate_diffusion(y[0, :5], ts[:5], model=PolynomialBasis(1, 6))
    with pytest.raises(ValueError, match="d = 1"):
        DiffusionField(PolynomialBasis(1, 1), jnp.ones((2, 1, 1)))(jnp.ones((3, 2)))
