"""The layout rules of ``icmlx.solvers``: a folder per family, private names kept inside their folder, and
strategy objects that carry their behaviour (no ``isinstance`` on another folder's strategy classes)."""

from pathlib import Path

import pytest

import icmlx.solvers
from _layout_rules import isinstance_on_other_folders_strategies, private_imports_across_folders, strategy_classes

ROOT = Path(icmlx.solvers.__file__).parent
STRATEGY_BASES = {"AbstractRelaxation", "AbstractSmoother", "AbstractOuterStep", "AbstractStrength", "AbstractCycle"}


def test_no_private_name_imported_from_another_folder():
    bad = private_imports_across_folders(ROOT)
    assert not bad, "\n".join(bad)


def test_strategy_classes_exist():
    found = strategy_classes(ROOT, STRATEGY_BASES)
    for name in ("ChebyshevRelaxation", "JacobiRelaxation", "SymmetricStrength", "ThreeTermStep",
                 "MultilevelSmoother"):
        assert name in found


def test_no_isinstance_on_another_folders_strategy():
    bad = isinstance_on_other_folders_strategies(ROOT, STRATEGY_BASES)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("family", ["_krylov", "_amg", "_grans", "_fem"])
def test_a_folder_per_family(family):
    assert (ROOT / family / "__init__.py").is_file()
    assert not (ROOT / f"{family}.py").exists()


def test_strategy_bases_declare_their_behaviour():
    """Every strategy base (relaxation, strength, cycle, smoother, outer step) declares the method a subclass must
    implement, and every public strategy class implements all of them (no flag-only strategy)."""
    bases = {name: getattr(icmlx.solvers, name) for name in STRATEGY_BASES}
    for name, base in bases.items():
        assert base.__abstractmethods__, f"{name} declares no behaviour"
    for name in icmlx.solvers.__all__:
        obj = getattr(icmlx.solvers, name)
        if isinstance(obj, type) and any(issubclass(obj, b) for b in bases.values()) and name not in bases:
            assert not obj.__abstractmethods__, f"{name} leaves {sorted(obj.__abstractmethods__)} unimplemented"
