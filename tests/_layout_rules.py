"""The layout rules of a subpackage that keeps a private folder per family (``icmlx.solvers``,
``icmlx.structure``): private names stay inside their folder, and no module switches (``isinstance``) on another
folder's strategy classes. Each function returns the violations as readable lines; the tests assert it is empty.

A module's folder is the directory that holds it; the modules directly in the subpackage form a folder of their
own, so a family folder uses their public names only, as it does another family's.
"""

import ast
from pathlib import Path


def modules(root: Path) -> list[Path]:
    return sorted(root.rglob("*.py"))


def top_level_modules(root: Path) -> list[str]:
    """The modules directly in ``root`` (``__init__.py`` included), by file name."""
    return sorted(p.name for p in root.glob("*.py"))


def _icmlx_dir(root: Path) -> Path:
    """``src/icmlx`` for a subpackage folder ``src/icmlx/<sub>``."""
    return root.parent


def _target(path: Path, node: ast.ImportFrom, root: Path) -> Path | None:
    """The folder or module an import refers to, for imports inside ``icmlx`` (relative or absolute)."""
    if node.level:
        base = path.parent
        for _ in range(node.level - 1):
            base = base.parent
    elif node.module and (node.module == "icmlx" or node.module.startswith("icmlx.")):
        base = _icmlx_dir(root).parent
    else:
        return None
    for part in (node.module or "").split("."):
        if part:
            base = base / part
    return base


def _module_file(base: Path) -> Path:
    """``base`` as a file path: ``pkg/_mod`` -> ``pkg/_mod.py``; a package folder stays itself."""
    return base if base.is_dir() else base.with_suffix(".py")


def private_imports_across_folders(root: Path) -> list[str]:
    """``from <module> import _name`` (or ``import icmlx...._module``) where the imported private name or module
    lives in another folder than the importing module."""
    bad = []
    for path in modules(root):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                target = _target(path, node, root)
                if target is None:
                    continue
                # a package's names (and its submodules) belong to the package folder, a module's to its folder
                folder = target if target.is_dir() else target.parent
                private = [a.name for a in node.names if a.name.startswith("_")]
                if private and folder != path.parent:
                    bad.append(f"{path.relative_to(root)}:{node.lineno} imports {private} from "
                               f"{'.' * node.level}{node.module or ''}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    if parts[0] != "icmlx" or not parts[-1].startswith("_"):
                        continue
                    module = _module_file(_icmlx_dir(root).parent.joinpath(*parts))
                    if module.parent != path.parent:
                        bad.append(f"{path.relative_to(root)}:{node.lineno} imports {alias.name}")
    return bad


def strategy_classes(root: Path, bases: set[str]) -> dict[str, Path]:
    """Every class deriving (directly or through another) from one of ``bases``, with its defining folder."""
    parents: dict[str, tuple[list[str], Path]] = {}
    for path in modules(root):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                parents[node.name] = ([getattr(b, "id", getattr(b, "attr", "")) for b in node.bases], path.parent)

    def is_strategy(name, seen=()):
        if name in bases:
            return True
        if name not in parents or name in seen:
            return False
        return any(is_strategy(b, (*seen, name)) for b in parents[name][0])

    return {name: folder for name, (_, folder) in parents.items() if is_strategy(name)}


def isinstance_on_other_folders_strategies(root: Path, bases: set[str]) -> list[str]:
    """``isinstance(x, C)`` / ``issubclass(x, C)`` where ``C`` is a strategy class of another folder."""
    strategies = strategy_classes(root, bases)
    bad = []
    for path in modules(root):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("isinstance", "issubclass")
                    and len(node.args) == 2):
                continue
            spec = node.args[1]
            elts = spec.elts if isinstance(spec, ast.Tuple) else [spec]
            # ``A | B`` unions as well as tuples
            flat = []
            while elts:
                e = elts.pop()
                if isinstance(e, ast.BinOp) and isinstance(e.op, ast.BitOr):
                    elts += [e.left, e.right]
                else:
                    flat.append(e)
            for name in (getattr(e, "id", getattr(e, "attr", None)) for e in flat):
                if name in strategies and strategies[name] != path.parent:
                    bad.append(f"{path.relative_to(root)}:{node.lineno} {node.func.id}(..., {name})")
    return bad
