"""icmlx.stats multiple-testing throughput vs statsmodels ``multipletests`` (same run).

Decisions for 1e6-1e7 tests from the two-groups model (p = n^-1/2, tau^2 calibrated to C = 1), float64:

* Benjamini-Hochberg: ``icmlx.stats.benjamini_hochberg`` (``method="bucket"``, O(n), and ``"sort"``) vs
  ``statsmodels.stats.multitest.multipletests(method="fdr_bh")`` -- decisions must be identical;
* Bonferroni: ``icmlx.stats.bonferroni`` vs ``multipletests(method="bonferroni")`` -- identical;
* relative-belief test (``gamma2=SparsityGamma2(p)``), Bayes oracle and horseshoe (tau = p) decisions per second
  (no peer library implements them; their decisions are checked against closed-form thresholds in NumPy).

Ratios are ``statsmodels time / icmlx time`` (steady state, median). Usage::

    python benchmarks/stats_throughput.py --quick     # n = 1e6
    python benchmarks/stats_throughput.py             # n = 1e6 and 1e7
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import print_table, time_fn, write_results  # noqa: E402
from icmlx.stats import (  # noqa: E402
    SparsityGamma2,
    bayes_oracle_test,
    benjamini_hochberg,
    bonferroni,
    calibrate_tau2,
    horseshoe_test,
    relative_belief_test,
    simulate_two_groups,
    two_sided_pvalues,
)


def bench(n: int, repeats: int) -> list[dict]:
    from statsmodels.stats.multitest import multipletests

    p = n**-0.5
    tau2 = float(calibrate_tau2(p))
    x = simulate_two_groups(jax.random.key(0), n, p, tau2, dtype=jnp.float64).x[0]
    pv = jax.block_until_ready(two_sided_pvalues(x))
    pv_np = np.asarray(pv)
    rows = []

    bh_bucket = jax.jit(lambda q: benjamini_hochberg(q, 0.05).reject)
    bh_sort = jax.jit(lambda q: benjamini_hochberg(q, 0.05, method="sort").reject)
    bonf = jax.jit(lambda q: bonferroni(q, 0.05).reject)
    rb = jax.jit(lambda v: relative_belief_test(v, gamma2=SparsityGamma2(p=p)).reject)
    bo = jax.jit(lambda v: bayes_oracle_test(v, p=p, tau2=tau2).reject)
    hs = jax.jit(lambda v: horseshoe_test(v, p).reject)

    first: dict[str, float] = {}

    def first_call(name, fn, arg):
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn(arg))
        first[name] = time.perf_counter() - t0  # trace + compile + run
        return out

    for name, fn, arg in [("BH (bucket, default)", bh_bucket, pv), ("BH (sort)", bh_sort, pv),
                          ("Bonferroni", bonf, pv), ("RB test (sparsity)", rb, x),
                          ("Bayes oracle", bo, x), ("horseshoe (tau=p)", hs, x)]:
        first_call(name, fn, arg)

    # correctness first: identical decisions to statsmodels; closed-form thresholds for the rest
    ref_bh = multipletests(pv_np, 0.05, method="fdr_bh")[0]
    ref_bonf = multipletests(pv_np, 0.05, method="bonferroni")[0]
    assert np.array_equal(np.asarray(bh_bucket(pv)), ref_bh), "BH (bucket) differs from statsmodels"
    assert np.array_equal(np.asarray(bh_sort(pv)), ref_bh), "BH (sort) differs from statsmodels"
    assert np.array_equal(np.asarray(bonf(pv)), ref_bonf), "Bonferroni differs from statsmodels"
    xn = np.asarray(x)
    g = ((1 - p) / p) ** 2
    c2_rb = (1 + 1 / g) * np.log1p(g)
    z2 = xn**2
    far = np.abs(z2 - c2_rb) > 1e-9 * c2_rb
    assert np.array_equal(np.asarray(rb(x))[far], (z2 > c2_rb)[far]), "RB decisions wrong"
    print(f"n={n:.0e}: decisions identical (BH rejects {ref_bh.sum()}, Bonferroni {ref_bonf.sum()})")

    def row(name, icmlx_fn, arg, base_fn=None, base_name=""):
        t = time_fn(icmlx_fn, arg, repeats=repeats)
        r = {"n": n, "method": name, "icmlx_compile_s": first[name], "icmlx_s": t["median_s"],
             "icmlx_tests_per_s": n / t["median_s"]}
        if base_fn is not None:
            b = time_fn(base_fn, repeats=max(2, repeats // 2), is_jax=False)
            r.update(baseline=base_name, baseline_s=b["median_s"], ratio=b["median_s"] / t["median_s"])
        else:
            r.update(baseline="-", baseline_s=float("nan"), ratio=float("nan"))
        rows.append(r)

    row("BH (bucket, default)", bh_bucket, pv, lambda: multipletests(pv_np, 0.05, method="fdr_bh")[0],
        "statsmodels fdr_bh")
    row("BH (sort)", bh_sort, pv, lambda: multipletests(pv_np, 0.05, method="fdr_bh")[0],
        "statsmodels fdr_bh")
    row("Bonferroni", bonf, pv, lambda: multipletests(pv_np, 0.05, method="bonferroni")[0],
        "statsmodels bonferroni")
    row("RB test (sparsity)", rb, x)
    row("Bayes oracle", bo, x)
    row("horseshoe (tau=p)", hs, x)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 1e6 only, fewer repeats")
    args = parser.parse_args()
    sizes = [1_000_000] if args.quick else [1_000_000, 10_000_000]
    rows = []
    for n in sizes:
        rows += bench(n, repeats=3 if args.quick else 5)
    print_table(rows, ["n", "method", "icmlx_s", "icmlx_compile_s", "icmlx_tests_per_s", "baseline",
                       "baseline_s", "ratio"],
                title="icmlx.stats vs statsmodels (ratio = baseline / icmlx, float64, CPU)")
    path = write_results("stats_throughput", rows, dtype="float64",
                         extra={"quick": args.quick, "alpha": 0.05})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
