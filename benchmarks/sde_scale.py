"""icmlx.sde at the sizes users record: time and peak memory against the number of observed intervals, decade by
decade, beside StochasticForceInference (SFI) on the same data.

Data: a 2-D double well, f(x) = x - x^3 per coordinate, sigma = 0.6, simulated in NumPy (Euler-Maruyama at 1/100
of the observation interval, or at 0.005 when finer) as trajectories of 1,001 observations, as many as the size
needs. Each (case, size, library) runs in a fresh subprocess, so its peak resident memory (``ru_maxrss``) is its
own; ``base_gb`` is the resident memory before the call (Python, JAX and the data), ``peak_gb`` the whole
process's peak. Times are one call, compilation included, as a user's script pays it (``first_s``); for
`estimate_diffusion` a second call gives the steady state (``steady_s``).

- ``diffusion``: tau = 0.01, ``estimate_diffusion(X, ts)`` (scalar model, fitted cubic drift removed) beside
  SFI's ``compute_diffusion_constant()``; accuracy is the relative error of sigma.
- ``drift_known`` / ``drift_unknown``: tau = 0.5, ``infer_drift`` with sigma given or ``None``, at the sweep's
  settings (4 EM iterations, 32 particles, 10 steps per interval, 4 paths, geodesic guidance, cubic monomials
  with ridge 1e-3: the function class SFI's regression uses too), beside SFI's ``compute_diffusion_constant()`` +
  ``infer_force_linear`` on monomials up to degree 3 (a regression on the increments); accuracy is the
  density-weighted RMSE of the drift (`weighted_rmse`, 20 x 20 grid) and, with sigma unknown, sigma's error.
- ``--done-when``: `estimate_diffusion` on 1,000 x 1,001 observations (tau = 0.01), and ``infer_drift(key, X, ts,
  None, num_steps=4)`` (otherwise the defaults: the function class chosen from the data, 128 particles, 40 steps
  per interval) on 200 x 501 observations (10^5 intervals, tau = 0.5), with the naive estimator's weighted RMSE
  beside it. `infer_drift` with sigma known on 10^6 intervals is the sweep's last row.

    python benchmarks/sde_scale.py --quick        # 10^3 .. 10^5 intervals (10^6 increments for the diffusion)
    python benchmarks/sde_scale.py                # 10^3 .. 10^6 intervals (10^7 increments for the diffusion)
    python benchmarks/sde_scale.py --done-when    # the checks at the defaults (about 15 minutes)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

SIGMA = 0.6
N_OBS = 1001
SWEEP = dict(num_steps=4, num_particles=32, num_time_steps=10, num_paths=4)


def _drift(x):
    return x - x**3


def simulate(n_traj: int, n_obs: int, tau: float, seed: int = 0):
    """Double-well paths ``(n_traj, n_obs, 2)`` (float32) observed every ``tau``, started in the wells."""
    rng = np.random.default_rng(seed)
    sub = max(1, int(round(tau / 0.005)))
    h = tau / sub
    x = np.sign(rng.normal(size=(n_traj, 2))) + 0.1 * rng.normal(size=(n_traj, 2))
    out = np.empty((n_traj, n_obs, 2), np.float32)
    out[:, 0] = x
    for k in range(1, n_obs):
        for _ in range(sub):
            x = x + (x - x**3) * h + SIGMA * np.sqrt(h) * rng.normal(size=x.shape)
        out[:, k] = x
    return out, np.arange(n_obs) * tau


def _rss_gb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _current_gb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return float(line.split()[1]) / 2**20
    return float("nan")


def _sfi(X, tau, drift: bool):
    from SFI import OverdampedLangevinInference
    from SFI.bases import monomials_up_to
    from SFI.trajectory import TrajectoryCollection

    inf = OverdampedLangevinInference(TrajectoryCollection.from_arrays(X=np.swapaxes(X, 0, 1), dt=tau))
    inf.compute_diffusion_constant()
    if drift:
        inf.infer_force_linear(monomials_up_to(order=3, dim=2, rank="vector"), M_mode="Ito")
    return inf


def one(case: str, size: int, lib: str, mode: str) -> dict:
    """One measurement in this process: ``size`` intervals (increments) of ``case`` by ``lib``."""
    import jax
    import jax.numpy as jnp

    from icmlx.sde import (
        PolynomialBasis,
        RidgeRegression,
        estimate_diffusion,
        infer_drift,
        naive_drift,
        weighted_rmse,
    )

    tau = 0.01 if case == "diffusion" else 0.5
    n_obs = 501 if mode == "default" and case == "drift_unknown" else N_OBS
    n_traj = max(1, size // (n_obs - 1))
    X, ts = simulate(n_traj, n_obs, tau)
    row = {"case": case, "mode": mode, "lib": lib, "intervals": n_traj * (n_obs - 1), "n_traj": n_traj,
           "n_obs": n_obs, "tau": tau}
    jnp.zeros(()).block_until_ready()
    row["base_gb"] = _current_gb()
    t0 = time.perf_counter()
    if lib == "SFI":
        inf = _sfi(X, tau, case != "diffusion")
        row["first_s"] = time.perf_counter() - t0
        row["peak_gb"] = _rss_gb()
        D = np.asarray(inf.diffusion_average, np.float64)
        row["sigma"] = float(np.sqrt(2 * np.trace(D) / 2))
        if case != "diffusion":
            F = inf.force_inferred

            def f_sfi(x):
                return jax.pure_callback(
                    lambda z: np.asarray(F(np.asarray(z, np.float64)[None]), np.float32).reshape(2),
                    jax.ShapeDtypeStruct((2,), jnp.float32), x, vmap_method="sequential")

            row["wrmse"] = float(weighted_rmse(_drift, f_sfi, X))
    elif case == "diffusion":
        est = estimate_diffusion(X, ts)
        jax.block_until_ready(est.sigma)
        row["first_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        jax.block_until_ready(estimate_diffusion(X, ts).sigma)
        row["steady_s"] = time.perf_counter() - t0
        row["peak_gb"] = _rss_gb()
        row["sigma"] = float(est.sigma)
    else:
        sigma = SIGMA if case == "drift_known" else None
        if mode == "default":
            opts = {"num_steps": 4}
        else:
            opts = dict(SWEEP, function_class=RidgeRegression(PolynomialBasis(2, 3), 1e-3))
        sol = infer_drift(jax.random.key(0), X, ts, sigma, **opts)
        jax.block_until_ready(sol.drift.weights)
        row["first_s"] = time.perf_counter() - t0
        row["peak_gb"] = _rss_gb()
        row["sigma"] = float(sol.sigma)
        row["wrmse"] = float(weighted_rmse(_drift, sol.drift, X))
        row["function_class"] = type(sol.drift.basis).__name__
        if mode == "default":
            naive = naive_drift(X, ts, sigma)
            row["wrmse_naive"] = float(weighted_rmse(_drift, naive.drift, X))
            row["wrmse_over_naive"] = row["wrmse"] / row["wrmse_naive"]
    row["sigma_rel_err"] = row["sigma"] / SIGMA - 1.0
    return row


def _run(case: str, size: int, lib: str, mode: str, timeout: float) -> dict:
    cmd = [sys.executable, __file__, "--one", case, str(size), lib, mode]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"case": case, "mode": mode, "lib": lib, "intervals": size, "error": f"timeout {timeout:.0f} s"}
    if out.returncode != 0:
        tail = (out.stderr.strip().splitlines() or ["?"])[-1]
        return {"case": case, "mode": mode, "lib": lib, "intervals": size, "error": tail[:200]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _figure(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    styles = {("diffusion", "icmlx"): ("C0", "-", "estimate_diffusion"),
              ("diffusion", "SFI"): ("C0", "--", "SFI compute_diffusion_constant"),
              ("drift_known", "icmlx"): ("C1", "-", "infer_drift, sigma known"),
              ("drift_unknown", "icmlx"): ("C2", "-", "infer_drift, sigma unknown"),
              ("drift_known", "SFI"): ("C3", "--", "SFI diffusion + infer_force_linear")}
    for (case, lib), (color, ls, label) in styles.items():
        pts = sorted((r["intervals"], r["first_s"], r["peak_gb"]) for r in rows
                     if r.get("mode") == "sweep" and r["case"] == case and r["lib"] == lib and "first_s" in r)
        if not pts:
            continue
        n, t, m = map(np.asarray, zip(*pts))
        axes[0].loglog(n, t, ls, color=color, marker="o", label=label)
        axes[1].loglog(n, m, ls, color=color, marker="o", label=label)
    axes[0].set(xlabel="observed intervals (increments)", ylabel="time of one call, compilation included (s)")
    axes[1].set(xlabel="observed intervals (increments)", ylabel="peak resident memory of the process (GB)")
    axes[0].legend(fontsize=7)
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle("icmlx.sde: cost against data size (2-D double well; drift at tau = 0.5, diffusion at 0.01)")
    fig.tight_layout()
    from _harness import save_figure

    save_figure(fig, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="up to 10^5 intervals (10^6 increments)")
    ap.add_argument("--done-when", action="store_true", help="the checks at infer_drift's defaults")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per measurement")
    ap.add_argument("--one", nargs=4, metavar=("CASE", "SIZE", "LIB", "MODE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        case, size, lib, mode = args.one
        print(json.dumps(one(case, int(size), lib, mode), default=float))
        return
    from _harness import print_table, write_results

    top = 5 if args.quick else 6
    plan = []
    if args.done_when:
        plan += [("diffusion", 10**6, "icmlx", "sweep"), ("drift_unknown", 10**5, "icmlx", "default")]
    else:
        for k in range(3, top + 2):
            plan += [("diffusion", 10**k, "icmlx", "sweep"), ("diffusion", 10**k, "SFI", "sweep")]
        for k in range(3, top + 1):
            plan += [("drift_known", 10**k, "icmlx", "sweep"), ("drift_unknown", 10**k, "icmlx", "sweep"),
                     ("drift_known", 10**k, "SFI", "sweep")]
    rows = []
    for case, size, lib, mode in plan:
        row = _run(case, size, lib, mode, args.timeout)
        rows.append(row)
        print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}), flush=True)
    cols = ["case", "mode", "lib", "intervals", "first_s", "steady_s", "base_gb", "peak_gb", "sigma_rel_err", "wrmse",
            "wrmse_over_naive", "error"]
    print_table(rows, cols)
    part = "done_when" if args.done_when else ("quick" if args.quick else "full")
    write_results(rows=rows, part=part)
    if not args.done_when:
        out = Path(__file__).resolve().parent / "results" / "sde_scale.png"
        _figure(rows, out)
        print(f"figure: {out}")


if __name__ == "__main__":
    main()
