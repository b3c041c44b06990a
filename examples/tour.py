"""Run every icmlx example at quick scale and print one summary table.

Each example module in this folder that defines ``tour(outdir: pathlib.Path) -> list[dict]`` takes part. A row
has the keys ``example``, ``claim``, ``measured``, ``expected`` and ``ok`` (bool). An example whose optional
dependencies are missing is reported as skipped, not as a failure. The exit code is non-zero only when an
example crashes; claims that are not met are results and appear in the table with ``ok = False``.

Usage::

    python examples/tour.py --quick          # the README's demo command (quick is the default)
    python examples/tour.py --only annealing_robustness
"""

from __future__ import annotations

import argparse
import importlib
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


def _modules() -> list[str]:
    found = sorted(p.stem for p in HERE.glob("*.py") if p.stem != "tour" and not p.stem.startswith("_"))
    return [m for m in ORDER if m in found] + [m for m in found if m not in ORDER]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", default=True, help="quick scale (default)")
    parser.add_argument("--only", nargs="*", default=None, help="run only these example modules")
    parser.add_argument("--outdir", type=Path, default=HERE / "out")
    args = parser.parse_args(argv)
    args.outdir.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(HERE))

    rows: list[dict] = []
    failures = 0
    start = time.perf_counter()
    for name in _modules():
        if args.only and name not in args.only:
            continue
        t0 = time.perf_counter()
        try:
            mod = importlib.import_module(name)
        except ImportError as err:
            rows.append({"example": name, "claim": f"skipped: {err}", "measured": "", "expected": "",
                         "ok": "skip", "seconds": 0.0})
            continue
        if not hasattr(mod, "tour"):
            continue
        print(f"== {name}", flush=True)
        try:
            out = mod.tour(args.outdir)
        except Exception:  # keep going: the table says which example broke
            traceback.print_exc()
            failures += 1
            rows.append({"example": name, "claim": "ERROR (traceback above)", "measured": "",
                         "expected": "", "ok": False, "seconds": time.perf_counter() - t0})
            continue
        dt = time.perf_counter() - t0
        print(f"-- {name}: {dt:.1f} s", flush=True)  # per-part time as it happens (the table comes at the end)
        for r in out:
            r.setdefault("example", name)
            r["seconds"] = dt
            rows.append(r)

    cols = ["example", "claim", "measured", "expected", "ok", "seconds"]
    cells = [[(f"{r[c]:.1f}" if c == "seconds" else str(r.get(c, ""))) for c in cols] for r in rows]
    widths = [max(len(c), *(len(x[i]) for x in cells)) if cells else len(c) for i, c in enumerate(cols)]
    print()
    print("icmlx tour — quick scale")
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths)))
    print("  ".join("-" * w for w in widths))
    for x in cells:
        print("  ".join(v.ljust(w) for v, w in zip(x, widths)))
    missed = sum(r.get("ok") is False for r in rows)
    print(f"\n{len(rows) - missed} of {len(rows)} claims met at quick scale ({missed} reported as not met); "
          f"{failures} example(s) crashed")
    print(f"figures in {args.outdir}")
    # The table also goes to tour.json (the documentation's paper pages are built from it and the figures).
    import json
    import platform

    record = {
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "cpu_count": __import__("os").cpu_count(),
        "total_seconds": round(time.perf_counter() - start, 1),
        "rows": [{c: (r.get(c) if isinstance(r.get(c), (bool, int, float)) else str(r.get(c, ""))) for c in cols}
                 for r in rows],
    }
    (args.outdir / "tour.json").write_text(json.dumps(record, indent=1))
    # A claim that is not met is a result, reported above; only a crashing example fails the demo.
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
