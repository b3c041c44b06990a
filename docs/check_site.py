"""Check a built site: every public name has a reference entry, every example figure is in it, no page shows raw
reST markup (``:math:``, ``.. math::``, ``:func:`` and the other roles and directives: the site renders Markdown,
so these show as text), and no parameter or attribute row of the API reference was mis-parsed (a name holding a
comma or a space, as ``rows, cols: ...`` in a Google-style section gives).

Usage: ``python docs/check_site.py SITE_DIR`` (after ``mkdocs build --strict -d SITE_DIR``). Exits non-zero with the
missing names or figures listed.
"""

from __future__ import annotations

import html as html_lib
import importlib
import re
import sys
from pathlib import Path

SUBPACKAGES = ["optim", "stats", "structure", "sde", "solvers"]
FIGURES = ["annealing_robustness.png", "dash_lm.png", "relative_belief_abos.png", "polyforest_rates.png",
           "langevin_sparse_vdp.png", "grans_fem.png", "sde_scale.png", "stats_scale.png",
           "scaling_structure.png", "scaling_solvers.png"]


_PRE = re.compile(r"<pre\b.*?</pre>", re.DOTALL)
_TAG = re.compile(r"<[^>]+>")
# a role is a name between colons directly followed by the backquoted text (rendered as <code>, or left as `)
_ROLE = re.compile(r"(?<![\w:]):(?:py:)?(math|func|class|meth|attr|mod|data|obj|exc|const|ref|doc|term|cite):"
                   r"(?=<code>|`)")
_DIRECTIVE = re.compile(r"(?:^|\s)\.\. ([a-z][a-z-]*)::")
_TABLE = re.compile(r"<table\b.*?</table>", re.DOTALL)
_HEAD = re.compile(r"<th\b[^>]*>(.*?)</th>", re.DOTALL)
_NAME_CELL = re.compile(r'<tr class="doc-section-item">\s*<td>\s*<code>(.*?)</code>\s*</td>', re.DOTALL)


def rest_markup(page_html: str) -> list[str]:
    """The raw reST roles and directives on a built page (code blocks excluded), e.g. ``[":math:", ".. math::"]``."""
    body = _PRE.sub("", page_html)
    found = [f":{m.group(1)}:" for m in _ROLE.finditer(body)]
    found += [f".. {m.group(1)}::" for m in _DIRECTIVE.finditer(html_lib.unescape(_TAG.sub(" ", body)))]
    return found


def misparsed_rows(page_html: str) -> list[str]:
    """Names in the parameter/attribute tables of a built page that are not one identifier (``rows,``)."""
    bad = []
    for table in _TABLE.findall(page_html):
        heads = [_TAG.sub("", h).strip() for h in _HEAD.findall(table)]
        if not heads or heads[0] != "Name":  # Parameters / Attributes tables; Returns and Raises start with Type
            continue
        names = (html_lib.unescape(_TAG.sub("", m.group(1))).strip() for m in _NAME_CELL.finditer(table))
        bad += [n for n in names if not re.fullmatch(r"\*{0,2}[\w.]+", n)]
    return bad


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
    for page in sorted(site.rglob("*.html")):
        text = page.read_text(errors="replace")
        roles = rest_markup(text)
        if roles:
            counts = {r: roles.count(r) for r in sorted(set(roles))}
            where = page.relative_to(site)
            missing.append(f"raw reST on {where}: " + ", ".join(f"{r} x{n}" for r, n in counts.items()))
        rows = misparsed_rows(text)
        if rows:
            missing.append(f"mis-parsed parameter/attribute names on {page.relative_to(site)}: {rows}")
    for fig in FIGURES:
        if not (site / "assets" / fig).exists():
            missing.append(f"figure assets/{fig}")
    if missing:
        print("site check failed:\n  " + "\n  ".join(missing))
        return 1
    print(f"site ok: every public name of {len(pages)} modules and {len(FIGURES)} figures present; no raw reST, "
          "no mis-parsed names")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))
