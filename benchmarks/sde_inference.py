"""Drift inference from sparse observations: icmlx vs StochasticForceInference (SFI) and the naive baseline.

Same observations (Van der Pol, mu = 1, sigma = 0.25, one path of T = 500 sampled every tau), same accuracy
metric (density-weighted RMSE on a 20x20 grid, icmlx.sde.weighted_rmse):

- icmlx ``naive_drift`` (sparse GP) and ``naive_drift`` on SFI's basis (monomials up to order 3);
- icmlx ``infer_drift``, geodesic-guided and plain-bridge EM (8 iterations, 64 particles, 20 steps per
  interval: the example's size);
- SFI 2.0.4 ``infer_force_linear`` (monomials up to order 3, diffusion estimated) and ``infer_force``
  (parametric, RK4 flow with 2 substeps per interval, D = sigma^2/2 fixed, ``eiv=False``).

Correctness first: every estimator must return a finite wRMSE; icmlx's naive estimator on the SFI basis is
cross-checked against SFI's linear estimator with ``preset="KM"`` (both are increment regressions on the same
basis) and the agreement is printed and recorded. With SFI's default ``preset="auto"`` the linear estimator
gave wRMSE 233 on these observations in our run (not investigated further).
Compile time is reported apart from steady state for icmlx; SFI is timed end-to-end (its own JAX compiles
included, as a user would see it) on the first call and the steady state of a second call.

SFI's own demo systems with sigma unknown to both libraries (``examples/gallery`` of the SFI repository, at the
demos' parameters: the 2-D limit cycle, omega = 2, D = 0.1, dt = 0.05, 4000 steps; the 3-D Lorenz system
(20, 8, 2), D = 5, dt = 0.005, 2000 steps; both simulated here with icmlx at dt / 20 and dt / 10 after the demos'
burn-in): SFI ``compute_diffusion_constant`` + ``infer_force_linear`` (the demos' bases and modes) against
icmlx ``estimate_diffusion`` + ``naive_drift(sigma=None)`` on the same monomial basis and on the default class.
The rows give the weighted RMSE (grid 20 per axis in 2-D, 10 in 3-D) and the relative error of sigma
(SFI: sigma = sqrt(2 tr(D) / d)).

    python benchmarks/sde_inference.py --quick      # tau = 2.8 only (and the SFI demos)
    python benchmarks/sde_inference.py              # tau in {2.0, 2.8} (and the SFI demos)
"""

import argparse

import jax
import jax.numpy as jnp
import numpy as np

from _harness import print_table, time_fn, write_results
from icmlx.sde import (
    GeodesicGuidance,
    NoGuidance,
    PolynomialBasis,
    RidgeRegression,
    estimate_diffusion,
    infer_drift,
    naive_drift,
    simulate,
    subsample,
    van_der_pol_drift,
    weighted_rmse,
)

SIGMA = 0.25
# the example's size (examples/langevin_sparse.py, VDP_QUICK)
EM_CFG = dict(num_steps=8, num_particles=64, num_time_steps=20)


def _sfi(X, tau, mode):
    from SFI import OverdampedLangevinInference
    from SFI.bases import monomials_up_to
    from SFI.trajectory import TrajectoryCollection

    B = monomials_up_to(order=3, dim=2, rank="vector")
    inf = OverdampedLangevinInference(TrajectoryCollection.from_arrays(X=X, dt=tau))
    if mode == "linear":
        inf.compute_diffusion_constant()
        inf.infer_force_linear(B, preset="KM")
    else:
        inf.infer_force(B, D=np.eye(2) * SIGMA**2 / 2, integrator="rk4", n_substeps=2, eiv=False)
    return inf.force_inferred


def _sfi_drift(F):
    # evaluated on the metric grid only (host call), wrapped to the icmlx drift signature via pure_callback
    def f(x):
        return jax.pure_callback(
            lambda z: np.asarray(F(np.asarray(z, np.float64)[None]), np.float32).reshape(2),
            jax.ShapeDtypeStruct((2,), jnp.float32), x, vmap_method="sequential")

    return f


def run(tau, repeats):
    f = van_der_pol_drift(1.0)
    dense = simulate(jax.random.key(0), f, SIGMA, jnp.array([[1.81, -1.41]]), 500.0, 0.01)
    sp = subsample(dense, int(round(tau / 0.01)))
    obs, ts = sp.xs, sp.ts
    rows = []

    def add(name, drift, timing):
        e = float(weighted_rmse(f, drift, obs))
        assert np.isfinite(e), name
        rows.append(dict(tau=tau, method=name, wrmse=e, compile_s=timing.get("compile_s", float("nan")),
                         steady_s=timing["median_s"]))
        print(f"  tau={tau} {name}: wRMSE={e:.3f} steady={timing['median_s']:.2f}s", flush=True)

    t = time_fn(lambda: naive_drift(obs, ts, SIGMA).drift.weights, repeats=repeats)
    add("icmlx naive (sparse GP)", naive_drift(obs, ts, SIGMA).drift, t)
    poly = RidgeRegression(PolynomialBasis(2, 3), 1e-6)
    t = time_fn(lambda: naive_drift(obs, ts, SIGMA, function_class=poly).drift.weights, repeats=repeats)
    naive_poly = naive_drift(obs, ts, SIGMA, function_class=poly).drift
    add("icmlx naive (monomials<=3)", naive_poly, t)

    def em(guidance):
        g = GeodesicGuidance(strength=5.0) if guidance == "geodesic" else NoGuidance()
        # throw=False: collapsed bridges are recorded in the row (num_degenerate) rather than raised; the sparse GP
        # (function_class=None), the class of the paper and of the naive row above
        return infer_drift(jax.random.key(1), obs, ts, SIGMA, guidance=g, function_class=None, throw=False,
                           **EM_CFG)

    keep = {}
    for guidance, name in (("geodesic", "icmlx geodesic EM (8 it)"), ("none", "icmlx plain-bridge EM (8 it)")):
        def em_keep(g=guidance):
            keep[g] = em(g)
            return keep[g].drift.weights

        # plain and geodesic EM share one compiled loop: the plain row's first call is already warm
        t = time_fn(em_keep, repeats=1, warmup=0)
        add(name, keep[guidance].drift, t)
        rows[-1]["per_iter_s"] = t["median_s"] / EM_CFG["num_steps"]
        rows[-1]["ess_median"] = float(keep[guidance].stats["ess_median"][-1])
        rows[-1]["num_degenerate"] = int(keep[guidance].stats["num_degenerate"][-1])

    X = np.asarray(obs[0], np.float64)
    for mode, name in (("linear", "SFI infer_force_linear"), ("param", "SFI infer_force (rk4)")):
        try:
            def sfi_keep(m=mode):
                keep[m] = _sfi(X, tau, m)
                return keep[m]

            t = time_fn(sfi_keep, repeats=1, warmup=0, is_jax=False)
            add(name, _sfi_drift(keep[mode]), t)
        except ImportError as err:
            print(f"  {name} skipped: {err}")
    by = {r["method"]: r for r in rows}
    lin = by.get("SFI infer_force_linear")
    if lin is not None:  # cross-check: same estimator family (KM increment regression), same basis
        a, b = by["icmlx naive (monomials<=3)"]["wrmse"], lin["wrmse"]
        agree = abs(a - b) <= 0.1 * max(a, b)
        print(f"  cross-check icmlx naive(monomials) {a:.3f} vs SFI linear KM {b:.3f}: "
              f"{'agree' if agree else 'DISAGREE (reported, not hidden)'}")
        for r in rows:
            r["naive_cross_check_agree"] = agree
    em_row = by["icmlx geodesic EM (8 it)"]
    for r in rows:
        r["wrmse_ratio_vs_em"] = r["wrmse"] / em_row["wrmse"]
        r["time_ratio_vs_em"] = r["steady_s"] / em_row["steady_s"]
    return rows


def _limit_cycle(x):
    r2 = jnp.sum(x**2)
    return (1.0 - r2) * x + 2.0 * jnp.array([-x[1], x[0]])


def _lorenz(x):
    return jnp.array([20.0 * (x[1] - x[0]), x[0] * (8.0 - x[2]) - x[1], x[0] * x[1] - 2.0 * x[2]])


#: name, drift, d, D0, dt, steps, oversampling, burn-in steps, x0, SFI monomial degree, SFI linear-fit options
SFI_DEMOS = (
    ("SFI demo: limit cycle 2-D", _limit_cycle, 2, 0.1, 0.05, 4000, 20, 5000, (0.5, 0.0), 3, {}),
    ("SFI demo: Lorenz 3-D", _lorenz, 3, 5.0, 0.005, 2000, 10, 2000, (1.0, 1.0, 1.0), 2, {"G_mode": "trapeze"}),
)


def _sfi_drift_d(F, d):
    def f(x):
        return jax.pure_callback(
            lambda z: np.asarray(F(np.asarray(z, np.float64)[None]), np.float32).reshape(d),
            jax.ShapeDtypeStruct((d,), jnp.float32), x, vmap_method="sequential")

    return f


def _sfi_demo(name, f, d, D0, dt, steps, over, burn, x0, degree, opts, repeats):
    rows = []
    sigma = float(np.sqrt(2 * D0))
    dense = simulate(jax.random.key(0), f, sigma, jnp.array([x0]), dt * (burn + steps), dt / over,
                     save_every=over)
    obs, ts = dense.xs[:, burn:], dense.ts[burn:]
    grid = 20 if d == 2 else 10

    def add(method, drift, sig_hat, timing):
        e = float(weighted_rmse(f, drift, obs, grid_size=grid))
        assert np.isfinite(e) and np.isfinite(sig_hat), method
        rows.append(dict(tau=dt, system=name, method=method, wrmse=e, sigma_true=sigma, sigma_hat=sig_hat,
                         sigma_rel_error=abs(sig_hat / sigma - 1), steady_s=timing["median_s"]))
        print(f"  {name} {method}: wRMSE={e:.3f} sigma={sig_hat:.4f} (true {sigma:.4f}) "
              f"steady={timing['median_s']:.2f}s", flush=True)

    poly = RidgeRegression(PolynomialBasis(d, degree), 1e-6)
    for label, fc in ((f"icmlx naive, sigma=None (monomials<={degree})", poly),
                      ("icmlx naive, sigma=None (default class)", None)):
        t = time_fn(lambda fc=fc: naive_drift(obs, ts, function_class=fc).drift.weights, repeats=repeats)
        est = naive_drift(obs, ts, function_class=fc)
        add(label, est.drift, float(est.sigma), t)
    t = time_fn(lambda: estimate_diffusion(obs, ts).sigma, repeats=repeats)
    print(f"  {name} estimate_diffusion alone: {t['median_s']:.3f}s", flush=True)
    try:
        from SFI import OverdampedLangevinInference
        from SFI.bases import monomials_up_to
        from SFI.trajectory import TrajectoryCollection
    except ImportError as err:
        print(f"  SFI skipped: {err}")
        return rows
    X = np.asarray(obs[0], np.float64)
    keep = {}

    def sfi_fit():
        B = monomials_up_to(order=degree, dim=d, rank="vector")
        inf = OverdampedLangevinInference(TrajectoryCollection.from_arrays(X=X, dt=dt))
        inf.compute_diffusion_constant()
        inf.infer_force_linear(B, M_mode="Ito", **opts)
        keep["inf"] = inf
        return inf.force_inferred

    t = time_fn(sfi_fit, repeats=1, warmup=0, is_jax=False)
    D = np.asarray(keep["inf"].diffusion_average, np.float64)
    add(f"SFI infer_force_linear (monomials<={degree}, Ito)", _sfi_drift_d(keep["inf"].force_inferred, d),
        float(np.sqrt(2 * np.trace(D) / d)), t)
    return rows


def run_sfi_demos(repeats):
    return [r for demo in SFI_DEMOS for r in _sfi_demo(*demo, repeats)]

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    taus = (2.8,) if args.quick else (2.0, 2.8)
    rows = []
    for tau in taus:
        rows += run(tau, repeats=1 if args.quick else 3)
    print_table(rows, ["tau", "method", "wrmse", "wrmse_ratio_vs_em", "compile_s", "steady_s",
                       "time_ratio_vs_em", "per_iter_s", "ess_median"],
                title="Van der Pol sigma=0.25, T=500: weighted RMSE and wall time (lower is better)")
    for tau in taus:
        em = next(r for r in rows if r["tau"] == tau and "geodesic EM" in r["method"])
        sfi = [r for r in rows if r["tau"] == tau and r["method"].startswith("SFI")]
        best = min((r["wrmse"] for r in sfi), default=float("nan"))
        print(f"tau={tau}: EM wRMSE {em['wrmse']:.3f} vs best SFI {best:.3f} -> "
              f"{'EM more accurate' if em['wrmse'] < best else 'EM NOT more accurate'}; "
              f"per EM iteration {em['per_iter_s']:.2f} s (target <= 10 s)")
    demos = run_sfi_demos(repeats=1 if args.quick else 3)
    print_table(demos, ["system", "method", "wrmse", "sigma_hat", "sigma_rel_error", "steady_s"],
                title="SFI's demo systems, sigma unknown to both libraries (dense data, SFI's home ground)")
    for name, *_ in SFI_DEMOS:
        sub = [r for r in demos if r["system"] == name]
        sfi = [r for r in sub if r["method"].startswith("SFI")]
        ours = [r for r in sub if r["method"].startswith("icmlx")]
        if sfi and ours:
            best = min(ours, key=lambda r: r["wrmse"])
            print(f"{name}: best icmlx wRMSE {best['wrmse']:.3f} ({best['method']}) vs SFI {sfi[0]['wrmse']:.3f} "
                  f"-> {'SFI wins' if sfi[0]['wrmse'] < best['wrmse'] else 'icmlx wins'} on the drift; sigma error "
                  f"icmlx {best['sigma_rel_error']:.2%} vs SFI {sfi[0]['sigma_rel_error']:.2%}")
    path = write_results("sde_inference", rows + demos, dtype="float32", extra={"quick": args.quick})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
