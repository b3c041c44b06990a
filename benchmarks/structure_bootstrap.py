"""icmlx.structure.bootstrap_pc (all resamples of a level in one batch) vs a Python loop of ``pc`` over the same
resamples, and vs a loop of causal-learn's ``pc``.

Correctness first: the batched edge, directed and undirected frequencies must equal the loop's exactly (the
loop runs ``pc`` on the rows ``bootstrap_pc`` documents for each resample). Then the first call (trace + compile +
run) is reported apart from the steady state (median of repeats) for both icmlx paths; causal-learn (pure
Python/NumPy) runs the same resamples once. Float64 (``JAX_ENABLE_X64``, set by this script).

    python benchmarks/structure_bootstrap.py --quick
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("JAX_ENABLE_X64", "1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import print_table, time_fn, write_results  # noqa: E402
from icmlx.structure import bootstrap_pc, pc, random_er_dag, sample_linear_gaussian  # noqa: E402


def _freqs(graphs):
    g = np.stack(graphs)
    gt = np.swapaxes(g, 1, 2)
    return np.stack([((gt == 1) & (g == -1)).mean(0), ((g == -1) & (gt == -1)).mean(0)])


def _resamples(key, n, num):
    return [np.asarray(jax.random.randint(k, (n,), 0, n, jnp.int32)) for k in jax.random.split(key, num)]


def case(name, x, test, num, alpha, repeats, with_cl):
    key = jax.random.key(0)
    rows = _resamples(key, x.shape[0], num)

    def loop():
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="(constant|duplicated) columns")
            return [np.asarray(pc(x[r], ci_test=test, alpha=alpha).graph) for r in rows]

    res = bootstrap_pc(key, x, num, ci_test=test, alpha=alpha)
    ref = _freqs(loop())
    got = np.stack([np.asarray(res.directed_frequency), np.asarray(res.undirected_frequency)])
    equal = bool(np.array_equal(got, ref))
    if not equal:
        raise AssertionError(f"{name}: batched frequencies differ from the loop of pc")
    t_b = time_fn(lambda: bootstrap_pc(key, x, num, ci_test=test, alpha=alpha).edge_frequency, repeats=repeats,
                  warmup=0)
    t_l = time_fn(loop, repeats=repeats, warmup=0, is_jax=False)
    row = {"case": name, "n": x.shape[0], "d": x.shape[1], "resamples": num, "test": test, "alpha": alpha,
           "equal_frequencies": equal, "batched_first_s": t_b["compile_s"], "batched_s": t_b["median_s"],
           "loop_first_s": t_l["compile_s"], "loop_s": t_l["median_s"],
           "loop_over_batched": t_l["median_s"] / t_b["median_s"]}
    if with_cl:
        from causallearn.search.ConstraintBased.PC import pc as cl_pc

        t0 = time.perf_counter()
        cl = [cl_pc(x[r], alpha, test, show_progress=False).G.graph for r in rows]
        row["causal_learn_s"] = time.perf_counter() - t0
        row["causal_learn_over_batched"] = row["causal_learn_s"] / t_b["median_s"]
        row["causal_learn_equal_frequencies"] = bool(np.array_equal(_freqs(cl), ref))
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    ap.add_argument("--no-causal-learn", action="store_true")
    args = ap.parse_args()
    d, n, num, repeats = (20, 2000, 20, 3) if args.quick else (50, 5000, 50, 5)
    dag = random_er_dag(jax.random.key(1), d, expected_degree=2.5)
    x = np.asarray(sample_linear_gaussian(jax.random.key(2), dag, n))
    rows = [case(f"er_d{d}_fisherz", x, "fisherz", num, 0.05, repeats, not args.no_causal_learn)]
    dd = d // 2
    dag = random_er_dag(jax.random.key(3), dd, expected_degree=2.0)
    z = np.asarray(sample_linear_gaussian(jax.random.key(4), dag, n))
    codes = (z > -0.5).astype(np.int64) + (z > 0.5)  # three levels
    rows.append(case(f"er_d{dd}_chisq", codes, "chisq", num, 0.05, repeats, not args.no_causal_learn))
    print_table(rows)
    write_results("structure_bootstrap_quick" if args.quick else None, rows)


if __name__ == "__main__":
    main()
