"""Tests of icmlx.optim.matrix_inverse_root against float64 NumPy references."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import icmlx
from icmlx.optim import (
    RESULTS,
    AbstractInverseRoot,
    Chebyshev,
    CoupledNewton,
    Eigh,
    FrobeniusScaling,
    InverseRootSolution,
    NewtonDB,
    PowerScaling,
    matrix_inverse_root,
    power_iteration,
)
from icmlx.optim._root_kernels import _chebyshev_coefficients_np, _clenshaw

DT = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32


def spd(n: int, kappa: float, seed: int = 0):
    """Random orthogonal Q and eigenvalues logspace(0, -log10 kappa): returns Q, lam, A (float64)."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    lam = np.logspace(0.0, -np.log10(kappa), n)
    return q, lam, (q * lam) @ q.T


def ref_root(a: np.ndarray, p: int) -> np.ndarray:
    w, q = np.linalg.eigh(a)
    return (q * w ** (-1.0 / p)) @ q.T


def band_error(x, q, lam, p, threshold):
    """Max relative error of diag(Q^T X Q) vs lam^{-1/p} over eigenvalues with lam/lam_max >= threshold."""
    d = np.diag(q.T @ np.asarray(x, np.float64) @ q)
    ref = lam ** (-1.0 / p)
    m = lam / lam.max() >= threshold
    return float(np.max(np.abs(d[m] - ref[m]) / ref[m]))


def rel_fro(x, ref):
    return float(np.linalg.norm(np.asarray(x, np.float64) - ref) / np.linalg.norm(ref))


@pytest.fixture(scope="module")
def wellcond():
    mats = [spd(64, 1e2, seed=s) for s in range(3)]
    return mats, jnp.asarray(np.stack([m[2] for m in mats]), DT)


@pytest.mark.x64
@pytest.mark.parametrize("p", [2, 4])
def test_ndb_matches_eigh_wellcond(wellcond, p):
    mats, a = wellcond
    x = matrix_inverse_root(a, p, method="newton_db").value
    for (_, _, a64), xi in zip(mats, x):
        # kappa=1e2: the default relative ridge 1e-6 alone shifts lam^{-1/p} by <= 1e-6/(p*1e-2) = 5e-5
        assert rel_fro(xi, ref_root(a64, p)) <= 1e-4


@pytest.mark.x64
@pytest.mark.parametrize("kappa", [1e4, 1e8])
def test_ndb_band_accuracy(kappa):
    q, lam, a64 = spd(96, kappa, seed=1)
    a = jnp.asarray(a64, DT)
    sol10 = matrix_inverse_root(a, 4, method=NewtonDB(num_steps=10), throw=False)
    x10 = sol10.value
    x15 = matrix_inverse_root(a, 4, method=NewtonDB(num_steps=15, relative_epsilon=0.0), throw=False).value
    # The status tells the truth: 10 steps leave the bottom of the spectrum unresolved, so the residual check fails.
    assert sol10.result == icmlx.RESULTS.inaccurate
    # 10 steps resolve scaled eigenvalues down to ~2.25^-10 ~ 3e-4 (times s = 2 lam_max): the top two
    # decades are accurate, below that the fixed iteration count acts as an implicit regulariser.
    assert band_error(x10, q, lam, 4, 1e-2) <= 1e-4
    assert band_error(x10, q, lam, 4, 1e-4) > 1e-2  # the documented cut-off is real
    # 15 steps (and no ridge) resolve four decades to 1e-3.
    assert band_error(x15, q, lam, 4, 1e-4) <= 1e-3


def test_frobenius_scaling_worse_than_power_iteration():
    q, lam, a64 = spd(96, 1e2, seed=2)
    a = jnp.asarray(a64, DT)
    kw = dict(num_steps=10, relative_epsilon=0.0)
    e_pi = rel_fro(matrix_inverse_root(a, 4, method=NewtonDB(scaling=PowerScaling(), **kw)).value, ref_root(a64, 4))
    e_fro = rel_fro(matrix_inverse_root(a, 4, method=NewtonDB(scaling=FrobeniusScaling(), **kw)).value,
                    ref_root(a64, 4))
    # ||A||_F ~ 5 lam_max here, so the scaled spectrum starts ~2.5x lower: about one NDB step short.
    assert e_fro >= 10 * e_pi


def test_power_iteration_bounds_and_zero_block():
    mats = [spd(64, k, seed=s)[2] for s, k in enumerate([1e1, 1e3, 1e6])]
    a = np.stack(mats + [np.zeros((64, 64))])
    est = np.asarray(power_iteration(jnp.asarray(a, DT)), np.float64)
    lmax = np.array([np.linalg.eigvalsh(m)[-1] for m in mats])
    ratio = est[:3] / lmax
    assert np.all(ratio >= 0.9) and np.all(ratio <= 1.01), ratio
    assert np.isfinite(est[3]) and 0.0 <= est[3] < 1e-6


@pytest.mark.parametrize("method", ["newton_db", "coupled_newton", "chebyshev", "eigh"])
def test_singular_and_zero_input_finite_psd(method):
    rng = np.random.default_rng(3)
    g = rng.standard_normal((64, 4))
    a = np.stack([g @ g.T, np.zeros((64, 64))])
    solvers = [NewtonDB(num_steps=10), NewtonDB(num_steps=30)] if method == "newton_db" else [method]
    for k, solver in enumerate(solvers):
        x = np.asarray(matrix_inverse_root(jnp.asarray(a, DT), 4, method=solver, throw=False).value, np.float64)
        assert np.all(np.isfinite(x)), (method, k)
        for xi in x:
            xs = 0.5 * (xi + xi.T)
            assert np.abs(xi - xi.T).max() <= 1e-3 * np.abs(xi).max()
            w = np.linalg.eigvalsh(xs)
            assert w[0] >= -1e-3 * w[-1], (method, k, w[0], w[-1])


@pytest.mark.x64
@pytest.mark.parametrize("kappa", [1e2, 1e8])
def test_coupled_newton_matches_eigh(kappa):
    q, lam, a64 = spd(96, kappa, seed=4)
    x = matrix_inverse_root(jnp.asarray(a64, DT), 4, method=CoupledNewton(scaling=FrobeniusScaling())).value
    # float32 CN stagnates near its rounding floor before tol=1e-6; top two decades are within 2e-4
    # (the default ridge 1e-6 contributes <= 2.5e-5 of that).
    assert band_error(x, q, lam, 4, 1e-2) <= 2e-4


@pytest.mark.x64
def test_chebyshev_clenshaw_matches_numpy_chebval():
    from numpy.polynomial import chebyshev as C

    rng = np.random.default_rng(5)
    q, _ = np.linalg.qr(rng.standard_normal((48, 48)))
    mu = rng.uniform(-1.0, 1.0, 48)  # eigenvalues of S inside [-1, 1]
    s = (q * mu) @ q.T
    coeffs = _chebyshev_coefficients_np(4, 30, 1e-2)
    out = _clenshaw(jnp.asarray(s[None], DT), jnp.asarray(coeffs, DT), None)[0]
    ref = (q * C.chebval(mu, coeffs)) @ q.T
    tol = 1e-10 if DT == jnp.float64 else 2e-5
    assert np.abs(np.asarray(out, np.float64) - ref).max() <= tol * np.abs(ref).max()


def test_chebyshev_coefficients_and_full_method():
    from numpy.polynomial import chebyshev as C

    delta, deg = 1e-2, 40
    c = _chebyshev_coefficients_np(4, deg, delta)
    x = np.linspace(delta, 1 + delta, 501)
    approx = C.chebval(2 * (x - delta) - 1, c)
    # x^{-1/4} on [1e-2, 1.01] is analytic; degree 40 truncation error is ~1e-3 relative near the left end
    assert np.max(np.abs(approx - x**-0.25) / x**-0.25) <= 5e-3
    # Full method with Frobenius scaling (s = ||A||_F known exactly): result = s^{-1/p} c(2A/s - I).
    q, lam, a64 = spd(64, 1e1, seed=6)
    rel = 1e-2
    solver = Chebyshev(degree=deg, scaling=FrobeniusScaling(), relative_epsilon=rel)
    xm = matrix_inverse_root(jnp.asarray(a64, DT), 4, method=solver, epsilon=0.0).value
    s = np.linalg.norm(a64)
    cc = _chebyshev_coefficients_np(4, deg, rel)
    ref = (q * (C.chebval(2 * lam / s - 1, cc) * s**-0.25)) @ q.T
    assert rel_fro(xm, ref) <= 1e-4


@pytest.mark.x64
def test_eigh_heuristics():
    q, _, _ = spd(8, 1e1, seed=7)
    lam = np.array([-0.5, 5e-4, 0.1, 0.5, 1.0, 2.0, 3.0, 4.0])
    a = jnp.asarray((q * lam) @ q.T, DT)
    eps = 1e-3
    # float32 eigh: eigenvalue errors ~ u*||A|| = 5e-7 on lam = 1e-3 move its root by ~1e-4 relative
    tol = 1e-10 if DT == jnp.float64 else 1e-3

    def expect(w):
        return (q * w) @ q.T

    x = matrix_inverse_root(a, 2, method=Eigh(heuristic="shampoo"), epsilon=eps).value
    assert rel_fro(x, expect((lam + 0.5 + eps) ** -0.5)) <= tol
    x = matrix_inverse_root(a, 2, method=Eigh(heuristic="abs"), epsilon=eps).value
    assert rel_fro(x, expect((np.abs(lam) + eps) ** -0.5)) <= tol
    x = matrix_inverse_root(a, 2, method=Eigh(heuristic="relu"), epsilon=eps).value
    w = np.where(lam > eps, np.abs(lam) ** -0.5, 0.0)
    assert rel_fro(x, expect(w)) <= tol


def test_batched_equals_per_block_and_vmap():
    a = jnp.asarray(np.stack([spd(16, 1e3, seed=s)[2] for s in range(4)]), DT)
    # kappa=1e3: 10 Newton-DB steps miss the rtol (result inaccurate), which does not matter for the layout check.
    f = lambda m: matrix_inverse_root(m, 2, throw=False).value  # noqa: E731 (eager: one compile per shape)
    batched = np.asarray(f(a))
    single = np.stack([np.asarray(f(a[i : i + 1]))[0] for i in range(4)])
    vm = np.asarray(jax.vmap(lambda m: matrix_inverse_root(m, 2, throw=False).value)(a))
    scale = np.abs(batched).max()
    # same arithmetic per block; only the matmul kernel may differ (float32 reassociation ~1e-6)
    assert np.abs(batched - single).max() <= 1e-5 * scale
    assert np.abs(batched - vm).max() <= 1e-5 * scale
    # leading batch dims are preserved
    sol = matrix_inverse_root(a.reshape(2, 2, 16, 16), 2, throw=False)
    assert sol.value.shape == (2, 2, 16, 16) and sol.residual.shape == sol.ridge.shape == (2, 2)


def test_bfloat16_matmuls():
    q, lam, a64 = spd(64, 1e4, seed=8)
    x = matrix_inverse_root(jnp.asarray(a64, jnp.float32), 4, method=NewtonDB(matmul_dtype=jnp.bfloat16),
                            throw=False).value
    assert x.dtype == jnp.float32 and np.all(np.isfinite(np.asarray(x)))
    # bf16 operands (unit roundoff 4e-3) with f32 accumulation; the automatic ridge eps(bf16)/8 ~ 1e-3
    # lam_max keeps the coupled iteration stable (without it: entries ~1e14 at kappa=1e4) and costs
    # <= 1e-3/(4*0.1) = 2.5e-3 relative on the top decade.
    assert band_error(x, q, lam, 4, 1e-1) <= 3e-2
    assert np.abs(np.asarray(x)).max() <= 1.5 * (1e-3 * lam.max()) ** -0.25


def test_bad_input_raises():
    with pytest.raises((ValueError, TypeError)):  # jaxtyping (TypeError) or our own check (ValueError)
        matrix_inverse_root(jnp.ones((3, 4)), 2)
    with pytest.raises(ValueError, match="NewtonDB"):
        matrix_inverse_root(jnp.eye(3), 3, method="newton_db")
    with pytest.raises((ValueError, TypeError), match="method"):
        matrix_inverse_root(jnp.eye(3), 2, method="svd")
    with pytest.raises(ValueError, match="p must"):
        matrix_inverse_root(jnp.eye(3), 0, method="eigh")
    with pytest.raises(TypeError):
        matrix_inverse_root(jnp.eye(3, dtype=jnp.int32), 2)
    with pytest.raises(Exception, match="non-finite"):
        matrix_inverse_root(jnp.full((3, 3), jnp.nan), 2)


@settings(deadline=None, max_examples=10)
@given(seed=st.integers(0, 2**16), p=st.sampled_from([2, 4]))
def test_inverse_root_property(seed, p):
    # Invariant: X = A^{-1/p} is symmetric and X^p A ~ I for well-conditioned SPD A (any scale).
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((16, 48))
    a64 = (g @ g.T / 48 + 0.5 * np.eye(16)) * 10.0 ** rng.uniform(-3, 3)
    x = np.asarray(matrix_inverse_root(jnp.asarray(a64, DT), p, method=NewtonDB(num_steps=12)).value, np.float64)
    assert np.abs(x - x.T).max() <= 1e-4 * np.abs(x).max()
    assert np.abs(np.linalg.matrix_power(x, p) @ a64 - np.eye(16)).max() <= 1e-3


# ---------------------------------------------------------------------------------------------- status / info


def _residual64(x, a64, ridge, p):
    """Independent float64 residual max|X^p (A + r I) - I| per matrix."""
    x64 = np.asarray(x, np.float64)
    out = []
    for xi, ai, ri in zip(x64, a64, np.asarray(ridge, np.float64)):
        out.append(np.max(np.abs(np.linalg.matrix_power(xi, p) @ (ai + ri * np.eye(len(ai))) - np.eye(len(ai)))))
    return np.array(out)


def test_coupled_newton_info_converged(wellcond):
    mats, a = wellcond
    info = matrix_inverse_root(a, 4, method=CoupledNewton())
    x = info.value
    assert isinstance(info, InverseRootSolution) and isinstance(info, icmlx.Solution)
    assert info.result == RESULTS.successful
    assert 1 <= int(info.num_steps) < 100
    a64 = np.stack([m[2] for m in mats])
    ref = _residual64(x, a64, info.ridge, 4)
    # the reported residual is the float32/64 evaluation of the same quantity: agree to rounding of X^4 A
    np.testing.assert_allclose(np.asarray(info.residual, np.float64), ref, rtol=0.2, atol=1e-5)
    assert np.all(ref <= (1e-9 if DT == jnp.float64 else 1e-4))
    for (_, _, m64), xi in zip(mats, x):  # converged result is the root (kappa=1e2, ridge 1e-6 relative)
        assert rel_fro(xi, ref_root(m64, 4)) <= 1e-4


def test_coupled_newton_max_steps_status_and_throw(wellcond):
    _, a = wellcond
    info = matrix_inverse_root(a, 4, method=CoupledNewton(max_steps=2), throw=False)
    x = info.value
    assert info.result == RESULTS.max_steps_reached
    assert int(info.num_steps) == 2
    assert np.all(np.isfinite(np.asarray(x)))
    assert float(np.min(info.residual)) > 1e-2  # 2 steps from X0 = z^{1/p} I are far from converged
    with pytest.raises(Exception, match="max_steps"):  # throw=True is the default
        jax.block_until_ready(matrix_inverse_root(a, 4, method=CoupledNewton(max_steps=2)).value)


def test_fixed_step_methods_report_steps(wellcond):
    _, a = wellcond
    info = matrix_inverse_root(a, 4, method=NewtonDB(num_steps=12))
    assert info.result == RESULTS.successful and int(info.num_steps) == 24  # two passes for p=4
    info = matrix_inverse_root(a, 2, method=Chebyshev(degree=30), throw=False)
    assert int(info.num_steps) == 30 and info.residual.shape == (3,)
    # the status is the residual check: degree 30 is too low for the default interval (about 4e-3 relative)
    assert (info.result == RESULTS.successful) == bool(np.all(np.asarray(info.residual) <= 1e-3))
    assert info.result == RESULTS.inaccurate


@pytest.mark.parametrize("method", ["newton_db", "coupled_newton", "chebyshev", "eigh"])
def test_chunked_equals_stacked(method):
    # 5 matrices of mixed conditioning (coupled Newton needs 9..18 steps for them) in chunks of 2 (exercises
    # the identity padding of the last chunk) vs one batched call; each solver works per matrix (coupled
    # Newton stops per matrix), so only the matmul kernels' float rounding may differ. (The "auto" rule is
    # checked in test_auto_chunk_size_rule; the DASH tests run chunked and unchunked stacks.)
    a64 = np.stack([spd(32, k, seed=s)[2] for s, k in enumerate([1e1, 1e2, 1e3, 1e4, 1e5])])
    a = jnp.asarray(a64, DT)
    full = np.asarray(matrix_inverse_root(a, 4, method=method, chunk_size=None, throw=False).value)
    info = matrix_inverse_root(a, 4, method=method, chunk_size=2, throw=False)
    chunked = info.value
    tol = 1e-5 if DT == jnp.float32 else 1e-10  # float32 / float64 reassociation, amplified <= ~10x
    np.testing.assert_allclose(np.asarray(chunked), full, rtol=tol, atol=tol * np.abs(full).max())
    if method == "coupled_newton":  # the converged roots themselves, against float64 eigh of A + ridge I
        for xi, ai, ri in zip(full, a64, np.asarray(info.ridge, np.float64)):
            assert rel_fro(xi, ref_root(ai + ri * np.eye(32), 4)) <= (1e-4 if DT == jnp.float32 else 1e-6)
    with pytest.raises(ValueError, match="chunk_size"):
        matrix_inverse_root(a, 4, chunk_size=0)
    with pytest.raises((ValueError, TypeError), match="chunk_size"):  # jaxtyping/beartype or our own check
        matrix_inverse_root(a, 4, chunk_size="big")


def test_auto_chunk_size_rule(monkeypatch):
    from icmlx.optim._inverse_root import _resolve_chunk_size

    # on the CPU backend: one chunk of matrices takes at most 64 KiB
    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    assert _resolve_chunk_size("auto", "newton_db", 128, jnp.float32) == 1
    assert _resolve_chunk_size("auto", "chebyshev", 64, jnp.float32) == 4
    assert _resolve_chunk_size("auto", "coupled_newton", 32, jnp.float32) == 16
    assert _resolve_chunk_size("auto", "newton_db", 64, jnp.float64) == 2
    assert _resolve_chunk_size("auto", "newton_db", 1024, jnp.float32) == 1
    assert _resolve_chunk_size("auto", "eigh", 128, jnp.float32) is None
    assert _resolve_chunk_size("auto", Eigh(heuristic="abs"), 128, jnp.float32) is None
    assert _resolve_chunk_size("auto", NewtonDB(num_steps=3), 128, jnp.float32) == 1
    assert _resolve_chunk_size(3, "eigh", 128, jnp.float32) == 3
    assert _resolve_chunk_size(None, "newton_db", 8, DT) is None
    # on an accelerator: one batched call
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert _resolve_chunk_size("auto", "newton_db", 128, jnp.float32) is None


def test_coupled_newton_status_per_matrix():
    # an easy (kappa 10) and a hard (kappa 1e6) matrix with a cap of 12 steps: the easy one converges and stops
    # (its residual, recomputed in float64, is at the tolerance), the hard one hits the cap
    mats = [spd(24, 1e1, seed=1), spd(24, 1e6, seed=2)]
    a = jnp.asarray(np.stack([m[2] for m in mats]), DT)
    info = matrix_inverse_root(a, 4, method=CoupledNewton(max_steps=12), throw=False)
    x = info.value
    assert info.result == RESULTS.max_steps_reached and int(info.num_steps) == 12
    res64 = _residual64(x, np.stack([m[2] for m in mats]), info.ridge, 4)
    assert res64[0] <= (1e-5 if DT == jnp.float32 else 1e-6)  # converged: max|M - I| <= tol=1e-6 (+ rounding)
    assert res64[1] > 1e-3
    # the converged root vs float64 eigh: the relative ridge 1e-6 moves it by <= 1e-6 * kappa / 4
    assert rel_fro(x[0], ref_root(mats[0][2], 4)) <= (1e-5 if DT == jnp.float64 else 1e-4)


# ------------------------------------------------------------------------------------ strategy objects / API


def test_results_are_icmlx_results(wellcond):
    _, a = wellcond
    assert RESULTS is icmlx.RESULTS
    sol = matrix_inverse_root(a, 4, method=CoupledNewton(max_steps=2), throw=False)
    assert sol.result == icmlx.RESULTS.max_steps_reached
    assert icmlx.result_name(sol.result) == "max_steps_reached"
    assert icmlx.result_name(matrix_inverse_root(a, 4).result) == "successful"


def test_solver_objects_hashable_static_and_not_callable():
    solvers = [NewtonDB(), NewtonDB(num_steps=12, scaling=FrobeniusScaling()), CoupledNewton(max_steps=50),
               Chebyshev(degree=32, matmul_dtype=jnp.bfloat16), Eigh(heuristic="relu"), PowerScaling(num_steps=3)]
    for s in solvers:
        assert hash(s) == hash(type(s)(**{f.name: getattr(s, f.name) for f in dataclasses.fields(s)}))
        assert jax.tree.leaves(s) == []  # static fields only: nothing for jit or inject_hyperparams to trace
        assert not callable(s)
    assert NewtonDB(num_steps=12) == NewtonDB(num_steps=12) != NewtonDB(num_steps=13)
    assert len({NewtonDB(), NewtonDB(), Eigh()}) == 2


@pytest.mark.parametrize("make,arg", [
    (lambda: NewtonDB(num_steps=0), "num_steps"),
    (lambda: CoupledNewton(max_steps=0), "max_steps"),
    (lambda: CoupledNewton(rtol=-1e-6), "rtol"),
    (lambda: Chebyshev(degree=0), "degree"),
    (lambda: Eigh(heuristic="svd"), "heuristic"),
    (lambda: Eigh(relative_epsilon=-1.0), "relative_epsilon"),
    (lambda: NewtonDB(relative_epsilon=float("nan")), "relative_epsilon"),
    (lambda: PowerScaling(num_vectors=0), "num_vectors"),
    (lambda: PowerScaling(multiplier=0.0), "multiplier"),
    (lambda: NewtonDB(scaling="frobenius"), "scaling"),
])
def test_solver_objects_reject_invalid_settings(make, arg):
    with pytest.raises((ValueError, TypeError), match=arg):  # our ValueError (or beartype's TypeError in tests)
        make()


def test_solver_objects_reject_invalid_settings_valueerror():
    # plain ints of the right type reach our own check: a ValueError naming the argument and its value
    with pytest.raises(ValueError, match=r"num_steps=0"):
        NewtonDB(num_steps=0)
    with pytest.raises(ValueError, match=r"degree=-2"):
        Chebyshev(degree=-2)
    with pytest.raises(TypeError, match="matmul_dtype"):
        NewtonDB(matmul_dtype=jnp.int32)


def test_string_shorthand_is_the_default_object(wellcond):
    _, a = wellcond
    for name, obj in [("newton_db", NewtonDB()), ("chebyshev", Chebyshev()), ("eigh", Eigh()),
                      ("coupled_newton", CoupledNewton())]:
        x_str = np.asarray(matrix_inverse_root(a, 4, method=name).value)
        x_obj = np.asarray(matrix_inverse_root(a, 4, method=obj).value)
        np.testing.assert_array_equal(x_str, x_obj)


def test_removed_flag_arguments_and_names(wellcond):
    import icmlx.optim as optim

    _, a = wellcond
    for kw in (dict(num_iters=12), dict(max_iters=2), dict(return_info=True), dict(eigh_heuristic="abs"),
               dict(scaling="frobenius")):
        with pytest.raises(TypeError, match=next(iter(kw))):
            matrix_inverse_root(a, 4, method="newton_db", **kw)
    with pytest.raises(AttributeError, match="InverseRootInfo"):
        optim.InverseRootInfo  # noqa: B018
    with pytest.raises(TypeError, match="num_iters"):
        power_iteration(a, num_iters=5)


class _EighToy(AbstractInverseRoot):
    """A toy solver outside the library: X = (A + eps I)^{-1/p} by eigh, reporting 3 steps."""

    def solve(self, a, p, epsilon):
        w, q = jnp.linalg.eigh(a)
        x = (q * (w + epsilon)[..., None, :] ** (-1.0 / p)) @ jnp.swapaxes(q, -1, -2)
        ridge = jnp.full(a.shape[:1], epsilon, a.dtype)
        return x, ridge, jnp.full([], 3, jnp.int32), jnp.zeros(a.shape[:1], jnp.int32)


def test_solver_objects_carry_their_iteration(wellcond):
    # matrix_inverse_root calls the object's solve(): a user-defined solver works without any registration
    _, a = wellcond
    sol = matrix_inverse_root(a, 4, method=_EighToy(), epsilon=1e-3)
    w, q = np.linalg.eigh(np.asarray(a, np.float64))
    ref = (q * (w + 1e-3)[..., None, :] ** -0.25) @ np.swapaxes(q, -1, -2)
    np.testing.assert_allclose(np.asarray(sol.value), ref, rtol=2e-4, atol=2e-5)
    assert int(sol.num_steps) == 3 and sol.result == RESULTS.successful
    for m in (NewtonDB(), CoupledNewton(), Chebyshev(), Eigh()):
        assert type(m).solve is not AbstractInverseRoot.solve


def test_coupled_newton_diverged_raises_by_default():
    # An indefinite input makes coupled Newton's error grow: status diverged, raised under the default throw=True.
    a = jnp.asarray(np.diag([1.0, -1.0, 0.5, 2.0]), DT)[None]
    sol = matrix_inverse_root(a, 4, method=CoupledNewton(), throw=False)
    assert sol.result == RESULTS.diverged
    assert np.all(np.isfinite(np.asarray(sol.value)))  # the last good iterate is returned
    with pytest.raises(Exception, match="diverged"):
        jax.block_until_ready(matrix_inverse_root(a, 4, method=CoupledNewton()).value)
