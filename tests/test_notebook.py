"""docs/notebooks/coalescing_and_races.ipynb runs end to end and prints what it shows.

The notebook's code cells run in order in one namespace, each written to a file
first (kernels compile from their source files, as Jupyter's cells do through
linecache); every cell's stdout must equal the output stored in the notebook.
No Jupyter needed: the .ipynb is JSON.  After a model change, rewrite the stored
outputs with ``python -m tests.test_notebook`` and read the diff.
"""
import contextlib
import io
import json
import pathlib

NOTEBOOK = pathlib.Path(__file__).resolve().parents[1] / "docs" / "notebooks" / \
    "coalescing_and_races.ipynb"


def run_cells(nb, tmp):
    """Yield (cell, stdout) for every code cell, run in one namespace."""
    namespace = {"__name__": "notebook"}
    for k, cell in enumerate(c for c in nb["cells"] if c["cell_type"] == "code"):
        code = "".join(cell["source"])
        path = pathlib.Path(tmp) / f"cell_{k}.py"
        path.write_text(code)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            exec(compile(code, str(path), "exec"), namespace)
        yield cell, buf.getvalue()


def stored(cell) -> str:
    return "".join("".join(o.get("text", "")) for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream")


def test_notebook_runs_and_prints_its_stored_outputs(tmp_path):
    nb = json.loads(NOTEBOOK.read_text())
    cells = list(run_cells(nb, tmp_path))
    assert len(cells) >= 4
    for k, (cell, out) in enumerate(cells):
        assert out == stored(cell), f"code cell {k + 1}"


def update_notebook():
    import tempfile
    nb = json.loads(NOTEBOOK.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        for cell, out in run_cells(nb, tmp):
            cell["outputs"] = [{"output_type": "stream", "name": "stdout",
                                "text": out.splitlines(keepends=True)}] if out else []
            cell["execution_count"] = None
    NOTEBOOK.write_text(json.dumps(nb, indent=1) + "\n")


if __name__ == "__main__":
    update_notebook()
