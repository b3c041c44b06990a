"""Fisher-z PC at thousands of variables: time, peak memory and SHD on sparse random linear-Gaussian DAGs.

Each size runs in a fresh subprocess (so its peak resident memory is its own, read from ``getrusage``): an
Erdős–Rényi DAG with the given expected degree, ``n`` samples of the linear-Gaussian model
(:func:`icmlx.structure.sample_linear_gaussian`), then ``pc(x, ci_test="fisherz", alpha)`` timed as one call
(compilation included: a user's single run; wall and CPU seconds) and the SHD of its CPDAG to the true CPDAG.
causal-learn's PC-stable (same test, alpha and collider rule) runs beside it up to ``--cl-max-d`` variables, and
its CPDAG is compared.

Separating sets are stored per removed edge (``PCResult.sepset_members``) and each level is built in chunks of
at most ``2^22`` tests, so memory follows the edges and tests, not ``d^3``.

    python benchmarks/structure_scale.py                       # d = 100 (with causal-learn), 500, 1000
    python benchmarks/structure_scale.py --d 500 1000 2000 5000 --cl-max-d 0
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def one(d: int, n: int, degree: float, alpha: float, seed: int, with_cl: bool) -> dict:
    import resource

    import jax
    import numpy as np

    from icmlx.structure import dag_to_cpdag, pc, random_er_dag, sample_linear_gaussian, shd

    t0 = time.perf_counter()
    dag = random_er_dag(jax.random.key(seed), d, expected_degree=degree)
    x = np.asarray(sample_linear_gaussian(jax.random.key(seed + 1), dag, n))
    t_data = time.perf_counter() - t0
    t0 = time.perf_counter()
    c0 = resource.getrusage(resource.RUSAGE_SELF)
    res = pc(x, ci_test="fisherz", alpha=alpha)
    jax.block_until_ready(res.graph)
    t_pc = time.perf_counter() - t0
    c1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    truth = dag_to_cpdag(dag)
    row = {
        "d": d, "n": n, "expected_degree": degree, "alpha": alpha,
        "true_edges": int(np.asarray(dag).sum()), "found_edges": int(np.asarray(res.skeleton).sum()) // 2,
        "num_tests": int(res.num_tests), "sepset_rows": int(res.sepset_members.shape[0]),
        "icmlx_s": t_pc, "icmlx_cpu_s": cpu, "data_s": t_data, "shd_icmlx": int(shd(res.graph, truth)),
        "peak_rss_gb_icmlx": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }
    if with_cl:
        from causallearn.search.ConstraintBased.PC import pc as cl_pc

        t0 = time.perf_counter()
        cg = cl_pc(x.astype(np.float64), alpha, "fisherz", True, 0, 2, show_progress=False)
        row["causal_learn_s"] = time.perf_counter() - t0
        row["speedup"] = row["causal_learn_s"] / t_pc
        row["agree"] = bool((cg.G.graph == np.asarray(res.graph)).all())
        row["shd_causal_learn"] = int(shd(cg.G.graph, truth))
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--d", type=int, nargs="+", default=[100, 500, 1000])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--degree", type=float, default=2.5)
    ap.add_argument("--alpha", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cl-max-d", type=int, default=100, help="run causal-learn up to this d (0: never)")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one is not None:
        print(json.dumps(one(args.one, args.n, args.degree, args.alpha, args.seed, args.one <= args.cl_max_d)))
        return
    from _harness import print_table, write_results

    rows = []
    for d in args.d:
        cmd = [sys.executable, __file__, "--one", str(d), "--n", str(args.n), "--degree", str(args.degree),
               "--alpha", str(args.alpha), "--seed", str(args.seed), "--cl-max-d", str(args.cl_max_d)]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            rows.append({"d": d, "error": out.stderr.strip().splitlines()[-1][:300]})
        else:
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print_table(rows[-1:])
        write_results("structure_scale", rows, extra={"command": " ".join(["python", *sys.argv])})  # row by row
    cols = ["d", "n", "true_edges", "found_edges", "num_tests", "icmlx_s", "icmlx_cpu_s", "peak_rss_gb_icmlx",
            "shd_icmlx", "causal_learn_s", "speedup", "agree", "shd_causal_learn", "error"]
    print_table(rows, [c for c in cols if any(c in r for r in rows)], title="Fisher-z PC at scale")
    path = write_results("structure_scale", rows, extra={"command": " ".join(["python", *sys.argv])})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
