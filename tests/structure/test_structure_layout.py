"""The layout rules of ``icmlx.structure``: a folder per family (CI tests, the constraint-based search, the
poly-forest learner, graphs and data), a few shared modules at the top, private names kept inside their folder,
and no ``isinstance`` on another folder's strategy classes (CI tests, collider rules, calibrations)."""

from pathlib import Path

import pytest

import icmlx.structure
from _layout_rules import (
    isinstance_on_other_folders_strategies,
    private_imports_across_folders,
    strategy_classes,
    top_level_modules,
)

ROOT = Path(icmlx.structure.__file__).parent
STRATEGY_BASES = {"AbstractCITest", "AbstractColliderRule", "AbstractCalibration"}
FAMILIES = ["_citests", "_search", "_polyforest", "_graphs"]
MAX_TOP_LEVEL_MODULES = 10


def test_no_private_name_imported_from_another_folder():
    bad = private_imports_across_folders(ROOT)
    assert not bad, "\n".join(bad)


def test_strategy_classes_exist():
    found = strategy_classes(ROOT, STRATEGY_BASES)
    for name in ("FisherZ", "ChiSquare", "GSquare", "KCI", "UserCITest", "SepsetColliders", "DefiniteMaxPColliders",
                 "Asymptotic", "Permutation"):
        assert name in found


def test_no_isinstance_on_another_folders_strategy():
    bad = isinstance_on_other_folders_strategies(ROOT, STRATEGY_BASES)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_folder_per_family(family):
    assert (ROOT / family / "__init__.py").is_file()
    assert not (ROOT / f"{family}.py").exists()


def test_few_modules_at_the_top():
    top = top_level_modules(ROOT)
    assert len(top) <= MAX_TOP_LEVEL_MODULES, f"{len(top)} modules directly in icmlx/structure: {top}"


def test_every_module_is_in_a_family_folder_or_at_the_top():
    folders = {p.parent.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.py")}
    assert folders <= {".", *FAMILIES}, sorted(folders - {".", *FAMILIES})
