"""Rewrite reST markup in Python docstrings as the Markdown the docs site renders.

The API reference is rendered by mkdocstrings, which reads docstrings as Markdown (with ``pymdownx.arithmatex`` for
maths), so reST roles and directives show as raw text. This script rewrites, inside string literals only:

- ``:math:`x``` -> ``$x$``;
- a ``.. math::`` block (content on the directive line and/or indented below it) -> a ``$$ ... $$`` block at the
  directive's indentation. A block whose content uses ``&`` or ``\\\\`` outside an environment (Sphinx wraps those
  in ``split``) is wrapped in ``\\begin{aligned} ... \\end{aligned}``; blank lines separate equations, as in Sphinx;
  directive options (``:label:``, ``:nowrap:``) are dropped;
- cross-reference roles (``:func:``, ``:class:``, ``:meth:``, ``:attr:``, ``:mod:``, ``:data:``, ``:obj:``, ``:exc:``,
  ``:const:``, ``:ref:``, ``:doc:``, with or without a ``py:`` domain) -> inline code; ``~a.b.c`` keeps ``c``.

Usage::

    python scripts/rest_math_to_markdown.py FILE_OR_DIR [...] [--check]

``#:`` comments (which document the attribute below them) get the inline rewrites too.
``--check`` changes nothing and exits 1 when a file would change (listing them). Running it twice is the same as
running it once.
"""

from __future__ import annotations

import argparse
import io
import re
import tokenize
from pathlib import Path

_INLINE_MATH = re.compile(r":math:`([^`]*)`")
_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|attr|mod|data|obj|exc|const|ref|doc|term):`([^`]*)`")
_DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)\.\. math::[ \t]*(?P<rest>.*)$")
_OPTION = re.compile(r"^\s*:[a-z-]+:.*$")
_ENV = re.compile(r"\\begin\{(\w+\*?)\}.*?\\end\{\1\}", re.DOTALL)


def _role(match: re.Match) -> str:
    target = match.group(1).strip()
    text = re.sub(r"\s*<[^>]*>$", "", target) if "<" in target else target  # `text <target>` keeps the text
    if text.startswith("~"):
        text = text[1:].rsplit(".", 1)[-1]
    text = text.lstrip("!")
    return f"``{text}``" if "`" in text else f"`{text}`"


def _inline_math(match: re.Match) -> str:
    return f"${match.group(1).strip()}$"


def _needs_aligned(tex: str, raw: bool) -> bool:
    outside = tex
    while True:
        reduced = _ENV.sub("", outside)
        if reduced == outside:
            break
        outside = reduced
    newline = "\\\\" if raw else "\\\\\\\\"  # TeX's \\ as it is written in a raw / plain literal
    return "&" in outside or newline in outside


def _equations(lines: list[str]) -> list[str]:
    """Content lines (already dedented) -> one TeX string per blank-line-separated equation."""
    out, cur = [], []
    for line in lines:
        if _OPTION.match(line) and not cur:
            continue
        if line.strip():
            cur.append(line.rstrip())
        elif cur:
            out.append("\n".join(cur))
            cur = []
    if cur:
        out.append("\n".join(cur))
    return out


def _display_blocks(text: str, raw: bool) -> str:
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = _DIRECTIVE.match(lines[i])
        if m is None:
            out.append(lines[i])
            i += 1
            continue
        indent = m.group("indent")
        body = [m.group("rest")] if m.group("rest").strip() else []
        i += 1
        block: list[str] = []
        while i < len(lines):
            line = lines[i]
            if line.strip() and len(line) - len(line.lstrip()) <= len(indent):
                break
            block.append(line)
            i += 1
        while block and not block[-1].strip():
            block.pop()
            i -= 1
        depth = min((len(x) - len(x.lstrip()) for x in block if x.strip()), default=0)
        body += [x[depth:] for x in block]
        for eq in _equations(body):
            tex = eq.strip("\n")
            if _needs_aligned(tex, raw):
                slash = "\\" if raw else "\\\\"
                tex = f"{slash}begin{{aligned}}\n{tex}\n{slash}end{{aligned}}"
            out.append(f"{indent}$$")
            out.extend(f"{indent}{x.strip()}" for x in tex.split("\n"))
            out.append(f"{indent}$$")
    return "\n".join(out)


def convert_text(text: str, raw: bool = True) -> str:
    """The Markdown form of one string literal's source text (reST math and cross-reference roles rewritten).

    ``raw``: whether the literal is a raw string (``r\"\"\"...\"\"\"``); in a plain literal an inserted backslash is
    written twice.
    """
    text = _display_blocks(text, raw)
    text = _INLINE_MATH.sub(_inline_math, text)
    return _ROLE.sub(_role, text)


def convert_source(source: str) -> str:
    """``source`` with every string literal's text converted (code outside strings is left as it is)."""
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    edits = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT and tok.string.startswith("#:"):  # documents the attribute below it
            new = _ROLE.sub(_role, _INLINE_MATH.sub(_inline_math, tok.string))
            if new != tok.string:
                begin = starts[tok.start[0] - 1] + tok.start[1]
                edits.append((begin, begin + len(tok.string), new))
            continue
        if tok.type != tokenize.STRING:
            continue
        if ":math:" not in tok.string and ".. math::" not in tok.string and not _ROLE.search(tok.string):
            continue
        begin = starts[tok.start[0] - 1] + tok.start[1]
        end = starts[tok.end[0] - 1] + tok.end[1]
        prefix = re.match(r"[A-Za-z]*", tok.string).group(0).lower()
        edits.append((begin, end, convert_text(tok.string, raw="r" in prefix)))
    for begin, end, new in reversed(edits):
        source = source[:begin] + new + source[end:]
    return source


def _files(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        out += sorted(p.rglob("*.py")) if p.is_dir() else [p]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="Python files or folders (searched for *.py)")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file would change")
    args = parser.parse_args(argv)
    changed = []
    for path in _files(args.paths):
        old = path.read_text()
        new = convert_source(old)
        if new != old:
            changed.append(path)
            if not args.check:
                path.write_text(new)
    verb = "would change" if args.check else "changed"
    print(f"{verb} {len(changed)} file(s)" + "".join(f"\n  {p}" for p in changed))
    return 1 if (args.check and changed) else 0


if __name__ == "__main__":
    raise SystemExit(main())
