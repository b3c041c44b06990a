"""``icmlx.stats.multipletests`` against ``statsmodels.stats.multitest.multipletests``, every method (same run).

P-values of two-sided z-tests from the two-groups model (p = n^-1/2 signals, tau^2 calibrated to C = 1), float64.
For each method and n: the first call of ``multipletests`` (trace, compile and run) apart from the steady state
(median of repeats, ``jax.block_until_ready``), statsmodels' time on the same p-values (median), their ratio
(statsmodels / icmlx, steady state), and the check that the decisions are identical and the adjusted p-values
agree (largest absolute difference). Hommel is O(n^2) in both libraries (statsmodels' loop and icmlx's vectorised
form of it), so it runs at n = 10^4 only. Writes ``benchmarks/results/stats_multipletests.json``.

    python benchmarks/stats_multipletests.py            # n = 1e6
    python benchmarks/stats_multipletests.py --large    # n = 1e6 and 1e7
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import print_table, time_fn, write_results  # noqa: E402
from icmlx.stats import METHODS, calibrate_tau2, multipletests, simulate_two_groups, two_sided_pvalues  # noqa: E402

HOMMEL_N = 10_000


def _pvalues(n: int) -> np.ndarray:
    p = n**-0.5
    z = simulate_two_groups(jax.random.key(0), n, p, float(calibrate_tau2(p)), dtype=jnp.float64).x[0]
    return np.asarray(two_sided_pvalues(z), np.float64)


def main(argv=None) -> None:
    from statsmodels.stats.multitest import multipletests as sm_multipletests

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--large", action="store_true", help="also n = 1e7")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--methods", nargs="*", default=list(METHODS))
    args = ap.parse_args(argv)
    sizes = [1_000_000, 10_000_000] if args.large else [1_000_000]
    rows = []
    for n in sizes:
        host = _pvalues(n)
        small = _pvalues(HOMMEL_N)
        for method in args.methods:
            p_host = small if method == "hommel" else host
            p_dev = jax.device_put(p_host)
            ours = time_fn(lambda m=method, q=p_dev: multipletests(q, 0.05, m), repeats=args.repeats)
            theirs = time_fn(lambda m=method, q=p_host: sm_multipletests(q, 0.05, m), repeats=args.repeats,
                             is_jax=False)
            res = multipletests(p_dev, 0.05, method)
            rej, adj, *_ = sm_multipletests(p_host, 0.05, method)
            with np.errstate(invalid="ignore"):
                diff = float(np.max(np.abs(np.asarray(res.pvalues_adjusted) - adj)))
            row = {"method": method, "n": p_host.size, "num_rejected": int(rej.sum()),
                   "decisions_identical": bool(np.array_equal(np.asarray(res.rejected), rej)),
                   "max_abs_diff_adjusted": diff, "icmlx_first_call_s": ours["compile_s"],
                   "icmlx_steady_s": ours["median_s"], "statsmodels_s": theirs["median_s"],
                   "ratio_steady": theirs["median_s"] / ours["median_s"]}
            rows.append(row)
            print(row, flush=True)
    print_table(rows, title="multipletests: icmlx vs statsmodels (float64, CPU)")
    path = write_results("stats_multipletests", rows, dtype="float64",
                         extra={"sizes": sizes, "repeats": args.repeats, "hommel_n": HOMMEL_N})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
