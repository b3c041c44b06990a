"""Drift function classes for `infer_drift`: cubic monomials, the sparse GP of `default_function_class` and RBF
ridge regression on a 1-D double well and a 2-D rotating well at tau in {0.1, 0.5, 1}, beside what
`select_function_class` picks.

Systems (sigma = 0.7 known, 8 trajectories of T = 40 from x = 0 after a burn-in of 5, simulated at dt = 0.01):

- double well, $f(x) = x - x^3$;
- rotating well, $f(x, y) = (x - x^3 - \\omega y,\\; -y + \\omega x)$ with $\\omega = 1$ (a double well in $x$,
  harmonic in $y$, plus a rotation).

Each class is fitted by `infer_drift` (geodesic guidance, 6 EM iterations, 32 particles, 10 steps per interval)
and scored by the density-weighted RMSE of the drift (`weighted_rmse`); the selection runs on the same
observations (its cost is reported apart), with the Euler score of the naive fits (``score="euler"``) and with the
held-out bridge evidence of EM fits (``score="bridge"``). `infer_drift` at its default (``function_class="auto"``,
the bridge score over its own default candidates, then the final fit) runs at the same EM settings. The table gives
each class's RMSE, each score's pick, the pick's RMSE over the best one's, and the same for the default.

    python benchmarks/sde_function_class.py
"""

import time

import jax
import jax.numpy as jnp
import numpy as np

from _harness import print_table, write_results
from icmlx.sde import (
    PolynomialBasis,
    RBFBasis,
    RidgeRegression,
    box_grid,
    default_function_class,
    infer_drift,
    select_function_class,
    simulate,
    subsample,
    weighted_rmse,
)

SIGMA = 0.7
EM_CFG = dict(num_steps=6, num_particles=32, num_time_steps=10)


def double_well(x):
    return x - x**3


def rotating_well(x, omega=1.0):
    return jnp.stack([x[0] - x[0] ** 3 - omega * x[1], -x[1] + omega * x[0]])


ORDER = ("linear", "cubic", "RBF", "GP")  # simplest first (the one-standard-error rule prefers the earlier of a tie)
SYSTEMS = (("double well", double_well, 1), ("rotating well", rotating_well, 2))


def candidates(obs, d):
    """The classes compared: linear and cubic monomials, the sparse GP, RBF ridge regression (the
    default candidates of ``score="bridge"`` and ``infer_drift(function_class="auto")``)."""
    pts = np.asarray(obs).reshape(-1, d)
    k = 12 if d == 1 else 8
    centers = box_grid(pts, k, 0.5)
    width = float(np.mean(pts.max(0) - pts.min(0) + 1.0))
    rbf = RidgeRegression(RBFBasis(centers, width / (k - 1)), 1e-2)
    return {"linear": RidgeRegression(PolynomialBasis(d, 1), 1e-3),
            "cubic": RidgeRegression(PolynomialBasis(d, 3), 1e-3), "GP": default_function_class(pts), "RBF": rbf}


def run():
    rows = []
    for name, f, d in SYSTEMS:
        p = simulate(jax.random.key(0), f, SIGMA, jnp.zeros((8, d)), 45.0, 0.01)
        for tau in (0.1, 0.5, 1.0):
            sp = subsample(p, int(round(tau / 0.01)))
            keep = sp.ts >= 5.0
            obs, ts = sp.xs[:, keep], sp.ts[keep]
            cls = candidates(obs, d)
            errs, times = {}, {}
            for cname, fc in cls.items():
                t0 = time.perf_counter()
                sol = infer_drift(jax.random.key(1), obs, ts, SIGMA, function_class=fc, throw=False, **EM_CFG)
                jax.block_until_ready(sol.value.weights)
                times[cname] = time.perf_counter() - t0
                errs[cname] = float(weighted_rmse(f, sol.drift, obs.reshape(-1, d)))
            t0 = time.perf_counter()
            sel = select_function_class(obs, ts, SIGMA, candidates=[cls[k] for k in ORDER])
            t_euler = time.perf_counter() - t0
            t0 = time.perf_counter()
            sel_b = select_function_class(obs, ts, SIGMA, candidates=[cls[k] for k in ORDER], score="bridge",
                                          key=jax.random.key(2))
            t_bridge = time.perf_counter() - t0
            pick, pick_b = ORDER[sel.index], ORDER[sel_b.index]
            # infer_drift at its default, function_class="auto" (candidates built from its own training part)
            t0 = time.perf_counter()
            auto = infer_drift(jax.random.key(1), obs, ts, SIGMA, throw=False, **EM_CFG)
            jax.block_until_ready(auto.value.weights)
            t_default = time.perf_counter() - t0
            err_default = float(weighted_rmse(f, auto.drift, obs.reshape(-1, d)))
            best = min(errs.values())
            row = dict(system=name, tau=tau, **{f"wrmse_{k}": v for k, v in errs.items()}, pick_euler=pick,
                       ratio_euler=errs[pick] / best, pick_bridge=pick_b, ratio_bridge=errs[pick_b] / best,
                       pick_default=ORDER[auto.selection.index], wrmse_default=err_default,
                       ratio_default=err_default / best, default_s=t_default,
                       select_euler_s=t_euler, select_bridge_s=t_bridge,
                       **{f"em_s_{k}": v for k, v in times.items()})
            rows.append(row)
            print(row, flush=True)
    return rows


def main():
    rows = run()
    cols = ["system", "tau", *(f"wrmse_{k}" for k in ORDER), "pick_euler", "ratio_euler", "pick_bridge",
            "ratio_bridge", "pick_default", "ratio_default", "default_s", "select_euler_s", "select_bridge_s",
            *(f"em_s_{k}" for k in ORDER)]
    print_table(rows, cols,
                title="infer_drift weighted RMSE by function class, and the selected class (sigma known)")
    for score in ("euler", "bridge", "default"):
        ok = sum(r[f"ratio_{score}"] <= 1.2 for r in rows)
        print(f"score={score!r}: pick within 1.2x of the best class in {ok} of {len(rows)} cases")
    path = write_results("sde_function_class", rows, dtype="float32")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
