"""``icmlx.stats.multipletests`` against ``statsmodels.stats.multitest.multipletests``, every method (same run).

P-values of two-sided z-tests from the two-groups model (p = n^-1/2 signals, tau^2 calibrated to C = 1), float64.
For each method and n: the first call of ``multipletests`` (trace, compile and run) apart from the steady state
(median of repeats, ``jax.block_until_ready``) for NumPy input (sorted on the host) and for JAX input (sorted by
``lax.sort``), statsmodels' time on the same p-values (median), the ratios (statsmodels / icmlx, steady state), and
the check that the decisions are identical and the adjusted p-values agree (largest absolute difference). With
``--oneshot`` each method also runs as a whole fresh process (import, load the p-values from a ``.npy`` file,
adjust once) for both libraries, and the wall times and their ratio are recorded. statsmodels' Hommel is O(n^2)
(about 40 minutes at 10^6), so Hommel runs at n = 10^4 here; ``benchmarks/stats_scale.py`` times icmlx's
O(n log n) Hommel up to 10^8.
Writes ``benchmarks/results/stats_multipletests.json``.

    python benchmarks/stats_multipletests.py            # n = 1e6
    python benchmarks/stats_multipletests.py --large    # n = 1e6 and 1e7
    python benchmarks/stats_multipletests.py --oneshot  # and one-shot processes
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
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


_ONESHOT = {
    "icmlx": ("import jax; jax.config.update('jax_enable_x64', True); import numpy as np; "
              "from icmlx.stats import multipletests; r = multipletests(np.load({path!r}), 0.05, {method!r}); "
              "r.reject.block_until_ready()"),
    "statsmodels": ("import numpy as np; from statsmodels.stats.multitest import multipletests; "
                    "multipletests(np.load({path!r}), 0.05, {method!r})"),
}


def _oneshot(lib: str, path: str, method: str) -> float:
    code = _ONESHOT[lib].format(path=path, method=method)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - t0


def main(argv=None) -> None:
    from statsmodels.stats.multitest import multipletests as sm_multipletests

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--large", action="store_true", help="also n = 1e7")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--methods", nargs="*", default=list(METHODS))
    ap.add_argument("--oneshot", action="store_true", help="also whole-process timings")
    args = ap.parse_args(argv)
    sizes = [1_000_000, 10_000_000] if args.large else [1_000_000]
    rows = []
    for n in sizes:
        host = _pvalues(n)
        small = _pvalues(HOMMEL_N)
        tmp = tempfile.TemporaryDirectory()
        for method in args.methods:
            p_host = small if method == "hommel" else host
            p_dev = jax.device_put(p_host)
            ours = time_fn(lambda m=method, q=p_host: multipletests(q, 0.05, m), repeats=args.repeats)
            ours_dev = time_fn(lambda m=method, q=p_dev: multipletests(q, 0.05, m), repeats=args.repeats)
            theirs = time_fn(lambda m=method, q=p_host: sm_multipletests(q, 0.05, m), repeats=args.repeats,
                             is_jax=False)
            rej, adj, *_ = sm_multipletests(p_host, 0.05, method)
            diff, same = 0.0, True
            for given in (p_host, p_dev):
                res = multipletests(given, 0.05, method)
                with np.errstate(invalid="ignore"):
                    diff = max(diff, float(np.max(np.abs(np.asarray(res.pvalues_adjusted) - adj))))
                same = same and bool(np.array_equal(np.asarray(res.reject), rej))
            row = {"method": method, "n": p_host.size, "num_rejected": int(rej.sum()),
                   "decisions_identical": same, "max_abs_diff_adjusted": diff,
                   "icmlx_first_call_s": ours["compile_s"], "icmlx_steady_s": ours["median_s"],
                   "icmlx_jax_input_steady_s": ours_dev["median_s"], "statsmodels_s": theirs["median_s"],
                   "ratio_steady": theirs["median_s"] / ours["median_s"],
                   "ratio_steady_jax_input": theirs["median_s"] / ours_dev["median_s"]}
            if args.oneshot:
                path = str(Path(tmp.name) / f"p{p_host.size}.npy")
                if not Path(path).exists():
                    np.save(path, p_host)
                row["icmlx_process_s"] = _oneshot("icmlx", path, method)
                row["statsmodels_process_s"] = _oneshot("statsmodels", path, method)
                row["ratio_process"] = row["statsmodels_process_s"] / row["icmlx_process_s"]
            rows.append(row)
            print(row, flush=True)
            # written after every row, so an interrupted --large run keeps what it measured
            write_results("stats_multipletests", rows, dtype="float64",
                          extra={"sizes": sizes, "repeats": args.repeats, "hommel_n": HOMMEL_N,
                                 "oneshot": args.oneshot})
        tmp.cleanup()
    print_table(rows, title="multipletests: icmlx vs statsmodels (float64, CPU)")
    path = write_results("stats_multipletests", rows, dtype="float64",
                         extra={"sizes": sizes, "repeats": args.repeats, "hommel_n": HOMMEL_N,
                                                 "oneshot": args.oneshot})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
