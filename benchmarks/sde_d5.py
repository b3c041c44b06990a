"""`infer_drift` at d = 5: wall time and weighted RMSE on a 5-D Ornstein-Uhlenbeck process, default settings
(8 EM iterations, 128 particles, 40 steps per interval, geodesic guidance, sigma estimated jointly).

Observations: 4 trajectories of T = 50 sampled every tau = 0.5 (400 intervals) of $dX = -A X\\,dt + 0.7\\,dW$,
$A = I + 0.5 (E - E^\\top)$ with $E$ the superdiagonal ones (a rotating OU). Classes: the sparse GP of
`default_function_class` (4 inducing points per axis, 1,024), cubic monomials (56 features) and linear monomials
(6, the OU's own class); beside them SFI 2.0.4's
``compute_diffusion_constant`` + ``infer_force_linear`` on linear monomials (the OU's own class) when SFI is
installed; and `function_class="auto"` (the class chosen by held-out bridge evidence among linear and cubic
monomials, RBF ridge regression and the sparse GP, then fitted). Times are one call each (compilation
included); the RMSE is `weighted_rmse` over the observations on a 6-per-axis grid.

    python benchmarks/sde_d5.py
"""

import time

import jax
import jax.numpy as jnp
import numpy as np

from _harness import print_table, write_results
from icmlx.sde import PolynomialBasis, RidgeRegression, infer_drift, simulate, subsample, weighted_rmse

D, SIGMA, TAU = 5, 0.7, 0.5
GRID = 6  # 6 ** 5 = 7,776 grid points
A = np.eye(D) + 0.5 * (np.eye(D, k=1) - np.eye(D, k=-1))


def drift(x):
    return -(jnp.asarray(A, x.dtype) @ x)


def sfi_row(obs, ts):
    try:
        from SFI import OverdampedLangevinInference
        from SFI.bases import monomials_up_to
        from SFI.trajectory import TrajectoryCollection
    except ImportError:
        return None
    t0 = time.perf_counter()
    # all trajectories as SFI's particle axis: X of shape (T, N, d)
    inf = OverdampedLangevinInference(TrajectoryCollection.from_arrays(
        X=np.asarray(obs, np.float64).transpose(1, 0, 2), dt=TAU))
    inf.compute_diffusion_constant()
    inf.infer_force_linear(monomials_up_to(order=1, dim=D, rank="vector"), preset="KM")
    wall = time.perf_counter() - t0
    F = inf.force_inferred

    def f(x):
        return jax.pure_callback(lambda z: np.asarray(F(np.asarray(z, np.float64)[None]), np.float32).reshape(D),
                                 jax.ShapeDtypeStruct((D,), jnp.float32), x, vmap_method="sequential")

    e = float(weighted_rmse(drift, f, obs.reshape(-1, D), grid_size=GRID))
    return dict(method="SFI infer_force_linear (linear monomials)", wrmse=e,
                sigma_hat=float(np.sqrt(2 * np.trace(np.asarray(inf.diffusion_average)) / D)), wall_s=wall)


def main():
    p = simulate(jax.random.key(0), drift, SIGMA, jnp.zeros((4, D)), 55.0, 0.01)
    sp = subsample(p, int(round(TAU / 0.01)))
    keep = sp.ts >= 5.0
    obs, ts = sp.xs[:, keep], sp.ts[keep]
    rows = []
    r = sfi_row(obs, ts)
    if r is not None:
        rows.append(r)
        print(r, flush=True)
    for name, fc in (("icmlx infer_drift (linear monomials)", RidgeRegression(PolynomialBasis(D, 1), 1e-3)),
                     ("icmlx infer_drift (cubic monomials)", RidgeRegression(PolynomialBasis(D, 3), 1e-3)),
                     ("icmlx infer_drift (sparse GP, function_class=None)", None),
                     ("icmlx infer_drift (function_class='auto', the default)", "auto")):
        t0 = time.perf_counter()
        sol = infer_drift(jax.random.key(1), obs, ts, function_class=fc, throw=False)
        jax.block_until_ready(sol.value.weights)
        wall = time.perf_counter() - t0
        e = float(weighted_rmse(drift, sol.drift, obs.reshape(-1, D), grid_size=GRID))
        # the automatic selection's default candidates, simplest first
        picked = "" if sol.selection is None else ("linear", "cubic", "RBF", "GP")[sol.selection.index]
        rows.append(dict(method=name, wrmse=e, sigma_hat=float(sol.sigma), wall_s=wall, picked=picked))
        print(rows[-1], flush=True)
        write_results("sde_d5", rows, dtype="float32")  # each row as soon as it is measured
    print_table(rows, ["method", "wrmse", "sigma_hat", "wall_s", "picked"],
                title=f"d = {D} rotating OU, tau = {TAU}, {obs.shape[0] * (obs.shape[1] - 1)} intervals")
    path = write_results("sde_d5", rows, dtype="float32")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
