"""mkdocs hooks: pages built from the code and from measured results, never typed by hand.

- ``<!-- icmlx:api MODULE -->`` becomes one mkdocstrings entry per name in ``MODULE.__all__``, so a new public
  name appears in the reference without editing the docs (and ``docs/check_site.py`` checks that it did).
- ``<!-- icmlx:benchmarks -->`` becomes one table per ``benchmarks/results/*.json`` with the run's date (the file's
  last commit), machine and library versions.
- ``<!-- icmlx:tour EXAMPLE -->`` becomes the rows of ``benchmarks/results/tour/tour.json`` (written by
  ``python examples/tour.py --quick``) for that example: claim, measured, expected, met.
- The tour's figures (small PNGs in ``benchmarks/results/tour/``) are served as ``assets/<name>.png``, so the
  pages link to them without a second copy under ``docs/``.
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


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, dict)):
        text = json.dumps(value)
        return text if len(text) <= 60 else text[:57] + "..."
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(rows: list[dict]) -> str:
    if not rows:
        return "_(no rows)_"
    cols: list[str] = []
    for row in rows:
        cols += [k for k in row if k not in cols]
    shown = rows[:MAX_ROWS]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_fmt(r.get(c, "")) for c in cols) + " |" for r in shown]
    if len(rows) > MAX_ROWS:
        lines.append(f"\n_{len(rows) - MAX_ROWS} more rows in the JSON file._")
    return "\n".join(lines)


def _date_of(path: Path) -> str:
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%cs", "--", str(path)], cwd=ROOT,
                             capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        out = ""
    return out or datetime.date.fromtimestamp(path.stat().st_mtime).isoformat()


def _benchmarks() -> str:
    parts = []
    for path in sorted(RESULTS.glob("*.json")):
        data = json.loads(path.read_text())
        env = data.get("environment", {})
        machine = (f"{env.get('backend', '?')} backend, {env.get('cpu_count', '?')} CPU cores, "
                   f"{env.get('device_count', '?')} device(s), jax {env.get('jax', '?')}, "
                   f"x64={env.get('x64', '?')}")
        when = env.get("time_utc", "")[:10] or _date_of(path)
        parts.append(f"### `{path.name}`\n\nRun of {when} on {machine}; script "
                     f"`benchmarks/{data.get('benchmark', path.stem.split('_full')[0])}`.\n")
        extras = {k: v for k, v in data.items() if k not in ("environment", "rows", "benchmark")
                  and not isinstance(v, (list, dict))}
        if extras:
            parts.append("Settings: " + ", ".join(f"`{k}` = {_fmt(v)}" for k, v in extras.items()) + "\n")
        parts.append(_table(data.get("rows", [])))
        for key, value in data.items():
            if key != "rows" and isinstance(value, list) and value and isinstance(value[0], dict):
                parts.append(f"\n`{key}`:\n\n" + _table(value))
        parts.append("")
    return "\n".join(parts)


def _tour(example: str) -> str:
    if not TOUR.exists():
        return "_The tour has not been run for these docs yet (`python examples/tour.py --quick`)._"
    data = json.loads(TOUR.read_text())
    rows = [{k: r.get(k) for k in ("claim", "measured", "expected", "ok")} for r in data["rows"]
            if r.get("example") == example]
    head = (f"Measured by `python examples/tour.py --quick` on {data.get('date', '?')} "
            f"({data.get('cpu_count', '?')} CPU cores, {data.get('machine', '?')}).\n\n")
    return head + _table(rows)


def on_files(files, config):
    from mkdocs.structure.files import File

    for png in sorted(TOUR_DIR.glob("*.png")):
        files.append(File.generated(config, f"assets/{png.name}", abs_src_path=str(png)))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    markdown = _API.sub(lambda m: _api_block(m.group(1)), markdown)
    markdown = _TOUR.sub(lambda m: _tour(m.group(1)), markdown)
    if "<!-- icmlx:benchmarks -->" in markdown:
        markdown = markdown.replace("<!-- icmlx:benchmarks -->", _benchmarks())
    return markdown
