"""First contact: a user's one-shot script, timed as a whole process, icmlx beside the peer library.

Each case is a pair of small scripts, one using icmlx and one using the library a user would otherwise pick,
that load the same data file, make one call, check the answer and exit. Both run in fresh interpreters,
alternating A B A B, timed from outside (``subprocess`` wall clock, so import and start-up are included):

- **cold**: icmlx's persistent compilation cache points at a new, empty directory for every run (what a user
  pays the very first time);
- **warm**: the cache directory was filled by one earlier run of the same script (every later run).

Inside the icmlx script the import, the first call and, where it applies, a second call on data of another size
``n`` (same ``d``) are timed too, so compile cost per entry point and recompilation on a new size are reported:
programs compiled and backend compile seconds of the first call and of the second.
Ratios are icmlx / peer (below 1 means icmlx is faster), the median over the pairs. The table is printed and
``benchmarks/results/coldstart.json`` written.

Cases: PC chi-square (bnlearn child), PC Fisher-z, pc_tree, BH, a CG + smoothed-aggregation solve (peer: PyAMG),
``infer_drift`` (peer: StochasticForceInference's linear estimator, the cheap estimator a user would try first)
and a DASH training start (peer: optax.adam in the same loop).

Usage::

    python benchmarks/coldstart.py --quick              # 3 pairs per mode, all cases
    python benchmarks/coldstart.py --cases pc_chisq bh --pairs 5
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
from _harness import environment, print_table  # noqa: E402

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

CASES: dict[str, dict[str, str]] = {
    "pc_chisq_child": {
        "what": "PC chi-square, bnlearn child (n = 10,000, d = 20), alpha 0.05",
        "icmlx": _TIMER + """
import numpy as np
from icmlx.structure import pc
x = np.load(DATA)
_t1 = time.perf_counter()
r = pc(x, ci_test="chisq", alpha=0.05)
edges = int(np.asarray(r.skeleton).sum() // 2)
_t2 = time.perf_counter()
r2 = pc(x[: x.shape[0] * 3 // 4], ci_test="chisq", alpha=0.05)
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
cg = pc(x, 0.05, "chisq", True, 0, -1, show_progress=False)
g = cg.G.graph
edges = int(((g != 0) & (g.T != 0)).sum() // 2)
_t2 = time.perf_counter()
print(json.dumps({"import_s": _t1 - _t0, "first_s": _t2 - _t1, "check": edges}))
""",
    },
    "pc_fisherz_er50": {
        "what": "PC Fisher-z, ER graph d = 50, n = 2,000, alpha 0.05",
        "icmlx": _TIMER + """
import numpy as np
from icmlx.structure import pc
x = np.load(DATA)
_t1 = time.perf_counter()
r = pc(x, ci_test="fisherz", alpha=0.05)
edges = int(np.asarray(r.skeleton).sum() // 2)
_t2 = time.perf_counter()
r2 = pc(x[:1500], ci_test="fisherz", alpha=0.05)
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
cg = pc(x, 0.05, "fisherz", True, 0, -1, show_progress=False)
g = cg.G.graph
edges = int(((g != 0) & (g.T != 0)).sum() // 2)
_t2 = time.perf_counter()
print(json.dumps({"import_s": _t1 - _t0, "first_s": _t2 - _t1, "check": edges}))
""",
    },
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
print(json.dumps({"import_s": _t1 - _t0, "first_s": _t2 - _t1, "check": edges}))
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
k = int(r.reject.sum())
_t2 = time.perf_counter()
r2 = benjamini_hochberg(p[:700_000], 0.1)
int(r2.reject.sum())
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
print(json.dumps({"import_s": _t1 - _t0, "first_s": _t2 - _t1, "check": k}))
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
print(json.dumps({"import_s": _t1 - _t0, "first_s": _t2 - _t1, "check": ok}))
""",
    },
    "infer_drift_vdp": {
        "what": "infer_drift (geodesic EM, 4 iterations, 32 particles, 10 steps/interval), Van der Pol, 250 obs, "
                "vs SFI infer_force_linear (KM)",
        "icmlx": _TIMER + """
import numpy as np, jax
from icmlx.sde import infer_drift
obs = np.load(DATA)
ts = np.arange(obs.shape[0]) * 2.0
cfg = dict(num_steps=4, num_particles=32, num_time_steps=10, throw=False)
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
print(json.dumps({"import_s": _t1 - _t0, "first_s": _t2 - _t1, "check": ok}))
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
print(json.dumps({"import_s": _t1 - _t0, "first_s": _t2 - _t1, "check": bool(l1 < l0)}))
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


def _make_data(case: str, folder: Path) -> Path:
    """Write the case's input file (the same file both scripts read) and return its path."""
    rng = np.random.default_rng(0)
    path = folder / f"{case}.npy"
    if case == "pc_chisq_child":
        src = SHARED / "bnlearn_discrete_10000" / "data" / "child.txt"
        if not src.exists():
            raise FileNotFoundError(f"{src} not found (the shared reference data is needed for this case)")
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


def run_case(case: str, folder: Path, pairs: int) -> list[dict]:
    spec = CASES[case]
    data = _make_data(case, folder)
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
        checks = {s: {r["check"] for r in samples[s]} for s in samples}
        ratios = [a["wall_s"] / b["wall_s"] for a, b in zip(samples["icmlx"], samples["peer"])]
        # the icmlx script also makes a second call with a new n (to show that it compiles nothing), which the
        # peer's script does not: this ratio takes that call's in-process time out of icmlx's whole process
        one_call = [(a["wall_s"] - a["second_s"]) / b["wall_s"] for a, b in zip(samples["icmlx"], samples["peer"])
                    if "second_s" in a]

        def med(side, key, samples=samples):
            return statistics.median(r[key] for r in samples[side] if key in r)

        row = {
            "case": case,
            "mode": mode,
            "icmlx_s": round(med("icmlx", "wall_s"), 2),
            "peer_s": round(med("peer", "wall_s"), 2),
            "icmlx/peer": round(statistics.median(ratios), 2),
            "icmlx_one_call/peer": round(statistics.median(one_call), 2) if one_call else None,
            "icmlx_import_s": round(med("icmlx", "import_s"), 2),
            "icmlx_first_call_s": round(med("icmlx", "first_s"), 2),
            "icmlx_second_call_new_n_s": round(med("icmlx", "second_s"), 2) if "second_s" in samples["icmlx"][0]
            else None,
            "icmlx_programs_compiled": med("icmlx", "compiled"),
            "icmlx_programs_first_call": med("icmlx", "programs_first"),
            "icmlx_programs_second_call_new_n": med("icmlx", "programs_second"),
            "icmlx_compile_s": round(med("icmlx", "compile_s"), 2),
            "icmlx_compile_first_call_s": round(med("icmlx", "compile_first_s"), 2),
            "icmlx_compile_second_call_new_n_s": round(med("icmlx", "compile_second_s"), 2),
            "peer_import_s": round(med("peer", "import_s"), 2),
            "peer_call_s": round(med("peer", "first_s"), 2),
            "check_icmlx": sorted(checks["icmlx"]),
            "check_peer": sorted(checks["peer"]),
            "pairs": pairs,
            "what": spec["what"],
        }
        rows.append(row)
        print_table([row], ["case", "mode", "icmlx_s", "peer_s", "icmlx/peer", "icmlx_one_call/peer",
                            "icmlx_first_call_s", "icmlx_second_call_new_n_s", "icmlx_programs_compiled",
                            "icmlx_programs_first_call", "icmlx_programs_second_call_new_n", "icmlx_compile_s",
                            "check_icmlx", "check_peer"])
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 pairs per mode")
    ap.add_argument("--pairs", type=int, default=None)
    ap.add_argument("--cases", nargs="*", default=list(CASES))
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "coldstart.json")
    args = ap.parse_args(argv)
    pairs = args.pairs or (3 if args.quick else 5)
    rows = []
    with tempfile.TemporaryDirectory(prefix="icmlx-coldstart-") as tmp:
        for case in args.cases:
            rows += run_case(case, Path(tmp), pairs)
    print()
    print_table(rows, ["case", "mode", "icmlx_s", "peer_s", "icmlx/peer", "icmlx_one_call/peer", "icmlx_import_s",
                       "icmlx_first_call_s",
                       "icmlx_second_call_new_n_s", "icmlx_programs_compiled", "peer_import_s", "peer_call_s"])
    out = args.out
    out.write_text(json.dumps({"environment": environment(), "rows": rows}, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
