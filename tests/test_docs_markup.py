"""The reST -> Markdown docstring conversion (``scripts/rest_math_to_markdown.py``) and the built-site checks of
``docs/check_site.py`` for raw reST and mis-parsed parameter names, on small inputs written out by hand."""

import ast
import importlib.util
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


conv = _load(ROOT / "scripts" / "rest_math_to_markdown.py", "rest_math_to_markdown")
site = _load(ROOT / "docs" / "check_site.py", "check_site")


def test_inline_math_and_roles():
    src = 'def f():\n    r"""Sum :math:`\\sum_i x_i` of :func:`~icmlx.stats.fdr`, see :class:`icmlx.RESULTS`."""\n'
    out = conv.convert_source(src)
    assert out == 'def f():\n    r"""Sum $\\sum_i x_i$ of `fdr`, see `icmlx.RESULTS`."""\n'


def test_display_block_keeps_indent_and_wraps_alignment():
    src = (
        'def f():\n'
        '    r"""Update.\n\n'
        '    .. math::\n\n'
        '        a &= b \\\\\n'
        '        c &= d\n\n'
        '    Then :math:`a`.\n'
        '    """\n'
    )
    out = conv.convert_source(src)
    doc = ast.get_docstring(ast.parse(out).body[0])
    assert doc.splitlines()[2:8] == ["$$", "\\begin{aligned}", "a &= b \\\\", "c &= d", "\\end{aligned}", "$$"]
    assert doc.splitlines()[-1] == "Then $a$."


def test_plain_literal_gets_escaped_backslashes():
    src = 'X = """\n.. math:: x & y \\\\\\\\ z\n"""\n'  # a non-raw literal: TeX's \\ is written \\\\ in the source
    out = conv.convert_source(src)
    assert ast.literal_eval(out.split("=", 1)[1].strip()).split("\n")[1:6] == [
        "$$", "\\begin{aligned}", "x & y \\\\ z", "\\end{aligned}", "$$"]


def test_single_equation_is_not_wrapped_and_options_are_dropped():
    out = conv.convert_text('"""\n  .. math::\n     :label: eq1\n\n     e^{i\\pi} + 1 = 0\n"""')
    assert out == '"""\n  $$\n  e^{i\\pi} + 1 = 0\n  $$\n"""'


def test_code_outside_strings_is_untouched_and_idempotent():
    src = "x = 1  # :math:`y` in a plain comment\n#: the :func:`f` default\nY = 2\n"
    out = conv.convert_source(src)
    assert out == "x = 1  # :math:`y` in a plain comment\n#: the `f` default\nY = 2\n"
    assert conv.convert_source(out) == out


def test_whole_package_converts_to_valid_python(tmp_path):
    shutil.copytree(ROOT / "src" / "icmlx", tmp_path / "icmlx")
    assert conv.main([str(tmp_path / "icmlx")]) == 0
    for path in (tmp_path / "icmlx").rglob("*.py"):
        text = path.read_text()
        ast.parse(text)
        assert ":math:`" not in text and ".. math::" not in text, path
    assert conv.main([str(tmp_path / "icmlx"), "--check"]) == 0


def test_site_check_finds_raw_rest_outside_code_blocks():
    page = ("<p>the :math:<code>x</code> and :func:<code>f</code></p><p>.. math::</p>"
            "<pre><code>:math:`in a code block`</code></pre><p>a ratio 2:1 and <code>a:b</code></p>")
    assert sorted(site.rest_markup(page)) == [".. math::", ":func:", ":math:"]


def test_site_check_finds_misparsed_names_in_name_tables_only():
    row = '<tr class="doc-section-item"><td><code><span title="m.{0}">{0}</span></code></td><td>t</td></tr>'
    table = "<table><thead><tr><th>{}</th><th>Type</th></tr></thead><tbody>{}</tbody></table>"
    page = (table.format("Name", row.format("rows,") + row.format("ok") + row.format("**kwargs"))
            + table.format("Type", row.format("Float[Array, 'n']")))
    assert site.misparsed_rows(page) == ["rows,"]
