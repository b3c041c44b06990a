"""Run every icmlx example at quick scale and print one summary table.

Each example module in this folder that defines ``tour(outdir: pathlib.Path) -> list[dict]`` takes part. A row
has the keys ``example``, ``claim``, ``measured``, ``expected`` and ``ok`` (bool). An example whose optional
dependencies are missing is reported as skipped, not as a failure. The exit code is non-zero only when an
example crashes; claims that are not met are results and appear in the table with ``ok = False``.

Parts run two at a time in worker processes (``--jobs``, default 2 where the machine has two cores or more and JAX
has no GPU or TPU plugin to pick up: processes cannot share a TPU, and each takes most of a GPU's memory): each
part is independent of the others, and on a 2-core machine one part alone leaves the second core mostly idle (its
compilations and host work run on one thread). A part whose claim is a wall-clock comparison (``ALONE``:
``grans_fem``'s speed claim) runs afterwards with nothing beside it; its untimed preparation (problems, first
set-ups, programs compiled ahead of time) is done in this process while the others run. A part's ``seconds`` is
its own wall time, two parts sharing the machine; ``--jobs 1`` runs everything one after the other in this
process, as before.

Usage::

    python examples/tour.py --quick          # the README's demo command (quick is the default)
    python examples/tour.py --only annealing_robustness
    python examples/tour.py --jobs 1         # one part at a time
    python examples/tour.py --only grans_fem --merge-into benchmarks/results/tour/tour.json

``tour.json`` (in ``--outdir``) records every row whole, and per example the date it ran and a hash of the
example's source (its syntax tree, so comments and formatting do not count): ``tests/test_examples_tour.py``
compares that hash with the example as it is now, so rows measured on an older example are caught.
``--merge-into FILE`` replaces the rows (and copies the figures) of the examples just run in the committed record
``FILE`` (the one the documentation's paper pages are built from), leaving the other examples' rows as they were.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib
import json
import shutil
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Order in which examples run; modules not listed are appended alphabetically.
ORDER = [
    "annealing_robustness",
    "dash_lm",
    "relative_belief_abos",
    "polyforest_rates",
    "langevin_sparse",
    "grans_fem",
]


# With --jobs > 1 an example may run as separate parts (``module:function``, each returning rows like ``tour``):
# grans_fem's solves have no timing in their claims, its speed claim compares wall-clock times.
SPLIT = {"grans_fem": ["grans_fem:tour_solves", "grans_fem:tour_speed"]}
# Parts whose claim compares wall-clock times: they run last, alone, never beside another part. Their untimed
# preparation (problems, first set-ups, programs compiled ahead of time) may run here while the others run; the
# part then gets it as ``prepared=``.
ALONE = {"grans_fem:tour_speed"}
PREPARE = {"grans_fem:tour_speed": "tour_speed_prepare"}
# Two at a time, the longest parts start first (so that the short ones fill in behind them).
PARALLEL_ORDER = ["dash_lm", "langevin_sparse", "polyforest_rates", "grans_fem:tour_solves", "annealing_robustness",
                  "relative_belief_abos"]


def source_hash(module: str) -> str:
    """sha256 of an example's syntax tree without docstrings: a change that can move a claim changes it, a comment
    or a reformatting does not."""
    tree = ast.parse((HERE / f"{module}.py").read_text())
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()


def merge_record(record: dict, path: Path, figures_from: Path) -> dict:
    """``record`` (this run) merged into the tour record at ``path``: the examples run here replace their rows,
    metadata and figures; the others keep theirs."""
    old = json.loads(path.read_text()) if path.exists() else {"rows": [], "examples": {}}
    ran = set(record["examples"])
    kept = dict(old.get("examples", {}))
    for r in old.get("rows", []):  # rows from before per-example records: they keep the old run's date and machine
        if r.get("example") not in ran and r.get("example") not in kept:
            kept[r.get("example")] = {"date": old.get("date", "?"),
                                      "machine": f"{old.get('machine', '?')}, {old.get('cpu_count', '?')} cores"}
    order = {m: i for i, m in enumerate(ORDER)}
    rows = [r for r in old.get("rows", []) if r.get("example") not in ran] + record["rows"]
    rows.sort(key=lambda r: order.get(r.get("example"), len(order)))  # stable: claim order kept per example
    # the merged record spans several runs: no single run's total time describes it
    merged = {**{k: v for k, v in old.items() if k != "total_seconds"},
              **{k: v for k, v in record.items() if k not in ("rows", "examples", "total_seconds")}, "rows": rows,
              "examples": {**kept, **record["examples"]}}
    for module in ran:
        for png in figures_from.glob(f"{module}*.png"):
            shutil.copyfile(png, path.parent / png.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(merged, indent=1) + "\n")
    return merged


def _modules() -> list[str]:
    found = sorted(p.stem for p in HERE.glob("*.py") if p.stem != "tour" and not p.stem.startswith("_"))
    return [m for m in ORDER if m in found] + [m for m in found if m not in ORDER]


def _run_part(name: str, outdir: Path, capture: bool = False, prepared=None) -> dict:
    """Import and run one example's ``tour``; its rows, wall seconds, printed output (``capture``) and whether it
    crashed. Runs in this process or in a worker process."""
    import contextlib
    import io

    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    module, _, fn = name.partition(":")
    fn = fn or "tour"
    buf = io.StringIO()
    ctx = (contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf)) if capture else ()
    t0, c0 = time.perf_counter(), time.process_time()
    with contextlib.ExitStack() as stack:
        for c in ctx:
            stack.enter_context(c)
        try:
            mod = importlib.import_module(module)
        except ImportError as err:
            return {"name": name, "rows": [{"example": module, "claim": f"skipped: {err}", "measured": "",
                                            "expected": "", "ok": "skip", "seconds": 0.0}],
                    "seconds": 0.0, "output": buf.getvalue(), "crashed": False, "has_tour": True}
        if not hasattr(mod, fn):
            return {"name": name, "rows": [], "seconds": 0.0, "output": "", "crashed": False, "has_tour": False}
        if not capture:
            print(f"== {name}", flush=True)
        try:
            out = getattr(mod, fn)(outdir) if prepared is None else getattr(mod, fn)(outdir, prepared=prepared)
            crashed = False
        except Exception:  # keep going: the table says which example broke
            traceback.print_exc()
            crashed = True
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    if crashed:
        out = [{"example": module, "claim": "ERROR (traceback above)", "measured": "", "expected": "", "ok": False}]
    for r in out:
        r.setdefault("example", module)
        r["seconds"] = dt
    return {"name": name, "rows": out, "seconds": dt, "cpu_seconds": cpu, "output": buf.getvalue(),
            "crashed": crashed, "has_tour": True}


# The printed summary fits 120 columns: ok, example, claim, measured, seconds, long text cut with "…"
# (tour.json keeps every row whole, with the expected values).
SUMMARY_WIDTHS = {"ok": 4, "example": 20, "claim": 42, "measured": 38, "seconds": 6}


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def summary_table(rows: list[dict]) -> str:
    """The tour's printed table: one line per claim, at most 120 characters wide."""
    def cell(r, c):
        if c == "ok":
            return {True: "yes", False: "NO"}.get(r.get("ok"), str(r.get("ok", "")))
        if c == "seconds":
            return f"{float(r.get('seconds', 0.0)):.0f}"
        return " ".join(str(r.get(c, "")).split())

    cols = list(SUMMARY_WIDTHS)
    lines = ["icmlx tour, quick scale",
             "  ".join(c.ljust(SUMMARY_WIDTHS[c]) if c != "seconds" else "s".rjust(SUMMARY_WIDTHS[c]) for c in cols),
             "  ".join("-" * SUMMARY_WIDTHS[c] for c in cols)]
    for r in rows:
        cells = [_cut(cell(r, c), SUMMARY_WIDTHS[c]) for c in cols]
        lines.append("  ".join(x.rjust(SUMMARY_WIDTHS[c]) if c == "seconds" else x.ljust(SUMMARY_WIDTHS[c])
                               for x, c in zip(cells, cols)).rstrip())
    return "\n".join(lines)


def _report(part: dict, concurrent: bool) -> None:
    if not part["has_tour"]:
        return
    if concurrent:  # a worker's output, printed whole when the part is done
        print(f"== {part['name']} (two parts at a time)", flush=True)
        print(part["output"], end="" if part["output"].endswith("\n") or not part["output"] else "\n")
    if part["seconds"]:  # per-part time as it happens (the table comes at the end); CPU: this process's
        print(f"-- {part['name']}: {part['seconds']:.1f} s (CPU {part['cpu_seconds']:.1f} s)", flush=True)


def _accelerator() -> bool:
    """Whether JAX may pick a GPU or TPU here, asked without starting JAX: processes cannot share a TPU, and each
    would take most of a GPU's memory up front, so the tour then runs one part at a time unless ``--jobs`` says
    otherwise."""
    import importlib.metadata
    import importlib.util
    import os

    platforms = os.environ.get("JAX_PLATFORMS", os.environ.get("JAX_PLATFORM_NAME", ""))
    if platforms and set(platforms.lower().split(",")) <= {"cpu"}:
        return False
    if importlib.util.find_spec("libtpu") is not None:
        return True
    return any(True for _ in importlib.metadata.entry_points(group="jax_plugins"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", default=True, help="quick scale (default)")
    parser.add_argument("--only", nargs="*", default=None, help="run only these example modules")
    parser.add_argument("--outdir", type=Path, default=HERE / "out")
    parser.add_argument("--merge-into", type=Path, default=None,
                        help="also merge this run's rows and figures into this tour.json (e.g. the committed "
                             "benchmarks/results/tour/tour.json)")
    parser.add_argument("--jobs", type=int, default=None,
                        help="parts run at a time in worker processes (default 2 with two or more cores; 1: in order, "
                             "in this process)")
    args = parser.parse_args(argv)
    args.outdir.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(HERE))
    import os

    jobs = args.jobs if args.jobs is not None else (2 if (os.cpu_count() or 1) >= 2 and not _accelerator() else 1)
    if jobs < 1:
        parser.error(f"--jobs must be a positive integer, got {jobs}")
    names = [m for m in _modules() if not args.only or m in args.only]
    if jobs > 1:
        names = [p for m in names for p in SPLIT.get(m, [m])]
    side = [m for m in names if m not in ALONE]
    if jobs == 1 or len(side) < 2:
        side = []
        names = [m for m in _modules() if not args.only or m in args.only]
    side = sorted(side, key=lambda m: PARALLEL_ORDER.index(m) if m in PARALLEL_ORDER else len(PARALLEL_ORDER))

    rows: list[dict] = []
    failures = 0
    start = time.perf_counter()
    parts: dict[str, dict] = {}
    prepared: dict[str, object] = {}
    if side:
        import concurrent.futures
        import multiprocessing

        # fresh interpreters (spawn): a forked copy of a process that has started JAX's threads is not safe
        ctx = multiprocessing.get_context("spawn")
        later = [m for m in names if m not in side]
        print(f"running {len(side)} parts {jobs} at a time (each part's output when it is done)"
              + (f", then {', '.join(later)} alone" if later else ""), flush=True)
        with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            futures = {pool.submit(_run_part, m, args.outdir, True): m for m in side}
            # JAX started here before any example is imported, as when earlier parts ran in this process (an
            # example's import-time thread settings then apply to its own script only, as in the one-process tour)
            import jax

            jax.devices()
            for m in names:  # the alone parts' untimed preparation, while the workers run
                if m in PREPARE:
                    module = m.partition(":")[0]
                    try:
                        prepared[m] = getattr(importlib.import_module(module), PREPARE[m])(args.outdir)
                    except Exception:  # the part prepares itself again when it runs
                        traceback.print_exc()
            for fut in concurrent.futures.as_completed(futures):
                try:
                    part = fut.result()
                except Exception as err:  # the worker process itself died (e.g. killed for memory)
                    m = futures[fut]
                    part = {"name": m, "rows": [{"example": m.partition(":")[0], "claim": f"ERROR (worker: {err!r})",
                                                 "measured": "", "expected": "", "ok": False, "seconds": 0.0}],
                            "seconds": 0.0, "cpu_seconds": 0.0, "output": "", "crashed": True, "has_tour": True}
                parts[part["name"]] = part
                _report(part, concurrent=True)
    for name in names:  # the rest in this process, one at a time
        if name not in parts:
            parts[name] = _run_part(name, args.outdir, prepared=prepared.get(name))
            _report(parts[name], concurrent=False)
    for name in names:  # the table in the tour's order
        failures += parts[name]["crashed"]
        rows += parts[name]["rows"]

    cols = ["example", "claim", "measured", "expected", "ok", "seconds"]
    print()
    print(summary_table(rows))
    missed = sum(r.get("ok") is False for r in rows)
    print(f"\n{len(rows) - missed} of {len(rows)} claims met at quick scale ({missed} reported as not met); "
          f"{failures} example(s) crashed")
    print(f"figures in {args.outdir}; every row in full (claim, measured, expected) in {args.outdir / 'tour.json'}")
    # The table also goes to tour.json (the documentation's paper pages are built from it and the figures).
    import platform

    record = {
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "cpu_count": os.cpu_count(),
        "jobs": jobs,
        "total_seconds": round(time.perf_counter() - start, 1),
        "rows": [{c: (r.get(c) if isinstance(r.get(c), (bool, int, float)) else str(r.get(c, ""))) for c in cols}
                 for r in rows],
        "examples": {m: {"date": time.strftime("%Y-%m-%d", time.gmtime()), "source_sha256": source_hash(m),
                         "machine": f"{platform.machine()}, {os.cpu_count()} cores",
                         "seconds": round(sum(r.get("seconds", 0.0) for r in rows if r.get("example") == m
                                              ) / max(1, sum(r.get("example") == m for r in rows)), 1)}
                     for m in dict.fromkeys(r.get("example") for r in rows) if (HERE / f"{m}.py").exists()},
    }
    (args.outdir / "tour.json").write_text(json.dumps(record, indent=1) + "\n")
    if args.merge_into is not None:
        merge_record(record, args.merge_into, args.outdir)
        print(f"merged into {args.merge_into}")
    # A claim that is not met is a result, reported above; only a crashing example fails the demo.
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
