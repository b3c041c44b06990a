"""One library, one API: the mechanical parts of CONTRIBUTING.md, checked on every public name.

Each check reads the installed package (signatures via :mod:`inspect`, modules via :mod:`ast`), so a new public
function that reintroduces an old name, a second status enum, a module past the size limit or an import cycle
fails here.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re
from pathlib import Path

import equinox as eqx
import lineax as lx
import pytest

import icmlx

SUBPACKAGES = ["optim", "stats", "structure", "sde", "solvers"]
SRC = Path(icmlx.__file__).resolve().parent

#: Argument names CONTRIBUTING.md replaces, with what replaces them.
FORBIDDEN = {
    "num_iters": "num_steps",
    "max_iters": "max_steps",
    "n_iters": "num_steps",
    "em_steps": "num_em_steps",
    "power_iters": "num_power_steps",
    "tol": "rtol/atol",
    "rng": "key",
    "seed": "key",
    "lr": "learning_rate",
}
COUNT_PREFIX = re.compile(r"^(n|k)_[a-z]")


def _public_callables():
    """(qualified name, callable) for every public function, class constructor and public method."""
    out = []
    for sub in SUBPACKAGES:
        mod = importlib.import_module(f"icmlx.{sub}")
        for name in mod.__all__:
            obj = getattr(mod, name)
            qual = f"icmlx.{sub}.{name}"
            if inspect.isfunction(obj):
                out.append((qual, obj))
            elif inspect.isclass(obj) and not issubclass(obj, eqx.Enumeration):
                out.append((qual, obj))
                for meth_name, meth in vars(obj).items():
                    if meth_name.startswith("_"):
                        continue
                    fn = meth.__func__ if isinstance(meth, classmethod | staticmethod) else meth
                    if inspect.isfunction(fn):
                        out.append((f"{qual}.{meth_name}", fn))
    return out


def _params(obj):
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    return [p for p in sig.parameters.values() if p.name not in ("self", "cls")]


PUBLIC = _public_callables()


def test_one_status_enumeration():
    assert issubclass(icmlx.RESULTS, lx.RESULTS)
    assert repr(icmlx.RESULTS.successful) == "icmlx.RESULTS<successful>"
    for sub in SUBPACKAGES:
        mod = importlib.import_module(f"icmlx.{sub}")
        if hasattr(mod, "RESULTS"):
            assert mod.RESULTS is icmlx.RESULTS, f"icmlx.{sub}.RESULTS is a second enumeration"
    # No module defines another Enumeration.
    offenders = []
    for path in SRC.rglob("*.py"):
        if path.name == "_results.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b) for b in node.bases]
                if any(b.endswith("Enumeration") or b.endswith("RESULTS") for b in bases):
                    offenders.append(f"{path.relative_to(SRC)}:{node.name}")
    assert not offenders, offenders


@pytest.mark.parametrize("qual,obj", PUBLIC, ids=[q for q, _ in PUBLIC])
def test_argument_names(qual, obj):
    bad = []
    for p in _params(obj):
        if p.name in FORBIDDEN:
            bad.append(f"{p.name} (use {FORBIDDEN[p.name]})")
        elif COUNT_PREFIX.match(p.name):
            bad.append(f"{p.name} (counts are num_<things>)")
    assert not bad, f"{qual}: {bad}"


@pytest.mark.parametrize("qual,obj", PUBLIC, ids=[q for q, _ in PUBLIC])
def test_key_first_and_typed(qual, obj):
    params = _params(obj)
    names = [p.name for p in params]
    if "key" not in names:
        return
    p = params[names.index("key")]
    if p.default is inspect.Parameter.empty:
        # A required key comes first (blackjax/jax.random); an optional one (default None) may be keyword-only.
        assert names.index("key") == 0, f"{qual}: key must be the first argument, got {names}"
    assert p.annotation is not inspect.Parameter.empty, f"{qual}: key is not annotated"
    assert "Any" not in str(p.annotation), f"{qual}: key is typed {p.annotation}"


@pytest.mark.parametrize("qual,obj", PUBLIC, ids=[q for q, _ in PUBLIC])
def test_throw_defaults_to_true(qual, obj):
    for p in _params(obj):
        if p.name == "throw":
            assert p.default is True, f"{qual}: throw defaults to {p.default!r}"


@pytest.mark.parametrize("qual,obj", PUBLIC, ids=[q for q, _ in PUBLIC])
def test_progress_follows_the_shared_rule(qual, obj):
    # One rule for progress display (icmlx._progress): ``progress: bool | None = None``, automatic by default.
    for p in _params(obj):
        if p.name == "progress":
            assert p.default is None, f"{qual}: progress defaults to {p.default!r}; use None (automatic)"
        if p.name in ("verbose", "show_progress", "progress_bar"):
            raise AssertionError(f"{qual}: {p.name!r} -> use progress: bool | None = None")


def test_plot_helpers_take_ax_and_do_not_import_matplotlib_at_import():
    helpers = [(q, o) for q, o in PUBLIC if q.rsplit(".", 1)[-1].startswith("plot_")]
    for qual, obj in helpers:
        names = [p.name for p in _params(obj)]
        assert "ax" in names, f"{qual}: plot helpers take ax=None"
    import subprocess
    import sys

    code = (
        "import sys; import icmlx.optim, icmlx.stats, icmlx.structure, icmlx.sde, icmlx.solvers; "
        "bad = [m for m in ('matplotlib', 'networkx', 'pandas') if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_record_suffixes():
    bad = []
    for sub in SUBPACKAGES:
        mod = importlib.import_module(f"icmlx.{sub}")
        for name in mod.__all__:
            obj = getattr(mod, name)
            if not inspect.isclass(obj):
                continue
            if re.search(r"(Info|Inference|EM)$", name):
                bad.append(f"icmlx.{sub}.{name}: suffix")
            if name.endswith("Solution") and not issubclass(obj, icmlx.Solution):
                bad.append(f"icmlx.{sub}.{name}: not an icmlx.Solution")
    assert not bad, bad


def test_solution_shape():
    fields = {f.name for f in dataclasses.fields(icmlx.Solution)}
    assert {"value", "result", "stats"} <= fields


def test_module_sizes():
    big = {
        str(p.relative_to(SRC)): n for p in SRC.rglob("*.py") if (n := len(p.read_text().splitlines())) > 650
    }
    assert not big, f"modules past 650 lines: {big}"


def _imports(path: Path, package: str) -> set[str]:
    """Modules of icmlx that ``path`` imports (at any depth of the file, lazy imports included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                if node.module is None:
                    for alias in node.names:
                        found.add(f"{target}.{alias.name}")
                else:
                    found.add(target)
            elif node.module and node.module.startswith("icmlx"):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("icmlx"):
                    found.add(alias.name)
    return found


def test_no_import_cycles():
    modules = {}
    for p in SRC.rglob("*.py"):
        rel = p.relative_to(SRC.parent).with_suffix("")
        parts = list(rel.parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        name = ".".join(parts)
        modules[name] = (p, name if is_pkg else ".".join(parts[:-1]))
    graph = {}
    for name, (path, package) in modules.items():
        deps = {d for d in _imports(path, package) if d in modules and d != name}
        # A package's __init__ re-exporting its children is not a cycle with them.
        graph[name] = deps
    # Only cycles among plain modules count: a package __init__ re-exports its children by design.
    leaf = {m for m, (p, _) in modules.items() if p.name != "__init__.py"}
    g = {m: {d for d in graph[m] if d in leaf} for m in leaf}
    cycles = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for d in g[m]:
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(g):
        if m not in state:
            visit(m)
    assert not cycles, f"import cycles: {cycles}"


_TIMING = re.compile(
    r"(\d[\d.,]*\s*(ms|µs|us)\b|\b\d[\d.]*\s*s\b(?! *=)|\d[\d.]*\s*[x×]\s*(faster|slower)|~\d[\d.]*\s*[x×]"
    r"|\bsession\b|added by)",
    re.IGNORECASE,
)


def _comment_and_doc_lines(path: Path):
    text = path.read_text()
    lines = text.splitlines()
    doc_lines = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            doc_lines.update(range(node.lineno, node.end_lineno + 1))
    for i, line in enumerate(lines, start=1):
        if i in doc_lines:
            yield i, line
        elif "#" in line:
            yield i, line[line.index("#"):]


def test_few_timings_in_comments_and_docstrings():
    hits = []
    for p in SRC.rglob("*.py"):
        for i, line in _comment_and_doc_lines(p):
            if _TIMING.search(line):
                hits.append(f"{p.relative_to(SRC)}:{i}: {line.strip()}")
    assert len(hits) <= 5, "timings or history in src comments/docstrings:\n" + "\n".join(hits)


def test_as_strategy_accepts_objects_and_shorthands_and_names_the_argument():
    from icmlx._strategy import as_strategy

    class AbstractMode(eqx.Module):
        pass

    class Fast(AbstractMode):
        pass

    fast = Fast()
    assert as_strategy(fast, AbstractMode, {"fast": Fast}, "mode") is fast
    assert isinstance(as_strategy("fast", AbstractMode, {"fast": Fast}, "mode"), Fast)
    with pytest.raises(ValueError, match=r"mode must be a strategy object \(Fast\(\): any AbstractMode\).*mode='slow'"):
        as_strategy("slow", AbstractMode, {"fast": Fast}, "mode")
