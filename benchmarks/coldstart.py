"""First contact: a user's one-shot script, timed as a whole process, icmlx beside the peer library.

Each case is a pair of small scripts, one using icmlx and one using the library a user would otherwise pick,
that load the same data file, make the same calls, check the answer and exit. Both run in fresh interpreters,
alternating A B A B, timed from outside (``subprocess`` wall clock, so import and start-up are included):

- **cold**: icmlx's persistent compilation cache points at a new, empty directory for every run (what a user
  pays the very first time);
- **warm**: the cache directory was filled by one earlier run of the same script (every later run).

Both scripts of a case make the same calls: a first call and, where it applies, a second call on data of another
size ``n`` (same ``d``; the first 3/4 of the rows), each timed in-process. So ``icmlx/peer`` compares the same
work, whole process against whole process; ``icmlx_one_call/peer_one_call`` takes each side's second call out of
its own process time (what a one-call script costs). The icmlx script also reports the programs it compiled and
the backend compile seconds of the first call and of the second (the second should compile nothing).
Ratios are icmlx / peer (below 1 means icmlx is faster), the median over the pairs. The table is printed and
``benchmarks/results/coldstart.json`` written. The PC scripts print both CPDAGs; the JSON records the skeleton
edges found by one side only, the shared edges oriented differently, and for the bnlearn networks each side's
skeleton precision/recall and structural Hamming distance to the true DAG.

Cases: PC chi-square on the bnlearn networks child, alarm and insurance, PC Fisher-z, pc_tree, BH, a CG +
smoothed-aggregation solve (peer: PyAMG), ``infer_drift`` (peer: StochasticForceInference's linear estimator, the
cheap estimator a user would try first) and a DASH training start (peer: optax.adam in the same loop).

Data for the bnlearn cases: child comes from the shared causal-learn benchmark data (``../shared/data``). alarm
(Beinlich et al. 1989; 37 variables, 46 arcs) and insurance (Binder et al. 1997; 27 variables, 52 arcs) are
sampled here, n = 10,000 with seed 0, by ``benchmarks/_bn_networks.py`` from their BIF files, which are not part
of this repository: download ``alarm.bif`` and ``insurance.bif`` from the bnlearn Bayesian network repository
(https://www.bnlearn.com/bnrepository/, "Discrete Bayesian networks", BIF format; unpack the ``.bif.gz``) into a
folder and pass ``--networks DIR`` (or set ``ICMLX_BN_NETWORKS=DIR``). Without it those two cases are skipped,
with the reason printed.

Usage::

    python benchmarks/coldstart.py --quick              # 3 pairs per mode, all cases
    python benchmarks/coldstart.py --cases pc_chisq_child bh_1e6 --pairs 5
    python benchmarks/coldstart.py --networks ~/bn --cases pc_chisq_alarm pc_chisq_insurance pc_chisq_child
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bn_networks as bn  # noqa: E402
from _harness import print_table, write_results  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "causal-learn"

# Each icmlx script prints one JSON line: {"import_s", "first_s", "second_s" (optional), "check", "compiled"}.
# Each peer script prints {"import_s", "first_s", "check"}. "check" is compared between the two. "compiled" counts
# the XLA programs the icmlx process compiled (cache requests minus persistent-cache hits); at exit the icmlx
# process also prints the programs compiled by the first call and by the second (new n), and the seconds of the
# backend compilations (or persistent-cache loads) in each.
_TIMER = """
import json, time
_t0 = time.perf_counter()
"""
_COUNT = """
from jax import monitoring as _mon
_ev = {"req": 0, "hit": 0}
def _listen(e, **k):
    if e.endswith("compile_requests_use_cache"): _ev["req"] += 1
    if e.endswith("cache_hits"): _ev["hit"] += 1
_mon.register_event_listener(_listen)
_compiled = lambda: _ev["req"] - _ev["hit"]
_stamps = {"req": [], "hit": []}  # times of compile requests and persistent-cache hits
_backend = []  # (time, seconds) of every backend compilation or cache load
_mon.register_event_listener(
    lambda e, **k: _stamps["req" if e.endswith("compile_requests_use_cache") else "hit"].append(time.perf_counter())
    if e.endswith(("compile_requests_use_cache", "cache_hits")) else None
)
_mon.register_event_duration_secs_listener(
    lambda e, d, **k: _backend.append((time.perf_counter(), d)) if e.endswith("backend_compile_duration") else None
)
def _compile_report():
    import __main__
    t1, t2 = getattr(__main__, "_t1", 0.0), getattr(__main__, "_t2", float("inf"))
    def programs(lo, hi):  # compiled = requested minus loaded from the persistent cache
        return sum(lo < t <= hi for t in _stamps["req"]) - sum(lo < t <= hi for t in _stamps["hit"])
    def secs(lo, hi):
        return sum(d for t, d in _backend if lo < t <= hi)
    inf = float("inf")
    print(json.dumps({"programs_first": programs(t1, t2), "compile_first_s": secs(t1, t2),
                      "programs_second": programs(t2, inf), "compile_second_s": secs(t2, inf),
                      "compile_s": secs(0.0, inf)}))
import atexit
atexit.register(_compile_report)
"""

# PC scripts (chi-square on a bnlearn network, Fisher-z): both sides make the same two calls, the second on the
# first 3/4 of the rows (a new n, same d: icmlx compiles nothing for it), and print both CPDAGs (causal-learn's
# endpoint encoding, which pc's ``graph`` uses too) so that the runner can compare them. Both use their defaults:
# PC-stable, sepset colliders with conflict priority 2 (causal-learn's uc_priority=-1 would mean 3, which orients
# some conflicting colliders differently on alarm and insurance).
_PC_ICMLX = _TIMER + """
import numpy as np
from icmlx.structure import pc
x = np.load(DATA)
_t1 = time.perf_counter()
g = np.asarray(pc(x, ci_test=TEST, alpha=ALPHA).graph)
_t2 = time.perf_counter()
g2 = np.asarray(pc(x[: x.shape[0] * 3 // 4], ci_test=TEST, alpha=ALPHA).graph)
_t3 = time.perf_counter()
edges = lambda g: int(((g != 0) & (g.T != 0)).sum() // 2)
print(json.dumps({"import_s": _t1 - _t0, "first_s": _t2 - _t1, "second_s": _t3 - _t2, "check": edges(g),
                  "check_second": edges(g2), "graph": g.tolist(), "graph_second": g2.tolist(),
                  "compiled": _compiled()}))
"""
_PC_PEER = _TIMER + """
import numpy as np
from causallearn.search.ConstraintBased.PC import pc
x = np.load(DATA)
_t1 = time.perf_counter()
g = pc(x, ALPHA, TEST, show_progress=False).G.graph
_t2 = time.perf_counter()
g2 = pc(x[: x.shape[0] * 3 // 4], ALPHA, TEST, show_progress=False).G.graph
_t3 = time.perf_counter()
edges = lambda g: int(((g != 0) & (g.T != 0)).sum() // 2)
print(json.dumps({"import_s": _t1 - _t0, "first_s": _t2 - _t1, "second_s": _t3 - _t2, "check": edges(g),
                  "check_second": edges(g2), "graph": g.tolist(), "graph_second": g2.tolist()}))
"""


def _pc_case(what: str, test: str, alpha: str) -> dict[str, str]:
    return {"what": what, **{side: body.replace("TEST", repr(test)).replace("ALPHA", alpha)
                             for side, body in (("icmlx", _PC_ICMLX), ("peer", _PC_PEER))}}


# bnlearn networks for the chi-square cases: child comes with the shared causal-learn data; alarm and insurance
# are sampled here (benchmarks/_bn_networks.py) from their BIF files, which are not part of the repository.
BN_CASES = {
    "pc_chisq_child": ("child", "bnlearn child (n = 10,000, d = 20)"),
    "pc_chisq_alarm": ("alarm", "bnlearn alarm (n = 10,000 sampled, seed 0, d = 37)"),
    "pc_chisq_insurance": ("insurance", "bnlearn insurance (n = 10,000 sampled, seed 0, d = 27)"),
}
SAMPLED = ("alarm", "insurance")

CASES: dict[str, dict[str, str]] = {
    **{case: _pc_case(f"PC chi-square, {label}, alpha 0.05", "chisq", "0.05")
       for case, (_, label) in BN_CASES.items()},
    "pc_fisherz_er50": _pc_case("PC Fisher-z, ER graph d = 50, n = 2,000, alpha 0.05", "fisherz", "0.05"),
    "pc_tree_polytree50": {
        "what": "poly-forest learner (pc_tree) vs causal-learn PC, poly-tree d = 50, n = 2,000",
        "icmlx": _TIMER + """
import numpy as np
from icmlx.structure import pc_tree
x = np.load(DATA)
_t1 = time.perf_counter()
r = pc_tree(x, alpha=0.05 / 50**2)
edges = int(np.asarray(r.skeleton).sum() // 2)
_t2 = time.perf_counter()
r2 = pc_tree(x[:1500], alpha=0.05 / 50**2)
np.asarray(r2.skeleton)
_t3 = time.perf_counter()
print(json.dumps({"import_s": _t1 - _t0, "first_s": _t2 - _t1, "second_s": _t3 - _t2, "check": edges,
                  "compiled": _compiled()}))
""",
        "peer": _TIMER + """
import numpy as np
from causallearn.search.ConstraintBased.PC import pc
x = np.load(DATA)
_t1 = time.perf_counter()
cg = pc(x, 0.05 / 50**2, "fisherz", True, 0, -1, show_progress=False)
g = cg.G.graph
edges = int(((g != 0) & (g.T != 0)).sum() // 2)
_t2 = time.perf_counter()
pc(x[:1500], 0.05 / 50**2, "fisherz", True, 0, -1, show_progress=False).G.graph
_t3 = time.perf_counter()
print(json.dumps({"import_s": _t1 - _t0, "first_s": _t2 - _t1, "second_s": _t3 - _t2, "check": edges}))
""",
    },
    "bh_1e6": {
        "what": "Benjamini-Hochberg on 10^6 p-values, alpha 0.1",
        "icmlx": _TIMER + """
import numpy as np
from icmlx.stats import benjamini_hochberg
p = np.load(DATA)
_t1 = time.perf_counter()
r = benjamini_hochberg(p, 0.1)
k = int(r.num_rejected)  # the record's count, as documented (r.reject.sum() would compile a reduction per new n)
_t2 = time.perf_counter()
r2 = benjamini_hochberg(p[:700_000], 0.1)
int(r2.num_rejected)
_t3 = time.perf_counter()
print(json.dumps({"import_s": _t1 - _t0, "first_s": _t2 - _t1, "second_s": _t3 - _t2, "check": k,
                  "compiled": _compiled()}))
""",
        "peer": _TIMER + """
import numpy as np
from statsmodels.stats.multitest import multipletests
p = np.load(DATA)
_t1 = time.perf_counter()
reject = multipletests(p, 0.1, method="fdr_bh")[0]
k = int(reject.sum())
_t2 = time.perf_counter()
int(multipletests(p[:700_000], 0.1, method="fdr_bh")[0].sum())
_t3 = time.perf_counter()
print(json.dumps({"import_s": _t1 - _t0, "first_s": _t2 - _t1, "second_s": _t3 - _t2, "check": k}))
""",
    },
    "cg_sa_poisson": {
        "what": "CG + smoothed-aggregation AMG on a SciPy CSR 2-D Poisson (128^2 unknowns), float64, rtol 1e-6",
        "icmlx": _TIMER + """
import numpy as np, scipy.sparse as sp, jax
jax.config.update("jax_enable_x64", True)  # the SciPy/PyAMG user's precision (float32 cannot reach 1e-6 here)
from icmlx.solvers import cg, smoothed_aggregation
A = sp.load_npz(DATA).tocsr()
b = np.ones(A.shape[0])
_t1 = time.perf_counter()
sol = cg(A, b, rtol=1e-6, preconditioner=smoothed_aggregation(A))
x = np.asarray(sol.value, np.float64)
ok = bool(np.linalg.norm(b - A @ x) <= 2e-6 * np.linalg.norm(b))
_t2 = time.perf_counter()
m = 112  # a second problem of another size (same kind)
t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
A2 = (sp.kron(sp.identity(m), t) + sp.kron(t, sp.identity(m))).tocsr()
np.asarray(cg(A2, np.ones(m * m), rtol=1e-6, preconditioner=smoothed_aggregation(A2)).value)
_t3 = time.perf_counter()
print(json.dumps({"import_s": _t1 - _t0, "first_s": _t2 - _t1, "second_s": _t3 - _t2, "check": ok,
                  "compiled": _compiled()}))
""",
        "peer": _TIMER + """
import numpy as np, scipy.sparse as sp
import pyamg
A = sp.load_npz(DATA).tocsr()
b = np.ones(A.shape[0])
_t1 = time.perf_counter()
x = pyamg.smoothed_aggregation_solver(A).solve(b, tol=1e-6, accel="cg")
ok = bool(np.linalg.norm(b - A @ x) <= 2e-6 * np.linalg.norm(b))
_t2 = time.perf_counter()
m = 112  # the same second problem as the icmlx script
t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
A2 = (sp.kron(sp.identity(m), t) + sp.kron(t, sp.identity(m))).tocsr()
pyamg.smoothed_aggregation_solver(A2).solve(np.ones(m * m), tol=1e-6, accel="cg")
_t3 = time.perf_counter()
print(json.dumps({"import_s": _t1 - _t0, "first_s": _t2 - _t1, "second_s": _t3 - _t2, "check": ok}))
""",
    },
    "infer_drift_vdp": {
        "what": "infer_drift (geodesic EM, sparse GP class, 4 iterations, 32 particles, 10 steps/interval), Van der "
                "Pol, 250 obs, "
                "vs SFI infer_force_linear (KM)",
        "icmlx": _TIMER + """
import numpy as np, jax
from icmlx.sde import infer_drift
obs = np.load(DATA)
ts = np.arange(obs.shape[0]) * 2.0
cfg = dict(num_steps=4, num_particles=32, num_time_steps=10, function_class=None, throw=False)
_t1 = time.perf_counter()
sol = infer_drift(jax.random.key(1), obs, ts, 0.25, **cfg)
ok = bool(np.all(np.isfinite(np.asarray(sol.drift.weights))))
_t2 = time.perf_counter()
k = obs.shape[0] * 3 // 4
np.asarray(infer_drift(jax.random.key(2), obs[:k], ts[:k], 0.25, **cfg).drift.weights)
_t3 = time.perf_counter()
print(json.dumps({"import_s": _t1 - _t0, "first_s": _t2 - _t1, "second_s": _t3 - _t2, "check": ok,
                  "compiled": _compiled()}))
""",
        "peer": _TIMER + """
import numpy as np
from SFI import OverdampedLangevinInference
from SFI.bases import monomials_up_to
from SFI.trajectory import TrajectoryCollection
obs = np.load(DATA)
_t1 = time.perf_counter()
inf = OverdampedLangevinInference(TrajectoryCollection.from_arrays(X=obs, dt=2.0))
inf.compute_diffusion_constant()
inf.infer_force_linear(monomials_up_to(order=3, dim=2, rank="vector"), preset="KM")
ok = bool(np.all(np.isfinite(np.asarray(inf.force_inferred(obs[:5])))))
_t2 = time.perf_counter()
k = obs.shape[0] * 3 // 4
inf2 = OverdampedLangevinInference(TrajectoryCollection.from_arrays(X=obs[:k], dt=2.0))
inf2.compute_diffusion_constant()
inf2.infer_force_linear(monomials_up_to(order=3, dim=2, rank="vector"), preset="KM")
np.asarray(inf2.force_inferred(obs[:5]))
_t3 = time.perf_counter()
print(json.dumps({"import_s": _t1 - _t0, "first_s": _t2 - _t1, "second_s": _t3 - _t2, "check": ok}))
""",
    },
    "dash_start": {
        "what": "DASH training start: 30 steps of an MLP regression (64-256-256-1, batch 512) vs optax.adam",
        "icmlx": _TIMER + """
import numpy as np, jax, jax.numpy as jnp, optax
from icmlx.optim import dash
data = np.load(DATA)
""" + "{TRAIN}" + """
_t1 = time.perf_counter()
l0, l1 = train(dash(1e-3), data, 30)
_t2 = time.perf_counter()
train(dash(1e-3), data[: data.shape[0] * 3 // 4], 10)
_t3 = time.perf_counter()
print(json.dumps({"import_s": _t1 - _t0, "first_s": _t2 - _t1, "second_s": _t3 - _t2, "check": bool(l1 < l0),
                  "compiled": _compiled()}))
""",
        "peer": _TIMER + """
import numpy as np, jax, jax.numpy as jnp, optax
data = np.load(DATA)
""" + "{TRAIN}" + """
_t1 = time.perf_counter()
l0, l1 = train(optax.adam(1e-3), data, 30)
_t2 = time.perf_counter()
train(optax.adam(1e-3), data[: data.shape[0] * 3 // 4], 10)
_t3 = time.perf_counter()
print(json.dumps({"import_s": _t1 - _t0, "first_s": _t2 - _t1, "second_s": _t3 - _t2, "check": bool(l1 < l0)}))
""",
    },
}

# The training loop both DASH-start scripts share (the optimizer is the only difference): the loss gradient and
# the optimizer update are jitted apart, as in a typical optax script, so a new batch size retraces only the loss.
_TRAIN = """
def init(key):
    sizes, params = [64, 256, 256, 1], []
    for a, b in zip(sizes[:-1], sizes[1:]):
        key, sub = jax.random.split(key)
        params.append((jax.random.normal(sub, (a, b)) / np.sqrt(a), jnp.zeros(b)))
    return params
def loss(params, xy):
    h = xy[:, :-1]
    for w, b in params[:-1]:
        h = jnp.tanh(h @ w + b)
    w, b = params[-1]
    return jnp.mean(((h @ w + b)[:, 0] - xy[:, -1]) ** 2)
def train(opt, data, steps):
    params = init(jax.random.key(0))
    state = opt.init(params)
    grad = jax.jit(jax.value_and_grad(loss))
    update = jax.jit(opt.update)
    xy = jnp.asarray(data, jnp.float32)
    first = None
    for _ in range(steps):
        l, g = grad(params, xy)
        first = float(l) if first is None else first
        upd, state = update(g, state, params)
        params = optax.apply_updates(params, upd)
    return first, float(grad(params, xy)[0])
"""
for _side in ("icmlx", "peer"):
    CASES["dash_start"][_side] = CASES["dash_start"][_side].replace("{TRAIN}", _TRAIN)
# The one-call path a PyAMG user reaches for (icmlx.solvers.solve), beside the same PyAMG script and data.
CASES["solve_sa_poisson"] = {
    **CASES["cg_sa_poisson"],
    "what": "solve(A, b) (smoothed-aggregation AMG + CG) on a SciPy CSR 2-D Poisson (128^2 unknowns), float64, "
            "rtol 1e-6",
    "icmlx": CASES["cg_sa_poisson"]["icmlx"]
    .replace("from icmlx.solvers import cg, smoothed_aggregation", "from icmlx.solvers import solve")
    .replace("cg(A, b, rtol=1e-6, preconditioner=smoothed_aggregation(A))", "solve(A, b, rtol=1e-6)")
    .replace("cg(A2, np.ones(m * m), rtol=1e-6, preconditioner=smoothed_aggregation(A2))",
             "solve(A2, np.ones(m * m), rtol=1e-6)"),
}
assert "solve(A2" in CASES["solve_sa_poisson"]["icmlx"]


def _bn_source(case: str, networks: Path | None) -> str | None:
    """Why a bnlearn case cannot run here (its data or BIF file is missing), or None."""
    name = BN_CASES[case][0]
    if name not in SAMPLED:
        src = SHARED / "bnlearn_discrete_10000" / "data" / f"{name}.txt"
        return None if src.exists() else f"{src} not found (the shared causal-learn reference data)"
    if networks is None:
        return (f"no network folder: pass --networks DIR or set ICMLX_BN_NETWORKS to a folder holding {name}.bif "
                "(bnlearn repository, https://www.bnlearn.com/bnrepository/)")
    if not (networks / f"{name}.bif").exists():
        return f"{networks / (name + '.bif')} not found (bnlearn repository, https://www.bnlearn.com/bnrepository/)"
    return None


def _true_dag(case: str, networks: Path | None) -> np.ndarray:
    """The network's DAG, ``a[i, j] = 1`` for i -> j."""
    name = BN_CASES[case][0]
    if name in SAMPLED:
        return bn.read_bif(networks / f"{name}.bif").adjacency()
    lines = (SHARED / "bnlearn_discrete_10000" / "truth_dag_graph" / f"{name}.graph.txt").read_text().splitlines()
    nodes = lines[lines.index("Graph Nodes:") + 1].split(";")
    a = np.zeros((len(nodes), len(nodes)), np.int8)
    for line in lines:
        if "-->" in line:
            i, j = line.split(". ", 1)[1].split(" --> ")
            a[nodes.index(i.strip()), nodes.index(j.strip())] = 1
    return a


def _make_data(case: str, folder: Path, networks: Path | None = None) -> Path:
    """Write the case's input file (the same file both scripts read) and return its path."""
    rng = np.random.default_rng(0)
    path = folder / f"{case}.npy"
    if case in BN_CASES:
        why = _bn_source(case, networks)
        if why is not None:
            raise FileNotFoundError(why)
        name = BN_CASES[case][0]
        if name in SAMPLED:  # sampled once, written in the shared data's text format, read back like child
            src = folder / f"{name}.txt"
            bn.write_txt(bn.network_data(networks / f"{name}.bif", 10_000, seed=0)[1], src)
        else:
            src = SHARED / "bnlearn_discrete_10000" / "data" / f"{name}.txt"
        np.save(path, np.loadtxt(src, skiprows=1).astype(np.int64))
    elif case in ("pc_fisherz_er50", "pc_tree_polytree50"):
        d, n = 50, 2000
        w = np.zeros((d, d))
        if case == "pc_fisherz_er50":
            mask = np.triu(rng.random((d, d)) < 2.0 / (d - 1), 1)
        else:  # a random poly-tree: every node after the first gets one earlier neighbour, random direction
            mask = np.zeros((d, d), bool)
            for j in range(1, d):
                i = int(rng.integers(j))
                mask[(i, j) if rng.random() < 0.5 else (j, i)] = True
        w[mask] = rng.uniform(0.5, 1.5, mask.sum()) * rng.choice([-1, 1], mask.sum())
        order = _topological(mask)
        x = np.zeros((n, d))
        for j in order:
            x[:, j] = x @ w[:, j] + rng.standard_normal(n)
        np.save(path, x)
    elif case in ("cg_sa_poisson", "solve_sa_poisson"):
        import scipy.sparse as sp

        m = 128
        t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
        path = folder / f"{case}.npz"
        sp.save_npz(path, (sp.kron(sp.identity(m), t) + sp.kron(t, sp.identity(m))).tocsr())
    elif case == "infer_drift_vdp":
        # Van der Pol (mu = 1), sigma = 0.25, Euler-Maruyama with dt = 0.01, observed every 2.0 (250 points)
        x, dt, keep = np.array([1.81, -1.41]), 0.01, []
        for i in range(50_000):
            f = np.array([x[1], (1 - x[0] ** 2) * x[1] - x[0]])
            x = x + f * dt + 0.25 * np.sqrt(dt) * rng.standard_normal(2)
            if (i + 1) % 200 == 0:
                keep.append(x.copy())
        np.save(path, np.asarray(keep))
    elif case == "dash_start":
        x = rng.standard_normal((512, 64))
        y = np.sin(x[:, :8].sum(axis=1)) + 0.1 * rng.standard_normal(512)
        np.save(path, np.column_stack([x, y]))
    elif case == "bh_1e6":
        m, m1 = 1_000_000, 10_000
        z = rng.standard_normal(m)
        z[:m1] += 4.0
        from scipy.stats import norm

        np.save(path, 2 * norm.sf(np.abs(z)))
    else:
        raise ValueError(f"unknown case {case!r}")
    return path


def _topological(mask: np.ndarray) -> list[int]:
    indeg = mask.sum(0).astype(int)
    ready = [j for j in range(len(indeg)) if indeg[j] == 0]
    out = []
    while ready:
        i = ready.pop()
        out.append(i)
        for j in np.flatnonzero(mask[i]):
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(int(j))
    return out


def _run(script: Path, env: dict[str, str]) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=900)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{script.name} failed:\n{proc.stderr[-3000:]}")
    out = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            out.update(json.loads(line))
    out["wall_s"] = wall
    return out


def _compare_graphs(gi: np.ndarray, gp: np.ndarray, dag: np.ndarray | None) -> dict:
    """icmlx's CPDAG against causal-learn's (same endpoint encoding), and each skeleton against the true DAG."""
    gi, gp = np.asarray(gi), np.asarray(gp)
    si, sp_ = (gi != 0) & (gi.T != 0), (gp != 0) & (gp.T != 0)
    upper = np.triu(np.ones_like(si), 1)
    out = {
        "skeleton_only_icmlx": [list(map(int, e)) for e in np.argwhere(si & ~sp_ & upper)],
        "skeleton_only_peer": [list(map(int, e)) for e in np.argwhere(sp_ & ~si & upper)],
        "marks_differ": int(((gi != gp) & si & sp_ & upper).sum()),  # shared edges oriented differently
    }
    if dag is not None:
        true = (dag + dag.T) > 0
        for side, sk in (("icmlx", si), ("peer", sp_)):
            hits = int((sk & true & upper).sum())
            out[f"{side}_skeleton_precision"] = round(hits / max(int((sk & upper).sum()), 1), 3)
            out[f"{side}_skeleton_recall"] = round(hits / max(int((true & upper).sum()), 1), 3)
            # structural Hamming distance to the DAG: missing + extra adjacencies + adjacencies whose CPDAG
            # marks are not the true arc (an undirected edge counts as one error)
            g = gi if side == "icmlx" else gp
            directed_ok = (g.T == 1) & (g == -1) & (dag.astype(bool))  # g[j, i] = 1, g[i, j] = -1: i -> j
            right = int(directed_ok.sum())
            out[f"{side}_shd_to_dag"] = int((sk ^ true)[upper.astype(bool)].sum()) + hits - right
    return out


def run_case(case: str, folder: Path, pairs: int, networks: Path | None = None) -> list[dict]:
    spec = CASES[case]
    data = _make_data(case, folder, networks)
    scripts = {}
    for side in ("icmlx", "peer"):
        path = folder / f"{case}_{side}.py"
        body = spec[side].replace(_TIMER, _TIMER + _COUNT, 1) if side == "icmlx" else spec[side]
        path.write_text(f"DATA = {str(data)!r}\n" + textwrap.dedent(body))
        scripts[side] = path
    base_env = {k: v for k, v in os.environ.items() if k not in ("ICMLX_CACHE", "JAX_COMPILATION_CACHE_DIR")}
    rows = []
    warm_dir = folder / f"{case}_warm_cache"
    _run(scripts["icmlx"], {**base_env, "ICMLX_CACHE_DIR": str(warm_dir)})  # fills the warm cache
    for mode in ("cold", "warm"):
        samples: dict[str, list[dict]] = {"icmlx": [], "peer": []}
        for i in range(pairs):
            cache = folder / f"{case}_cold_{i}" if mode == "cold" else warm_dir
            samples["icmlx"].append(_run(scripts["icmlx"], {**base_env, "ICMLX_CACHE_DIR": str(cache)}))
            samples["peer"].append(_run(scripts["peer"], base_env))
        checks = {s: {json.dumps([r["check"], r.get("check_second")]) for r in samples[s]} for s in samples}
        # both scripts make the same calls (the second on a new n): whole process against whole process
        ratios = [a["wall_s"] / b["wall_s"] for a, b in zip(samples["icmlx"], samples["peer"])]
        # the first call alone: each side's second call (its in-process time) taken out of its whole process
        one_call = [(a["wall_s"] - a["second_s"]) / (b["wall_s"] - b["second_s"])
                    for a, b in zip(samples["icmlx"], samples["peer"]) if "second_s" in a and "second_s" in b]

        def med(side, key, samples=samples):
            vals = [r[key] for r in samples[side] if key in r]
            return statistics.median(vals) if vals else None

        def rnd(v):
            return None if v is None else round(v, 2)

        row = {
            "case": case,
            "mode": mode,
            "icmlx_s": rnd(med("icmlx", "wall_s")),
            "peer_s": rnd(med("peer", "wall_s")),
            "icmlx/peer": round(statistics.median(ratios), 2),
            "icmlx_one_call/peer_one_call": round(statistics.median(one_call), 2) if one_call else None,
            "icmlx_import_s": rnd(med("icmlx", "import_s")),
            "icmlx_first_call_s": rnd(med("icmlx", "first_s")),
            "icmlx_second_call_new_n_s": rnd(med("icmlx", "second_s")),
            "icmlx_programs_compiled": med("icmlx", "compiled"),
            "icmlx_programs_first_call": med("icmlx", "programs_first"),
            "icmlx_programs_second_call_new_n": med("icmlx", "programs_second"),
            "icmlx_compile_s": rnd(med("icmlx", "compile_s")),
            "icmlx_compile_first_call_s": rnd(med("icmlx", "compile_first_s")),
            "icmlx_compile_second_call_new_n_s": rnd(med("icmlx", "compile_second_s")),
            "peer_import_s": rnd(med("peer", "import_s")),
            "peer_call_s": rnd(med("peer", "first_s")),
            "peer_second_call_new_n_s": rnd(med("peer", "second_s")),
            "check_icmlx": sorted(checks["icmlx"]),
            "check_peer": sorted(checks["peer"]),
            "pairs": pairs,
            "what": spec["what"],
        }
        if "graph" in samples["icmlx"][0] and "graph" in samples["peer"][0]:
            dag = _true_dag(case, networks) if case in BN_CASES else None
            row["graphs"] = {
                "first_call": _compare_graphs(samples["icmlx"][0]["graph"], samples["peer"][0]["graph"], dag),
                "second_call": _compare_graphs(samples["icmlx"][0]["graph_second"],
                                               samples["peer"][0]["graph_second"], dag),
            }
        rows.append(row)
        print_table([row], ["case", "mode", "icmlx_s", "peer_s", "icmlx/peer", "icmlx_one_call/peer_one_call",
                            "icmlx_first_call_s", "icmlx_second_call_new_n_s", "peer_call_s",
                            "peer_second_call_new_n_s", "icmlx_programs_compiled",
                            "icmlx_programs_first_call", "icmlx_programs_second_call_new_n", "icmlx_compile_s",
                            "check_icmlx", "check_peer"])
        if "graphs" in row:
            print(f"  graphs ({mode}):", json.dumps(row["graphs"]))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 pairs per mode")
    ap.add_argument("--pairs", type=int, default=None)
    ap.add_argument("--cases", nargs="*", default=list(CASES))
    ap.add_argument("--networks", type=Path, default=os.environ.get("ICMLX_BN_NETWORKS") or None,
                    help="folder with the bnlearn BIF files (alarm.bif, insurance.bif); default $ICMLX_BN_NETWORKS")
    args = ap.parse_args(argv)
    networks = None if args.networks is None else Path(args.networks)
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        ap.error(f"unknown cases {unknown}; known: {list(CASES)}")
    pairs = args.pairs or (3 if args.quick else 5)
    rows, skipped = [], {}
    with tempfile.TemporaryDirectory(prefix="icmlx-coldstart-") as tmp:
        for case in args.cases:
            why = _bn_source(case, networks) if case in BN_CASES else None
            if why is not None:
                print(f"skipping {case}: {why}")
                skipped[case] = why
                continue
            rows += run_case(case, Path(tmp), pairs, networks)
    print()
    print_table(rows, ["case", "mode", "icmlx_s", "peer_s", "icmlx/peer", "icmlx_one_call/peer_one_call",
                       "icmlx_import_s", "icmlx_first_call_s", "icmlx_second_call_new_n_s",
                       "icmlx_programs_compiled", "peer_import_s", "peer_call_s", "peer_second_call_new_n_s"])
    print(f"wrote {write_results(rows=rows, extra={'skipped': skipped})}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
