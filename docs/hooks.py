"""mkdocs hooks: pages built from the code and from measured results, never typed by hand.

- ``<!-- icmlx:api MODULE -->`` becomes one mkdocstrings entry per name in ``MODULE.__all__``, so a new public
  name appears in the reference without editing the docs (and ``docs/check_site.py`` checks that it did).
- ``<!-- icmlx:benchmarks -->`` becomes one summary table (each peer comparison's headline ratio and the date it was
  measured, from ``HEADLINES``), then the details: per ``benchmarks/results/<script>.json`` (and per part of it) the
  command, date and machine, and its rows in tables narrow enough to read on the page.
- ``<!-- icmlx:tour EXAMPLE -->`` becomes the rows of ``benchmarks/results/tour/tour.json`` (written by
  ``python examples/tour.py --quick``) for that example: claim, measured, expected, met.
- The tour's figures (small PNGs in ``benchmarks/results/tour/``) and the benchmarks' figures
  (``benchmarks/results/<script>.png``) are served as ``assets/<name>.png``, so the pages link to them without a
  second copy under ``docs/``.
"""

from __future__ import annotations

import datetime
import importlib
import json
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
TOUR_DIR = ROOT / "benchmarks" / "results" / "tour"  # the figures and table of the latest committed tour run
TOUR = TOUR_DIR / "tour.json"
MAX_ROWS = 40

_API = re.compile(r"<!-- icmlx:api ([\w.]+) -->")
_TOUR = re.compile(r"<!-- icmlx:tour (\w+) -->")


def _api_block(module: str) -> str:
    mod = importlib.import_module(module)
    names = [n for n in mod.__all__ if not n.startswith("__")]
    return "\n\n".join(f"::: {module}.{name}" for name in names)


MAX_COLUMNS = 7  # columns per detail table: wider rows are split into several tables sharing their key columns
MAX_WIDTH = 140  # characters of a table line (about the page's width)
MAX_CELL = 36  # characters of a text cell before it is cut
# columns that identify a row, repeated in each table a wide record is split into (in this order)
KEY_COLUMNS = ("case", "problem", "equation", "class", "tau", "p", "tau2", "n", "seed", "mode", "optimizer", "solver",
               "method", "variant", "rule", "schedule", "library", "block_size", "block", "freq")


def _fmt(value) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, (list, dict)):
        text = json.dumps(value)
        return text if len(text) <= MAX_CELL else text[: MAX_CELL - 3] + "..."
    text = str(value).replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 3] + "..."


def _grid(rows: list[dict], cols: list[str], cut: bool = True) -> str:
    def cell(v):
        return _fmt(v) if cut else str(v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(c.replace("|", "\\|") for c in cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(r.get(c, "")) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


def _table(rows: list[dict]) -> str:
    """Rows as Markdown tables of at most ``MAX_COLUMNS`` columns; nested values stay in the JSON file."""
    if not rows:
        return "_(no rows)_"
    cols: list[str] = []
    for row in rows:
        cols += [k for k in row if k not in cols and not isinstance(row[k], (list, dict))]
    shown = rows[:MAX_ROWS]
    constant = {c: shown[0].get(c) for c in cols
                if len(shown) > 1 and all(c in r and r[c] == shown[0][c] for r in shown)}
    cols = [c for c in cols if c not in constant]
    keys = [c for c in KEY_COLUMNS if c in cols][:4] or cols[:1]
    rest = [c for c in cols if c not in keys]

    def width(c):
        return max(len(c), *(len(_fmt(r.get(c, ""))) for r in shown)) + 3

    chunks: list[list[str]] = []
    budget = MAX_WIDTH - sum(width(c) for c in keys)
    for c in rest:
        if chunks and len(keys) + len(chunks[-1]) < MAX_COLUMNS and sum(map(width, chunks[-1])) + width(c) <= budget:
            chunks[-1].append(c)
        else:
            chunks.append([c])
    chunks = chunks or [[]]
    out = "\n\n".join(_grid(shown, keys + chunk) for chunk in chunks)
    if constant:
        out = "In every row: " + ", ".join(f"`{k}` = {_fmt(v)}" for k, v in constant.items()) + ".\n\n" + out
    if len(rows) > MAX_ROWS:
        out += f"\n\n_{len(rows) - MAX_ROWS} more rows in the JSON file._"
    return out


def _date_of(path: Path) -> str:
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%cs", "--", str(path)], cwd=ROOT,
                             capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        out = ""
    return out or datetime.date.fromtimestamp(path.stat().st_mtime).isoformat()


def _records(path: Path) -> list[tuple[str | None, dict]]:
    """``(part, record)`` for each measurement in a results file (one, or one per part)."""
    data = json.loads(path.read_text())
    if "parts" in data:
        return list(data["parts"].items())
    return [(None, data)]


def _record(script: str, part: str | None = None) -> dict:
    path = RESULTS / f"{script}.json"
    if not path.exists():
        return {}
    return dict(_records(path)).get(part, {})


def _when(record: dict) -> str:
    env = record.get("environment", {})
    return env.get("date") or env.get("time_utc", "")[:10] or "?"


def _row(record: dict, **match) -> dict:
    for row in record.get("rows", []):
        if all(row.get(k) == v for k, v in match.items()):
            return row
    return {}


def _ratio(num, den) -> float | None:
    try:
        value = float(num) / float(den)
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    return value if value == value else None


def _suite_ratio(record: dict, problem: str):
    """DASH's mean final loss over Distributed Shampoo's on one problem of `optim_suite`."""
    return _row({"rows": record.get("ratios", [])}, problem=problem).get("dash_over_shampoo")


# Headline of each peer comparison: (script, part, what, compared with, ratio(record) -> peer / icmlx).
# A ratio above 1 means icmlx is faster (or, where the line says so, more accurate).
HEADLINES = [
    ("structure_pc", None, "PC χ², bnlearn child (n = 10⁴), identical CPDAG", "causal-learn `pc`",
     lambda r: _row(r, case="child").get("speedup")),
    ("structure_pc", None, "PC Fisher-z, ER d = 100, n = 2,000, identical CPDAG", "causal-learn `pc`",
     lambda r: _row(r, case="ER d=100").get("speedup")),
    ("structure_pc", None, "`pc_tree`, poly-tree d = 200, n = 2,000", "causal-learn `pc`",
     lambda r: _ratio(_row(r, case="polytree d=200").get("causal_learn_s"),
                      _row(r, case="polytree d=200").get("icmlx_s"))),
    ("coldstart", None, "one-shot script: PC χ² on child, empty compilation cache", "causal-learn `pc`",
     lambda r: _ratio(1.0, _row(r, case="pc_chisq_child", mode="cold").get("icmlx/peer"))),
    ("coldstart", None, "one-shot script: BH on 10⁶ p-values, warm cache", "statsmodels `multipletests`",
     lambda r: _ratio(1.0, _row(r, case="bh_1e6", mode="warm").get("icmlx/peer"))),
    ("coldstart", None, "one-shot script: `infer_drift` (Van der Pol), warm cache", "StochasticForceInference",
     lambda r: _ratio(1.0, _row(r, case="infer_drift_vdp", mode="warm").get("icmlx/peer"))),
    ("coldstart", None, "one-shot script: DASH training start, empty cache", "`optax.adam`",
     lambda r: _ratio(1.0, _row(r, case="dash_start", mode="cold").get("icmlx/peer"))),
    ("coldstart", None, "one-shot script: `solve` on 128² Poisson, warm cache", "PyAMG SA+CG",
     lambda r: _ratio(1.0, _row(r, case="solve_sa_poisson", mode="warm").get("icmlx/peer"))),
    ("stats_throughput", None, "BH on 10⁷ p-values, identical decisions", "statsmodels `fdr_bh`",
     lambda r: _row(r, n=10_000_000, method="BH (bucket, default)").get("ratio")),
    ("stats_throughput", None, "Bonferroni on 10⁷ p-values, identical decisions", "statsmodels `bonferroni`",
     lambda r: _row(r, n=10_000_000, method="Bonferroni").get("ratio")),
    ("dash_vs_shampoo", "step", "DASH step, d = 128, roots every step (paired median)", "JAX Distributed Shampoo",
     lambda r: next((x["median"] for x in r.get("paired_ratios", []) if x.get("freq") == 1), None)),
    ("dash_step", "shampoo_small", "DASH step, d = 256, roots every step (paired median)", "JAX Distributed Shampoo",
     lambda r: next((x["median"] for x in r.get("paired_ratios", []) if x.get("freq") == 1), None)),
    ("dash_step", "step", "DASH stacked Newton–DB roots, every step (paired median)", "per-block `eigh` loop",
     lambda r: next((x["median"] for x in r.get("paired_ratios", [])
                     if x.get("freq") == 1 and x.get("ratio", "").startswith("loop eigh")), None)),
    ("optim_schedules", None, "misspecification sweep, T = 4096, 512 replicates", "loop of optax scans",
     lambda r: next((x.get("ratio_optax/icmlx") for x in r.get("rows", []) if "T" in x), None)),
    ("sde_inference", None, "drift error (wRMSE) at τ = 2.8, Van der Pol: accuracy", "SFI `infer_force`",
     lambda r: _ratio(next((x["wrmse"] for x in r.get("rows", []) if x.get("tau") == 2.8
                            and x.get("method", "").startswith("SFI infer_force (")), None),
                      next((x["wrmse"] for x in r.get("rows", []) if x.get("tau") == 2.8
                            and "geodesic" in x.get("method", "")), None))),
    ("sde_scale", "full", "`estimate_diffusion`, 10⁷ increments, one call (compilation included)",
     "SFI `compute_diffusion_constant`",
     lambda r: _ratio(_row(r, case="diffusion", lib="SFI", intervals=10_000_000).get("first_s"),
                      _row(r, case="diffusion", lib="icmlx", intervals=10_000_000).get("first_s"))),
    ("sde_scale", "full", "drift error (wRMSE), 10⁶ intervals at τ = 0.5, σ known: accuracy",
     "SFI `infer_force_linear`",
     lambda r: _ratio(_row(r, case="drift_known", lib="SFI", intervals=1_000_000).get("wrmse"),
                      _row(r, case="drift_known", lib="icmlx", intervals=1_000_000).get("wrmse"))),
    ("stats_multipletests", None, "`multipletests` Holm on 10⁶ p-values, steady state", "statsmodels `multipletests`",
     lambda r: _row(r, method="holm", n=1_000_000).get("ratio_steady")),
    ("stats_multipletests", None, "`multipletests` BH on 10⁶ p-values, steady state", "statsmodels `multipletests`",
     lambda r: _row(r, method="fdr_bh", n=1_000_000).get("ratio_steady")),
    ("structure_scale", None, "PC Fisher-z, sparse DAG d = 100, n = 2,000, identical CPDAG", "causal-learn `pc`",
     lambda r: _row(r, d=100).get("speedup")),
    ("optim_suite", None, "DASH defaults, final loss, regression 96×64, κ = 100 (accuracy)",
     "JAX Distributed Shampoo", lambda r: _ratio(1.0, _suite_ratio(r, "regression 96x64 kappa=100"))),
    ("optim_suite", None, "DASH defaults, final loss, MLP on digits (accuracy)", "JAX Distributed Shampoo",
     lambda r: _ratio(1.0, _suite_ratio(r, "mlp digits 64-64-10"))),
    ("solvers_amg", "quick", "`solve(A, b)` to 1e-8, Poisson n = 65,536, set-up included", "PyAMG SA+CG",
     lambda r: _ratio(_row(r, solver="PyAMG SA+CG", problem="poisson", n=65536).get("total"),
                      _row(r, solver="icmlx solve (SA+CG)", problem="poisson", n=65536).get("total"))),
    ("solvers_amg", "quick", "`solve(A, b)` to 1e-8, anisotropic n = 65,536, set-up included", "PyAMG SA+CG",
     lambda r: _ratio(_row(r, solver="PyAMG SA+CG", problem="aniso", n=65536).get("total"),
                      _row(r, solver="icmlx solve (SA+CG)", problem="aniso", n=65536).get("total"))),
    ("solvers_amg", "poisson_1m", "`solve(A, b)` to 1e-8, Poisson n = 1,048,576", "PyAMG SA+CG",
     lambda r: _ratio(_row(r, solver="PyAMG SA+CG").get("total"), _row(r, solver="icmlx solve (SA+CG)").get("total"))),
    ("solvers_fem", "n65k_default", "G-RANS (default), P1 Poisson n = 65,025, set-up included",
     "JAX CG+Jacobi (ELL)",
     lambda r: _ratio(_row(r, equation="poisson", solver="JAX CG+Jacobi (ELL)").get("time_s"),
                      _row(r, equation="poisson", solver="G-RANS").get("time_s"))),
]


def _summary() -> str:
    lines = ["| benchmark | compared with | ratio | measured |", "|---|---|---|---|"]
    for script, part, what, peer, ratio_of in HEADLINES:
        record = _record(script, part)
        if not record:
            continue
        try:
            ratio = ratio_of(record)
        except (KeyError, TypeError, ValueError):
            ratio = None
        shown = "–" if ratio is None else f"**{float(ratio):.2f}×**" if ratio >= 0.01 else f"**{float(ratio):.2g}×**"
        anchor = script if part is None else f"{script}-{part}"
        lines.append(f"| [{what}](#{anchor}) | {peer} | {shown} | {_when(record)} |")
    return "\n".join(lines)


def _details() -> str:
    parts = []
    for path in sorted(RESULTS.glob("*.json")):
        parts.append(f"### {path.stem}\n\nScript `benchmarks/{path.stem}.py`; file `benchmarks/results/{path.name}`.\n")
        for part, record in _records(path):
            env = record.get("environment", {})
            if part is not None:
                parts.append(f"#### {path.stem}: {part}\n")
            machine = env.get("machine") or (f"{env.get('cpu_count', '?')} cores, {env.get('backend', '?')} "
                                             "backend")
            versions = ", ".join(f"{k} {env[k]}" for k in ("icmlx", "jax", "numpy", "python") if k in env)
            parts.append(f"Measured {_when(record) if env else _date_of(path)} on {machine}"
                         f"{'; ' + versions if versions else ''}.\n")
            if env.get("command"):
                parts.append(f"```\n{env['command']}\n```\n")
            extras = {k: v for k, v in record.items() if k not in ("environment", "rows", "benchmark")
                      and not isinstance(v, (list, dict))}
            if extras:
                parts.append("Settings: " + ", ".join(f"`{k}` = {_fmt(v)}" for k, v in extras.items()) + "\n")
            parts.append(_table(record.get("rows", [])))
            for key, value in record.items():
                if key != "rows" and isinstance(value, list) and value and isinstance(value[0], dict):
                    parts.append(f"\n`{key}`:\n\n" + _table(value))
            parts.append("")
    return "\n".join(parts)


def _benchmarks() -> str:
    return ("## Summary\n\nEach peer comparison's headline ratio, peer time / icmlx time (above 1: icmlx is faster; "
            "the drift line compares errors). Details and the commands follow.\n\n" + _summary()
            + "\n\n## Details\n\n" + _details())


def _tour(example: str) -> str:
    if not TOUR.exists():
        return "_The tour has not been run for these docs yet (`python examples/tour.py --quick`)._"
    data = json.loads(TOUR.read_text())
    rows = [{k: r.get(k) for k in ("claim", "measured", "expected", "ok")} for r in data["rows"]
            if r.get("example") == example]
    meta = data.get("examples", {}).get(example, {})
    date = meta.get("date", data.get("date", "?"))
    machine = meta.get("machine") or f"{data.get('cpu_count', '?')} CPU cores, {data.get('machine', '?')}"
    head = f"Measured by `python examples/tour.py --quick` on {date} ({machine}).\n\n"
    return head + (_grid(rows, ["claim", "measured", "expected", "ok"], cut=False) if rows else "_(no rows)_")


def on_files(files, config):
    from mkdocs.structure.files import File

    for png in sorted(TOUR_DIR.glob("*.png")) + sorted(RESULTS.glob("*.png")):
        files.append(File.generated(config, f"assets/{png.name}", abs_src_path=str(png)))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    markdown = _API.sub(lambda m: _api_block(m.group(1)), markdown)
    markdown = _TOUR.sub(lambda m: _tour(m.group(1)), markdown)
    if "<!-- icmlx:benchmarks -->" in markdown:
        markdown = markdown.replace("<!-- icmlx:benchmarks -->", _benchmarks())
    return markdown
