"""The code in the README and on the documentation pages runs as written, with deprecated names as errors.

- README: each ```` ```python ```` block runs alone in a fresh interpreter (they are independent snippets).
- ``docs/**/*.md``: a page's blocks run in order in one fresh interpreter (a guide builds on its earlier blocks).
- A block preceded by ``<!-- slow -->`` runs only with ``-m slow`` (a docs page then runs whole there).
A page that still shows a renamed argument, or a snippet that no longer runs, fails here.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").rglob("*.md"))
SLOW = "<!-- slow -->"


def _blocks(path: Path):
    """(section, code, slow) for each python block of ``path``."""
    out, section, code, slow_next = [], "", None, False
    for line in path.read_text().splitlines():
        if code is not None:
            if line.startswith("```"):
                out.append((section, "\n".join(code) + "\n", slow_next))
                code, slow_next = None, False
            else:
                code.append(line)
        elif line.startswith("```python"):
            code = []
        elif line.strip() == SLOW:
            slow_next = True
        elif line.startswith("#"):
            section = line
    return out


def _run(code: str, cwd: Path):
    script = cwd / "snippet.py"
    script.write_text("import matplotlib\nmatplotlib.use('Agg')\n" + code)
    # The snippets run as a reader runs them: XLA fully optimised (the suite's unoptimised compilation makes the
    # guides' longer loops slower than they compile).
    env = {k: v for k, v in os.environ.items() if k != "JAX_DISABLE_MOST_OPTIMIZATIONS"}
    return subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning:icmlx", "-W", "error::DeprecationWarning:__main__",
         str(script)],
        capture_output=True, text=True, timeout=900, cwd=cwd, env=env,
    )


def _readme_params():
    for i, (section, code, slow) in enumerate(_blocks(README)):
        name = re.sub(r"[^a-z0-9]+", "_", section.lower()).strip("_")[:40]
        yield pytest.param(code, id=f"{i}_{name}", marks=[pytest.mark.slow] if slow else [])


def _docs_params():
    # The default suite runs a page's fast blocks; a page with slow blocks also runs whole under -m slow.
    for page in DOCS:
        blocks = _blocks(page)
        if not blocks:
            continue
        name = str(page.relative_to(ROOT / "docs"))
        fast = [b[1] for b in blocks if not b[2]]
        if fast:
            yield pytest.param("\n".join(fast), id=name)
        if any(b[2] for b in blocks):
            yield pytest.param("\n".join(b[1] for b in blocks), id=name + ":all", marks=[pytest.mark.slow])


def test_readme_has_python_blocks():
    assert len(_blocks(README)) >= 5


@pytest.mark.parametrize("code", list(_readme_params()))
def test_readme_block_runs(code, tmp_path):
    proc = _run(code, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.parametrize("code", list(_docs_params()))
def test_docs_page_runs(code, tmp_path):
    proc = _run(code, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
