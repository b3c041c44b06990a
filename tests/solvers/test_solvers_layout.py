"""The layout rules of ``icmlx.solvers``: a folder per family, private names kept inside their folder, and
strategy objects that carry their behaviour (no ``isinstance`` on another folder's strategy classes)."""

import ast
from pathlib import Path

import pytest

import icmlx.solvers

ROOT = Path(icmlx.solvers.__file__).parent
STRATEGY_BASES = {"AbstractRelaxation", "AbstractSmoother", "AbstractOuterStep", "AbstractStrength", "AbstractCycle"}


def _modules():
    return sorted(ROOT.rglob("*.py"))


def _folder(path: Path) -> Path:
    return path.parent


def _target(path: Path, node: ast.ImportFrom) -> Path | None:
    """The folder (or module) an import refers to, for imports inside ``icmlx`` (relative or absolute)."""
    if node.level:
        base = path.parent
        for _ in range(node.level - 1):
            base = base.parent
    elif node.module and node.module.startswith("icmlx"):
        base = ROOT.parent.parent
    else:
        return None
    for part in (node.module or "").split("."):
        if part:
            base = base / part
    return base


def _defining_folder(module: Path) -> Path:
    return module.parent if module.suffix == ".py" or not module.is_dir() else module


def test_no_private_name_imported_from_another_folder():
    bad = []
    for path in _modules():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            target = _target(path, node)
            if target is None:
                continue
            # the folder that holds the imported module: a package's names belong to the package folder
            folder = target if target.is_dir() else target.parent
            private = [a.name for a in node.names if a.name.startswith("_")]
            if private and folder != _folder(path):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {private} from {node.module}")
    assert not bad, "\n".join(bad)


def _strategy_classes() -> dict[str, Path]:
    """Every class deriving (directly or through another) from a strategy base, with its defining folder."""
    parents: dict[str, tuple[list[str], Path]] = {}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                parents[node.name] = ([getattr(b, "id", getattr(b, "attr", "")) for b in node.bases], path.parent)

    def is_strategy(name, seen=()):
        if name in STRATEGY_BASES:
            return True
        if name not in parents or name in seen:
            return False
        return any(is_strategy(b, (*seen, name)) for b in parents[name][0])

    return {name: folder for name, (_, folder) in parents.items() if is_strategy(name)}


def test_strategy_classes_exist():
    found = _strategy_classes()
    for name in ("ChebyshevRelaxation", "JacobiRelaxation", "SymmetricStrength", "ThreeTermStep",
                 "MultilevelSmoother"):
        assert name in found


def test_no_isinstance_on_another_folders_strategy():
    strategies = _strategy_classes()
    bad = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance"
                    and len(node.args) == 2):
                continue
            spec = node.args[1]
            names = [getattr(e, "id", getattr(e, "attr", None)) for e in
                     (spec.elts if isinstance(spec, ast.Tuple) else [spec])]
            for name in names:
                if name in strategies and strategies[name] != path.parent:
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno} isinstance(..., {name})")
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
