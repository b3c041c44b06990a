"""The README's code blocks run as written, in a fresh interpreter, with deprecated names turned into errors.

A README that still shows a renamed argument, or a snippet that no longer runs, fails here. Blocks whose run
takes minutes (a long SDE simulation with EM, a G-RANS solve at FEM scale) are marked slow.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
SLOW_SECTIONS = ("icmlx.sde", "icmlx.solvers")


def _blocks():
    out, section, code = [], "", None
    for line in README.read_text().splitlines():
        if code is not None:
            if line.startswith("```"):
                out.append((section, "\n".join(code) + "\n"))
                code = None
            else:
                code.append(line)
        elif line.startswith("```python"):
            code = []
        elif line.startswith("#"):
            section = line
    return out


BLOCKS = _blocks()


def _params():
    for i, (section, code) in enumerate(BLOCKS):
        marks = [pytest.mark.slow] if any(s in section for s in SLOW_SECTIONS) else []
        name = re.sub(r"[^a-z0-9]+", "_", section.lower()).strip("_")[:40]
        yield pytest.param(code, id=f"{i}_{name}", marks=marks)


def test_readme_has_python_blocks():
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("code", list(_params()))
def test_readme_block_runs(code, tmp_path):
    script = tmp_path / "snippet.py"
    script.write_text(code)
    proc = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning:icmlx", "-W", "error::DeprecationWarning:__main__",
         str(script)],
        capture_output=True, text=True, timeout=900, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
