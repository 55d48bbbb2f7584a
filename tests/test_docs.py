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
