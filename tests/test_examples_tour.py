"""The committed tour record (``benchmarks/results/tour/tour.json``) and the paper pages built from it agree with
the examples as they are now.

The paper pages show the tour's rows through ``<!-- icmlx:tour EXAMPLE -->`` (``docs/hooks.py``), never typed by
hand, so what a page states is what ``tour.json`` holds. These tests catch a ``tour.json`` that no longer matches:
an example without rows or without a page, rows measured on an older version of the example (the record keeps a
hash of each example's syntax tree, ``examples/tour.py:source_hash``), and a claim recorded as not met.
"""

import ast
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOUR = ROOT / "benchmarks" / "results" / "tour" / "tour.json"
PAGES = ROOT / "docs" / "papers"
RERUN = "python examples/tour.py --quick --only {m} --merge-into benchmarks/results/tour/tour.json"


def _load_tour_module():
    spec = importlib.util.spec_from_file_location("icmlx_examples_tour", ROOT / "examples" / "tour.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tour = _load_tour_module()


def _examples_with_tour() -> list[str]:
    """Example modules that define ``tour`` (read from their source: importing them starts JAX and matplotlib)."""
    out = []
    for path in sorted((ROOT / "examples").glob("*.py")):
        if path.stem == "tour" or path.stem.startswith("_"):
            continue
        tree = ast.parse(path.read_text())
        if any(isinstance(n, ast.FunctionDef) and n.name == "tour" for n in tree.body):
            out.append(path.stem)
    return out


EXAMPLES = _examples_with_tour()
RECORD = json.loads(TOUR.read_text())


def test_every_example_has_rows_and_every_row_an_example():
    ran = {r["example"] for r in RECORD["rows"]}
    assert set(EXAMPLES) <= ran, f"no tour rows for {sorted(set(EXAMPLES) - ran)}: rerun the tour"
    assert ran <= set(EXAMPLES), f"tour rows for examples that no longer exist: {sorted(ran - set(EXAMPLES))}"


@pytest.mark.parametrize("example", EXAMPLES)
def test_paper_page_renders_the_tour_rows_and_figure(example):
    pages = [p for p in PAGES.glob("*.md") if f"<!-- icmlx:tour {example} -->" in p.read_text()]
    assert pages, f"no page under docs/papers/ shows the tour rows of {example} (<!-- icmlx:tour {example} -->)"
    figures = sorted(p.name for p in TOUR.parent.glob(f"{example}*.png"))
    assert figures, f"no figure of {example} in {TOUR.parent.relative_to(ROOT)}"
    for page in pages:
        linked = [name for name in figures if f"assets/{name}" in page.read_text()]
        assert linked, f"{page.relative_to(ROOT)} links none of {figures}"


@pytest.mark.parametrize("example", EXAMPLES)
def test_rows_were_measured_on_the_example_as_it_is(example):
    meta = RECORD.get("examples", {}).get(example)
    if meta is None or "source_sha256" not in meta:
        pytest.xfail(f"{example}'s tour rows predate source hashes in tour.json; rerun: {RERUN.format(m=example)}")
    assert meta["source_sha256"] == tour.source_hash(example), (
        f"examples/{example}.py changed after its tour rows were measured ({meta.get('date')}); "
        f"rerun: {RERUN.format(m=example)}")


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_recorded_claim_is_met(example):
    missed = [r["claim"] for r in RECORD["rows"] if r["example"] == example and r["ok"] is not True]
    assert not missed, f"{example}: claims recorded as not met in tour.json: {missed}"


def test_source_hash_ignores_comments_and_docstrings_but_not_code(tmp_path, monkeypatch):
    code = 'def f():\n    """Doc."""\n    return 1  # one\n'
    (tmp_path / "m.py").write_text(code)
    monkeypatch.setattr(tour, "HERE", tmp_path)
    h = tour.source_hash("m")
    (tmp_path / "m.py").write_text('def f():\n    """Other doc."""\n    # a comment\n    return 1\n')
    assert tour.source_hash("m") == h
    (tmp_path / "m.py").write_text('def f():\n    """Doc."""\n    return 2\n')
    assert tour.source_hash("m") != h


def test_merge_replaces_only_the_examples_run(tmp_path):
    path = tmp_path / "tour.json"
    path.write_text(json.dumps({"date": "old", "machine": "m", "cpu_count": 2, "rows": [
        {"example": "dash_lm", "claim": "a", "ok": True}, {"example": "grans_fem", "claim": "b", "ok": False},
        {"example": "annealing_robustness", "claim": "c", "ok": True}],
        "examples": {"dash_lm": {"date": "old"}}}))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "grans_fem.png").write_bytes(b"png")
    new = {"date": "new", "rows": [{"example": "grans_fem", "claim": "b", "ok": True}],
           "examples": {"grans_fem": {"date": "new", "source_sha256": "x"}}}
    merged = tour.merge_record(new, path, tmp_path / "out")
    assert [(r["example"], r["ok"]) for r in merged["rows"]] == [
        ("annealing_robustness", True), ("dash_lm", True), ("grans_fem", True)]
    assert merged["examples"] == {"dash_lm": {"date": "old"}, "grans_fem": {"date": "new", "source_sha256": "x"},
                                  "annealing_robustness": {"date": "old", "machine": "m, 2 cores"}}
    assert (tmp_path / "grans_fem.png").read_bytes() == b"png"
    assert json.loads(path.read_text()) == merged


def test_summary_table_fits_120_columns():
    rows = [{"example": "polyforest_rates", "claim": "x" * 300, "measured": "y" * 300, "expected": "z",
             "ok": False, "seconds": 12345.6}] + RECORD["rows"]
    table = tour.summary_table(rows)
    assert max(len(line) for line in table.splitlines()) <= 120
    assert len(table.splitlines()) == len(rows) + 3
