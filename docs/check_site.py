"""Check a built site: every public name has a reference entry, and every example figure is in it.

Usage: ``python docs/check_site.py SITE_DIR`` (after ``mkdocs build --strict -d SITE_DIR``). Exits non-zero with the
missing names or figures listed.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

SUBPACKAGES = ["optim", "stats", "structure", "sde", "solvers"]
FIGURES = ["annealing_robustness.png", "dash_lm.png", "relative_belief_abos.png", "polyforest_rates.png",
           "langevin_sparse_vdp.png", "grans_fem.png"]


def main(site: Path) -> int:
    missing = []
    pages = {"icmlx": site / "api" / "icmlx" / "index.html"}
    pages.update({f"icmlx.{s}": site / "api" / s / "index.html" for s in SUBPACKAGES})
    for module, page in pages.items():
        html = page.read_text() if page.exists() else ""
        for name in importlib.import_module(module).__all__:
            if name.startswith("__"):
                continue
            if f'id="{module}.{name}"' not in html:
                missing.append(f"{module}.{name} (no entry in {page.relative_to(site)})")
    for fig in FIGURES:
        if not (site / "assets" / fig).exists():
            missing.append(f"figure assets/{fig}")
    if missing:
        print("missing from the built site:\n  " + "\n  ".join(missing))
        return 1
    print(f"site ok: every public name of {len(pages)} modules and {len(FIGURES)} figures present")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))
