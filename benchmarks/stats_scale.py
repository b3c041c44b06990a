"""``icmlx.stats`` at genome scale: time and peak memory from 10^4 to 10^8 tests, statsmodels on the same data.

Per size n, one child process draws float32 z-scores (1% signals, N(0, 3^2) effects) and their two-sided p-values in
NumPy, then times, each apart:

* every ``multipletests`` method on the p-values, and ``benjamini_hochberg``;
* ``qvalues(p)``, ``local_fdr(z, null="empirical")``, ``relative_belief_test(z)`` and ``horseshoe_test(z)`` at their
  defaults (binned empirical Bayes), and ``relative_belief_test(z, gamma2=EBLocalFDRGamma2(binned=False))`` (every
  test) up to 10^6;
* ``statsmodels.stats.multitest.multipletests`` on the same p-values where it finishes: BH at every size, Hommel
  (O(n^2) there) up to 10^5, the others up to ``--statsmodels-max`` (10^7 by default: at 10^8 each takes a minute
  and several GB in float64).

Each call's first run (trace, compile and run) is timed apart from the steady state (median of ``--repeats``,
``jax.block_until_ready``), and its peak memory is the largest resident set size of the child process during the
steady calls (sampled every 2 ms; it includes the data, about 0.8 GB at 10^8). Correctness first: the decisions of
every method are compared with statsmodels' where it ran (differences allowed only at float32 rounding of the
critical values), the binned defaults with the unbinned rule up to 10^5, q-values with pi0 times statsmodels' BH.
The ``ratio_to_bh`` column is the steady time over ``multipletests(p, method="fdr_bh")``'s in the same process.
Writes ``benchmarks/results/stats_scale.json`` (one part per size, so ``--sizes 1e8`` replaces that size only) and
the figure ``benchmarks/results/stats_scale.png`` from every part.

    python benchmarks/stats_scale.py                        # 10^4 ... 10^8
    python benchmarks/stats_scale.py --sizes 1e4 1e5 1e6    # a quick run
    python benchmarks/stats_scale.py --figure-only          # redraw the figure from the JSON
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIGURE = HERE / "results" / "stats_scale.png"
METHODS = ("bonferroni", "sidak", "holm-sidak", "holm", "simes-hochberg", "hommel", "fdr_bh", "fdr_by", "fdr_tsbh",
           "fdr_tsbky")
EB_TASKS = ("qvalues", "local_fdr", "relative_belief_test", "horseshoe_test")
EXACT_RB_MAX = 10**6  # the unbinned default rule costs O(51 n) per EM step (and memory)
EXACT_CHECK_MAX = 10**5
SM_HOMMEL_MAX = 10**5  # statsmodels' Hommel is O(n^2): 23 s at 10^5, about 40 minutes at 10^6
SM_BH_MAX = 10**8  # statsmodels' BH, the baseline of the 10^8 target, runs at every size
ALPHA = 0.05


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class _Peak:
    """The largest resident set size of this process while the block runs (sampled every 2 ms)."""

    def __enter__(self):
        self.peak = _rss()
        self._stop = False

        def run():
            while not self._stop:
                self.peak = max(self.peak, _rss())
                time.sleep(0.002)

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop = True
        self._thread.join()
        self.peak = max(self.peak, _rss())


def _measure(fn, repeats: int, is_jax: bool = True) -> tuple[dict, object]:
    """First call apart, then ``repeats`` steady calls with the peak memory over them; returns the last output."""
    import jax

    sync = jax.block_until_ready if is_jax else (lambda x: x)
    t0 = time.perf_counter()
    out = sync(fn())
    first = time.perf_counter() - t0
    times = []
    with _Peak() as peak:
        for _ in range(repeats):
            del out
            t0 = time.perf_counter()
            out = sync(fn())
            times.append(time.perf_counter() - t0)
    times.sort()
    return {"first_s": first, "median_s": times[len(times) // 2], "min_s": times[0],
            "peak_gb": peak.peak / 2**30}, out


def _data(n: int):
    import numpy as np
    from scipy.special import ndtr

    rng = np.random.default_rng(0)
    z = rng.standard_normal(n, dtype=np.float32)
    k = max(1, n // 100)
    z[:k] += (3.0 * rng.standard_normal(k)).astype(np.float32)
    p = (2.0 * ndtr(-np.abs(z))).astype(np.float32)
    return z, p


def child(n: int, repeats: int, sm_max: int, out_path: str) -> None:
    import numpy as np

    from icmlx.stats import (
        EBLocalFDRGamma2,
        benjamini_hochberg,
        horseshoe_test,
        local_fdr,
        multipletests,
        qvalues,
        relative_belief_test,
    )

    z, p = _data(n)
    rows: list[dict] = []
    base = _rss() / 2**30

    def row(task, library, stats, **extra):
        r = {"n": n, "task": task, "library": library, **stats, "data_gb": base, **extra}
        rows.append(r)
        print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}), flush=True)
        Path(out_path).write_text(json.dumps(rows))

    sm_results = {}
    for method in METHODS:
        stats, res = _measure(lambda m=method: multipletests(p, ALPHA, m).reject, repeats)
        rej = np.asarray(res)
        del res
        extra = {}
        if n <= {"hommel": SM_HOMMEL_MAX, "fdr_bh": max(sm_max, SM_BH_MAX)}.get(method, sm_max):
            from statsmodels.stats.multitest import multipletests as sm_multipletests

            sm_repeats = 1 if n >= 10**7 or (method == "hommel" and n >= 10**5) else repeats
            sm_stats, sm = _measure(lambda m=method: sm_multipletests(p, ALPHA, m), sm_repeats, is_jax=False)
            differ = int(np.sum(rej != sm[0]))
            # float32 critical values against statsmodels' float64 ones: only p-values at rounding distance may differ
            assert differ <= max(1, n // 10**6), (method, n, differ)
            extra = {"statsmodels_s": sm_stats["median_s"], "statsmodels_peak_gb": sm_stats["peak_gb"],
                     "decisions_differ": differ, "speedup": sm_stats["median_s"] / stats["median_s"]}
            if method == "fdr_bh":
                sm_results["bh_adjusted"] = np.asarray(sm[1], np.float64)
            del sm
        row(method, "icmlx", stats, rejected=int(rej.sum()), **extra)
        del rej
    bh_s = next(r["median_s"] for r in rows if r["task"] == "fdr_bh")
    for r in rows:
        r["ratio_to_bh"] = r["median_s"] / bh_s

    stats, res = _measure(lambda: benjamini_hochberg(p, ALPHA).reject, repeats)
    row("benjamini_hochberg", "icmlx", stats, rejected=int(np.asarray(res).sum()), ratio_to_bh=stats["median_s"] / bh_s)
    del res

    calls = {
        "qvalues": lambda: qvalues(p).qvalues,
        "local_fdr": lambda: local_fdr(z, null="empirical").lfdr,
        "relative_belief_test": lambda: relative_belief_test(z).reject,
        "horseshoe_test": lambda: horseshoe_test(z).reject,
    }
    for task, fn in calls.items():
        stats, res = _measure(fn, repeats)
        out = np.asarray(res)
        del res
        extra = {}
        if task == "qvalues" and "bh_adjusted" in sm_results:
            pi0 = float(qvalues(p).pi0)
            extra["max_abs_diff"] = float(np.max(np.abs(out - pi0 * np.minimum(sm_results["bh_adjusted"], 1.0))))
            assert extra["max_abs_diff"] < 1e-5, extra
        elif task == "local_fdr":
            assert np.all(np.isfinite(out)) and np.all((out >= 0) & (out <= 1))
        elif n <= EXACT_CHECK_MAX:
            exact = (relative_belief_test(z, gamma2=EBLocalFDRGamma2(binned=False)).reject if task ==
                     "relative_belief_test" else horseshoe_test(z, binned=False).reject)
            extra["decisions_differ_unbinned"] = int(np.sum(out != np.asarray(exact)))
            assert extra["decisions_differ_unbinned"] <= 2, extra
        if out.dtype == bool:
            extra["rejected"] = int(out.sum())
        row(task, "icmlx", stats, ratio_to_bh=stats["median_s"] / bh_s, **extra)
        del out
    if n <= EXACT_RB_MAX:
        stats, res = _measure(lambda: relative_belief_test(z, gamma2=EBLocalFDRGamma2(binned=False)).reject, repeats)
        row("relative_belief_test(binned=False)", "icmlx", stats, ratio_to_bh=stats["median_s"] / bh_s,
            rejected=int(np.asarray(res).sum()))


def figure(rows: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))

    def line(ax, task, library, key, **kw):
        pts = sorted((r["n"], r[key]) for r in rows if r["task"] == task and r.get("library") == library
                     and key in r)
        if library == "statsmodels":
            pts = sorted((r["n"], r["statsmodels_s" if key == "median_s" else "statsmodels_peak_gb"]) for r in rows
                         if r["task"] == task and "statsmodels_s" in r)
        if pts:
            ax.plot(*zip(*pts), marker="o", ms=3, **kw)

    for task, colour in (("fdr_bh", "C0"), ("holm", "C1"), ("hommel", "C2"), ("bonferroni", "C3")):
        line(axes[0], task, "icmlx", "median_s", color=colour, label=f"icmlx {task}")
        line(axes[0], task, "statsmodels", "median_s", color=colour, ls="--", label=f"statsmodels {task}")
    tasks = (("fdr_bh", "C0"), ("qvalues", "C4"), ("local_fdr", "C5"), ("relative_belief_test", "C6"),
             ("horseshoe_test", "C7"), ("relative_belief_test(binned=False)", "C8"))
    for task, colour in tasks:
        line(axes[1], task, "icmlx", "median_s", color=colour, label=task.replace("(binned=False)", ", unbinned"))
        line(axes[2], task, "icmlx", "peak_gb", color=colour, label=task.replace("(binned=False)", ", unbinned"))
    line(axes[2], "fdr_bh", "statsmodels", "peak_gb", color="C0", ls="--", label="statsmodels fdr_bh")
    titles = ("multipletests: steady time", "empirical Bayes (defaults): steady time", "peak resident memory")
    for ax, title, ylabel in zip(axes, titles, ("seconds", "seconds", "GB (process)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("number of tests")
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    from _harness import save_figure

    save_figure(fig, FIGURE)
    print(f"wrote {FIGURE}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="*", type=float, default=[1e4, 1e5, 1e6, 1e7, 1e8])
    ap.add_argument("--repeats", type=int, default=3, help="steady calls per task (1 at 10^8)")
    ap.add_argument("--statsmodels-max", type=float, default=1e7,
                    help="largest n for statsmodels' methods other than BH (always) and Hommel (up to 10^5)")
    ap.add_argument("--child", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--figure-only", action="store_true")
    args = ap.parse_args(argv)
    if args.child:
        child(int(args.child), args.repeats, int(args.statsmodels_max), args.out)
        return

    sys.path.insert(0, str(HERE))
    from _harness import print_table, results_path, write_results

    if args.figure_only:
        figure(_all_rows(results_path()))
        return
    for size in args.sizes:
        n = int(size)
        repeats = 1 if n >= 10**8 else args.repeats
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
            out = tmp.name
        cmd = [sys.executable, __file__, "--child", str(n), "--repeats", str(repeats), "--statsmodels-max",
               str(args.statsmodels_max), "--out", out]
        proc = subprocess.run(cmd, check=False)
        got = json.loads(Path(out).read_text()) if Path(out).stat().st_size else []
        os.unlink(out)
        if proc.returncode:
            got.append({"n": n, "task": "(child failed)", "returncode": proc.returncode})
        cols = ["task", "first_s", "median_s", "peak_gb", "ratio_to_bh", "statsmodels_s", "speedup"]
        print_table(got, cols, title=f"n = {n:.0e}")
        # one part per size: a size run again replaces its own part only
        write_results(rows=got, dtype="float32", part=f"n={n:.0e}",
                      extra={"n": n, "alpha": ALPHA, "repeats": repeats})
    figure(_all_rows(results_path()))


def _all_rows(path: Path) -> list[dict]:
    parts = json.loads(path.read_text()).get("parts", {})
    return [r for part in parts.values() for r in part["rows"]]


if __name__ == "__main__":
    main()
