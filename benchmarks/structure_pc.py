"""icmlx.structure.pc / pc_tree vs causal-learn's PC on the same data, same test, same alpha, one run.

For every case the CPDAGs are compared first (exact equality of causal-learn's endpoint matrix; float64 via
``JAX_ENABLE_X64``, which this script turns on). Then icmlx's first call (trace + compile + run) is reported apart from
its steady state (median of repeats), and causal-learn (pure Python/NumPy, ``show_progress=False``) is timed in the
same process. ``pc_tree`` rows compare against causal-learn's full PC-stable on poly-tree data (the baseline a user
would run); agreement there is reported as SHD to the truth for both, since the algorithms differ.

Pin both tools to the same cores from the shell, e.g. ``taskset -c 0,1 python benchmarks/structure_pc.py --quick``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("JAX_ENABLE_X64", "1")

import jax  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import print_table, time_fn, write_results  # noqa: E402
from icmlx.structure import (  # noqa: E402
    SepsetColliders,
    dag_to_cpdag,
    pc,
    pc_tree,
    random_er_dag,
    random_polyforest,
    read_causal_learn_data,
    sample_linear_gaussian,
    shd,
)

ALL_NETS = ["asia", "cancer", "earthquake", "survey", "sachs", "child"]
DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "causal-learn"


def _cl_pc(x, test, alpha, **kw):
    from causallearn.search.ConstraintBased.PC import pc as cl_pc

    return cl_pc(x, alpha, test, True, 0, kw.pop("uc_priority", 2), show_progress=False, **kw)


def _time_cl(fn, repeats):
    times = []
    out = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, float(np.median(times))


def pc_case(name, x, test, alpha, uc_priority, repeats, cl_repeats):
    # causal-learn's uc_priority=-1 is the sepset rule's default priority, 3
    kw = dict(ci_test=test, alpha=alpha, colliders=SepsetColliders(priority=3 if uc_priority == -1 else uc_priority))
    t0 = time.perf_counter()
    res = jax.block_until_ready(pc(x, **kw))
    compile_s = time.perf_counter() - t0
    # interleave the two tools' repeats, so that a drift in machine speed hits both alike
    ts, cls, cg = [], [], None
    for r in range(max(repeats, cl_repeats)):
        if r < cl_repeats:
            cg, dt = _time_cl(lambda: _cl_pc(x, test, alpha, uc_priority=uc_priority), 1)
            cls.append(dt)
        if r < repeats:
            t0 = time.perf_counter()
            jax.block_until_ready(pc(x, **kw).graph)
            ts.append(time.perf_counter() - t0)
    t = {"compile_s": compile_s, "median_s": float(np.median(ts))}
    cl_s = float(np.median(cls))
    agree = bool(np.array_equal(np.asarray(res.graph), cg.G.graph))
    return {
        "case": name, "algo": "pc", "n": x.shape[0], "d": x.shape[1], "test": test, "agree": agree,
        "n_tests": int(res.num_tests), "icmlx_compile_s": t["compile_s"], "icmlx_s": t["median_s"],
        "causal_learn_s": cl_s, "speedup": cl_s / t["median_s"],
    }


def tree_case(name, d, n, alpha, repeats, run_cl):
    key = jax.random.key(d)
    dag = random_polyforest(key, d)
    x = sample_linear_gaussian(jax.random.fold_in(key, 1), dag, n)
    # block here: with async dispatch the O(d^3)-per-sweep dag_to_cpdag would otherwise run inside pc_tree's timing
    truth = jax.block_until_ready(dag_to_cpdag(dag))
    t = time_fn(lambda: pc_tree(x, alpha=alpha).graph, repeats=repeats)
    import resource

    rss_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    g = pc_tree(x, alpha=alpha).graph
    row = {"case": name, "algo": "pc_tree", "n": n, "d": d, "test": "fisherz",
           "icmlx_compile_s": t["compile_s"], "icmlx_s": t["median_s"], "shd_icmlx": int(shd(g, truth)),
           "alpha": alpha, "peak_rss_gb": round(rss_gb, 2)}
    if run_cl:
        cg, cl_s = _time_cl(lambda: _cl_pc(np.asarray(x), "fisherz", alpha), 1)
        row.update(causal_learn_s=cl_s, speedup=cl_s / t["median_s"],
                   shd_causal_learn=int(shd(cg.G.graph.astype(np.int32), truth)))
        row["agree"] = row["shd_icmlx"] <= row["shd_causal_learn"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--extra", action="store_true",
                        help="with --quick: add ER d=100 (vs causal-learn), poly-tree d=200 vs causal-learn, d=1000")
    parser.add_argument("--only", default=None,
                        help="comma-separated case names to run (e.g. 'child,ER d=100,polytree d=200'); "
                             "results go to structure_pc_only.json")
    args = parser.parse_args()
    only = None if args.only is None else {c.strip() for c in args.only.split(",")}
    rows = []
    rep, clrep = (3, 1) if args.quick else (5, 3)
    if DATA.is_dir():
        if only is None or "linear_10" in only:
            x, _ = read_causal_learn_data(DATA / "data_linear_10.txt")
            rows.append(pc_case("linear_10", x, "fisherz", 0.05, 2, rep, clrep))
        nets = ["asia", "child"] if args.quick else ["asia", "cancer", "earthquake", "survey", "sachs", "child"]
        for net in (nets if only is None else [n for n in ALL_NETS if n in only]):
            x, _ = read_causal_learn_data(DATA / f"bnlearn_discrete_10000/data/{net}.txt")
            rows.append(pc_case(net, x.astype(np.int64), "chisq", 0.05, -1, rep, clrep))
    else:
        print(f"note: {DATA} absent; skipping the bnlearn / linear_10 cases")
    for d in ([50] if args.quick and not args.extra and only is None else [50, 100]):
        if only is not None and f"ER d={d}" not in only:
            continue
        key = jax.random.key(100 + d)
        dag = random_er_dag(key, d, 2.0)
        x = np.asarray(sample_linear_gaussian(jax.random.fold_in(key, 1), dag, 2000))
        rows.append(pc_case(f"ER d={d}", x, "fisherz", 0.01, 2, rep, clrep))
    # level 0.05 / d^2: a union bound over the ~d^3 tests, so that SHD to the truth stays meaningful as d grows
    full = not args.quick or args.extra
    for d in ([50, 200, 1000] if full or only is not None else [50, 200]):
        if only is not None and f"polytree d={d}" not in only:
            continue
        rows.append(tree_case(f"polytree d={d}", d, 2000, 0.05 / d**2, rep, run_cl=(d <= (200 if full else 50))))
    print_table(rows, ["case", "algo", "n", "d", "test", "agree", "n_tests", "icmlx_compile_s", "icmlx_s",
                       "causal_learn_s", "speedup", "shd_icmlx", "shd_causal_learn", "peak_rss_gb"],
                title="icmlx.structure vs causal-learn (same data, test, alpha; x64)")
    path = write_results("structure_pc" if only is None else "structure_pc_only", rows, dtype="float64")
    print(f"wrote {path}")
    bad = [r["case"] for r in rows if r.get("agree") is False]
    if bad:
        print(f"DISAGREEMENT on {bad}")
        sys.exit(1)


if __name__ == "__main__":
    main()
