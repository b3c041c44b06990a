"""Run every fuzz case (slow ones included) and count the outcomes per subpackage.

Usage::

    python tests/fuzz/census.py                    # all tests/fuzz/test_*_fuzz.py modules
    python tests/fuzz/census.py --only structure   # one subpackage
    python tests/fuzz/census.py --json out.json    # also write the per-case outcomes

Each module runs in a worker subprocess that reports one JSON line per case. A case that stalls past its time
limit (a compiled loop that never returns) or kills the worker (out of memory, a crash) is recorded as
``hang_crash`` and the worker restarts after it, so the census always finishes. To count the outcomes of an
older version of the library, run this file with ``PYTHONPATH=<checkout>/src`` ahead of the installed package.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def worker(path: str, skip: int) -> None:
    os.environ.setdefault("ICMLX_CACHE", "0")
    os.environ.setdefault("ICMLX_PROGRESS", "0")
    import warnings

    warnings.simplefilter("ignore")
    import jax

    jax.config.update("jax_numpy_dtype_promotion", "strict")
    from _harness import classify

    cases = _load(Path(path)).CASES
    for i, case in enumerate(cases):
        if i < skip:
            continue
        print(json.dumps({"event": "start", "index": i, "name": case.name, "timeout": case.timeout}), flush=True)
        t0 = time.perf_counter()
        outcome, detail = classify(case)
        print(json.dumps({"event": "done", "index": i, "name": case.name, "outcome": outcome, "detail": detail,
                          "seconds": round(time.perf_counter() - t0, 3)}), flush=True)
    print(json.dumps({"event": "end", "count": len(cases)}), flush=True)


def run_module(path: Path, grace: float) -> list[dict]:
    """All outcomes of one module, restarting the worker after a hang or a crash."""
    records: list[dict] = []
    skip = 0
    while True:
        proc = subprocess.Popen([sys.executable, __file__, "--worker", str(path), "--skip", str(skip)],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        current: dict | None = None
        deadline = [time.monotonic() + 600.0]  # import and collection
        stop = threading.Event()

        def watchdog(proc=proc, deadline=deadline, stop=stop):
            while not stop.wait(0.5):
                if time.monotonic() > deadline[0]:
                    proc.kill()
                    return

        threading.Thread(target=watchdog, daemon=True).start()
        finished = False
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except json.JSONDecodeError:
                continue
            if msg["event"] == "start":
                current = msg
                deadline[0] = time.monotonic() + msg["timeout"] + grace
            elif msg["event"] == "done":
                records.append(msg)
                current = None
                deadline[0] = time.monotonic() + 600.0
            elif msg["event"] == "end":
                finished = True
        proc.wait()
        stop.set()
        if finished:
            return records
        if current is None:  # died outside a case (import error): nothing more to learn from this module
            records.append({"name": f"{path.stem}.<module>", "outcome": "hang_crash",
                            "detail": f"worker exited with {proc.returncode} outside a case"})
            return records
        how = "killed after its time limit" if time.monotonic() > deadline[0] else f"exit code {proc.returncode}"
        records.append({"index": current["index"], "name": current["name"], "outcome": "hang_crash",
                        "detail": f"worker {how}"})
        skip = current["index"] + 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker")
    parser.add_argument("--skip", type=int, default=0)
    parser.add_argument("--only", action="append", help="subpackage(s) to run")
    parser.add_argument("--json", help="write per-case outcomes here")
    parser.add_argument("--grace", type=float, default=30.0, help="seconds past a case's timeout before the kill")
    parser.add_argument("--label", default="", help="a name for this census in the JSON (e.g. a commit)")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.skip)
        return

    from _harness import OUTCOMES

    paths = sorted(HERE.glob("test_*_fuzz.py"))
    if args.only:
        paths = [p for p in paths if p.stem[len("test_"):-len("_fuzz")] in args.only]
    all_records = []
    t0 = time.perf_counter()
    for path in paths:
        t = time.perf_counter()
        recs = run_module(path, args.grace)
        pkg = path.stem[len("test_"):-len("_fuzz")]
        for r in recs:
            r["package"] = pkg
        all_records += recs
        print(f"{pkg}: {len(recs)} cases in {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)

    counts = collections.defaultdict(collections.Counter)
    for r in all_records:
        counts[r["package"]][r["outcome"]] += 1
    header = f"{'subpackage':<11}" + "".join(f"{o:>15}" for o in OUTCOMES) + f"{'total':>8}"
    print(header)
    print("-" * len(header))
    total = collections.Counter()
    for pkg in sorted(counts):
        total.update(counts[pkg])
        print(f"{pkg:<11}" + "".join(f"{counts[pkg][o]:>15}" for o in OUTCOMES) + f"{sum(counts[pkg].values()):>8}")
    print(f"{'all':<11}" + "".join(f"{total[o]:>15}" for o in OUTCOMES) + f"{sum(total.values()):>8}")
    print(f"({time.perf_counter() - t0:.0f} s)")
    bad = [r for r in all_records if r["outcome"] not in ("right", "clear_error")]
    for r in bad:
        print(f"  {r['outcome']:<14} {r['name']}: {r.get('detail', '')[:160]}")
    if args.json:
        Path(args.json).write_text(json.dumps({"label": args.label, "counts": {k: dict(v) for k, v in counts.items()},
                                               "cases": all_records}, indent=1))


if __name__ == "__main__":
    main()
