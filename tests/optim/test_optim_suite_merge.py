"""The result-file merge of ``benchmarks/optim_suite.py`` (``--rows`` / ``--optimizers`` reruns), on hand-built
records."""

import sys
from pathlib import Path

import pytest

_BENCHMARKS = str(Path(__file__).resolve().parents[2] / "benchmarks")


def _import_suite():
    """Import ``benchmarks/optim_suite.py`` with the benchmarks' ``_harness``; ``tests/fuzz`` has a module of the
    same name, so whichever ``_harness`` was loaded before is put back afterwards."""
    saved = sys.modules.pop("_harness", None)
    sys.path.insert(0, _BENCHMARKS)
    try:
        return pytest.importorskip("optim_suite")
    finally:
        sys.path.remove(_BENCHMARKS)
        sys.modules.pop("_harness", None)
        if saved is not None:
            sys.modules["_harness"] = saved


optim_suite = _import_suite()

DASH, DS, ADAM = "icmlx DASH (defaults)", "JAX Distributed Shampoo", "optax.adam"
REG, MLP, LM = "regression 64x48 kappa=10", "mlp digits 64-64-10", "char-lm argparse.py (validation loss)"


def _row(problem, optimizer, final, spread=0.0):
    return {"problem": problem, "block": 32, "optimizer": optimizer, "best_lr": 0.1, "final_mean": final,
            "final_min": final - spread, "final_max": final + spread}


def _previous():
    rows = [_row(REG, DASH, 1.0), _row(REG, DS, 2.0), _row(REG, ADAM, 4.0),
            _row(MLP, DASH, 8.0), _row(MLP, DS, 2.0),
            _row(LM, DASH, 3.0), _row(LM, DS, 6.0)]
    return {"benchmark": "optim_suite", "command": "full", "rows": rows, "ratios": [],
            "note": {"kept": True}, "row_runs": {"lm": {"command": "old lm"}}}


def test_partial_rerun_replaces_only_its_rows():
    prev = _previous()
    new = [_row(MLP, DASH, 1.0), _row(MLP, DS, 4.0)]
    info = {"command": "--rows mlp"}
    rec = optim_suite.merge_results(prev, new, info, ["mlp"], complete=False)
    got = [(r["problem"], r["optimizer"], r["final_mean"]) for r in rec["rows"]]
    assert got == [(REG, DASH, 1.0), (REG, DS, 2.0), (REG, ADAM, 4.0), (MLP, DASH, 1.0), (MLP, DS, 4.0),
                   (LM, DASH, 3.0), (LM, DS, 6.0)]
    # the ratios are recomputed from the merged rows: DASH / Shampoo per problem, DASH / Adam where Adam ran
    ratios = {r["problem"]: r for r in rec["ratios"]}
    assert [ratios[p]["dash_over_shampoo"] for p in (REG, MLP, LM)] == [0.5, 0.25, 0.5]
    assert ratios[REG]["dash_over_adam"] == 0.25 and ratios[MLP]["dash_over_adam"] is None
    assert rec["row_runs"] == {"lm": {"command": "old lm"}, "mlp": info}
    assert rec["command"] == "full" and rec["note"] == {"kept": True}
    assert [r["final_mean"] for r in prev["rows"]] == [1.0, 2.0, 4.0, 8.0, 2.0, 3.0, 6.0]  # input not mutated
    assert prev["row_runs"] == {"lm": {"command": "old lm"}}


def test_optimizer_subset_keeps_other_optimizers_of_the_problem():
    rec = optim_suite.merge_results(_previous(), [_row(REG, DASH, 3.0), _row(LM, DASH, 12.0)],
                                    {"command": "--optimizers DASH"}, ["regression", "lm"], complete=False)
    by = {(r["problem"], r["optimizer"]): r["final_mean"] for r in rec["rows"]}
    assert by == {(REG, DASH): 3.0, (REG, DS): 2.0, (REG, ADAM): 4.0, (MLP, DASH): 8.0, (MLP, DS): 2.0,
                  (LM, DASH): 12.0, (LM, DS): 6.0}
    assert {r["problem"]: r["dash_over_shampoo"] for r in rec["ratios"]} == {REG: 1.5, MLP: 4.0, LM: 2.0}


def test_new_problem_is_placed_in_full_run_order_and_empty_file():
    cnn = "cnn digits conv8-conv16-10, 512 images"
    rec = optim_suite.merge_results(_previous(), [_row(cnn, DASH, 1.0)], {}, ["cnn"], complete=False)
    assert [r["problem"] for r in rec["rows"]] == [REG, REG, REG, MLP, MLP, cnn, LM, LM]
    assert all(r["problem"] != cnn for r in rec["ratios"])  # no Shampoo row for it: no ratio
    first = optim_suite.merge_results({"benchmark": "optim_suite"}, [_row(LM, DS, 2.0)], {}, ["lm"],
                                      complete=False)
    assert first["rows"] == [_row(LM, DS, 2.0)] and first["ratios"] == []


def test_complete_run_replaces_the_record():
    new = [_row(REG, DASH, 5.0), _row(REG, DS, 10.0)]
    rec = optim_suite.merge_results(_previous(), new, {"command": "full again"}, list(optim_suite.ROWS),
                                    complete=True)
    assert rec["rows"] == new and rec["command"] == "full again" and "row_runs" not in rec and "note" not in rec
    assert rec["ratios"][0]["dash_over_shampoo"] == 0.5 and rec["ratios"][0]["dash_max_over_shampoo_min"] == 0.5


def test_seeds_must_be_positive(tmp_path, capsys):
    with pytest.raises(SystemExit):
        optim_suite.main(["--seeds", "0", "--out", str(tmp_path / "s.json")])
    assert "--seeds must be at least 1" in capsys.readouterr().err
    assert not (tmp_path / "s.json").exists()
