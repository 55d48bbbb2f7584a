"""Every Python example in docs/ runs, and its printed output is what the page shows.

A ```python block followed directly by an ```output block is run and its
stdout compared with the output block; blocks of one page share a namespace,
as in a notebook.  Each block is written to a file first, because kernels
are compiled from their source files.
"""
import contextlib
import io
import pathlib
import re

import pytest

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"
BLOCK = re.compile(r"```(python|output)\n(.*?)```", re.S)


def pages():
    return sorted(p for p in DOCS.glob("*.md") if "```python" in p.read_text())


def blocks(page):
    """(code, expected output or None) pairs, in page order."""
    found = BLOCK.findall(page.read_text())
    out = []
    for k, (kind, text) in enumerate(found):
        if kind == "python":
            nxt = found[k + 1] if k + 1 < len(found) else None
            out.append((text, nxt[1] if nxt and nxt[0] == "output" else None))
    return out


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_doc_examples_run_and_print_what_the_page_says(page, tmp_path):
    namespace = {"__name__": f"docs_{page.stem}"}
    for k, (code, expected) in enumerate(blocks(page)):
        path = tmp_path / f"{page.stem}_{k}.py"
        path.write_text(code)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            exec(compile(code, str(path), "exec"), namespace)
        if expected is not None:
            got = "\n".join(line.rstrip() for line in buf.getvalue().strip().splitlines())
            want = "\n".join(line.rstrip() for line in expected.strip().splitlines())
            assert got == want, f"{page.name}, block {k + 1}"


def test_some_pages_have_checked_examples():
    assert any(e is not None for p in pages() for _, e in blocks(p))


ROOT = DOCS.parent
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# A page included into another resolves its links from where it is included:
# simgpu_apps.gpu_tools.validate copies the calibration section into docs/validation.md.
INCLUDED_INTO = {"docs/calibration/calibration-h100-section.md": DOCS}


def relative_links(page):
    """The relative link targets of a Markdown page, code blocks left out."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return [m.group(1).split("#")[0] for m in LINK.finditer(text)
            if not re.match(r"[a-z]+:", m.group(1)) and m.group(1).split("#")[0]]


def test_every_relative_link_resolves():
    """Pages moved between docs/results/, docs/calibration/ and the code's folders keep
    their links: every relative link of every Markdown file in the repository names a
    file or folder that exists."""
    broken = []
    for page in sorted(ROOT.rglob("*.md")):
        rel = page.relative_to(ROOT).as_posix()
        if rel.startswith(".") or "/." in rel:
            continue
        base = INCLUDED_INTO.get(rel, page.parent)
        broken += [f"{rel}: {target}" for target in relative_links(page)
                   if not (base / target).exists()]
    assert broken == [], "broken links:\n" + "\n".join(broken)


def test_the_included_section_is_the_one_validate_copies(tmp_path):
    from simgpu_apps.gpu_tools.validate import CALIBRATION_SECTION
    assert [ROOT / rel for rel in INCLUDED_INTO] == [CALIBRATION_SECTION]
    page = tmp_path / "page.md"
    page.write_text("[a](x.md) [b](https://e.org) [c](#top)\n```\n[d](y.md)\n```\n")
    assert relative_links(page) == ["x.md"]


def update_pages():
    """Rewrite every output block from a fresh run of its code (after a model change):
    python -m tests.test_docs  — then read the diff before committing it."""
    import tempfile
    for page in pages():
        text = page.read_text()
        namespace = {"__name__": f"docs_{page.stem}"}
        with tempfile.TemporaryDirectory() as tmp:
            pieces, pos = [], 0
            found = list(BLOCK.finditer(text))
            for k, m in enumerate(found):
                if m.group(1) != "python":
                    continue
                path = pathlib.Path(tmp) / f"{page.stem}_{k}.py"
                path.write_text(m.group(2))
                buf = io.StringIO()
                with contextlib.redirect_stdout(buf):
                    exec(compile(m.group(2), str(path), "exec"), namespace)
                nxt = found[k + 1] if k + 1 < len(found) else None
                if nxt is not None and nxt.group(1) == "output":
                    pieces.append(text[pos:nxt.start(2)])
                    pieces.append(buf.getvalue().rstrip() + "\n")
                    pos = nxt.end(2)
            pieces.append(text[pos:])
        page.write_text("".join(pieces))


if __name__ == "__main__":
    update_pages()
