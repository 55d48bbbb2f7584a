"""The published GT200 figures: the data file parses, every entry carries a citation and
what was measured, and the loader refuses an entry that breaks the rules."""
import pytest

from validation import gt200_run as G


def test_every_figure_has_a_citation_and_a_status():
    figures = G.load_figures()
    assert len(figures) >= 10
    for f in figures:
        assert len(f["citation"]) > 40, f["id"]
        assert f["status"] in G.STATUSES
        assert ("value" in f) == (f["status"] != "not_found")
    # what the issue lists is there, found or not: Wong, the transpose study, the BPG
    sources = " ".join(f["source"] for f in figures)
    for name in ("Wong", "Transpose", "Best Practices"):
        assert name in sources


@pytest.mark.parametrize("edit, message", [
    ('citation = ""', "lacks citation"),
    ('status = "guessed"', "is not one of"),
    ("value = 1.0\nstatus = \"not_found\"", "a value is given exactly"),
])
def test_a_bad_entry_is_refused(tmp_path, edit, message):
    entry = ('[[figure]]\nid = "x"\nsource = "s"\ncitation = "c"\ncard = "GTX 280"\n'
             'measured = "m"\nunit = "u"\nstatus = "found"\nvalue = 2.0\nreading = "text"\n')
    for line in edit.splitlines():
        key = line.split("=")[0].strip()
        entry = "\n".join(x for x in entry.splitlines() if not x.startswith(key + " ")) + "\n" + line + "\n"
    path = tmp_path / "p.toml"
    path.write_text(entry)
    with pytest.raises(ValueError, match=message):
        G.load_figures(path)


def test_compare_row_range_and_ratio():
    assert G.compare_row({"id": "r", "value": [1, 2], "status": "found"}, (1.0, 1.5))["within"]
    assert not G.compare_row({"id": "r", "value": [1, 2], "status": "found"}, (1.0, 2.5))["within"]
    r = G.compare_row({"id": "v", "value": 100.0, "status": "found"}, 80.0)
    assert r["ratio"] == pytest.approx(0.8) and not r["within"]


def test_knees_find_the_steps():
    rows = [{"x": x, "y": y} for x, y in zip(range(6), [10, 10.5, 20, 20, 20, 5])]
    assert G.knees(rows, "y") == [2, 5]
    assert G.first_at(rows, "y", 20) == 2 and G.first_at(rows, "y", 99) is None


def test_the_gt200_kernels_run_and_transpose_correctly():
    rows = G.transpose_table(64)
    assert all(r["correct"] for r in rows)
    offs = G.offset_curve(1 << 10, [0, 1, 16])
    assert [r["tx_per_halfwarp"] for r in offs] == [1.0, 1.5, 1.0]
    chase = G.chase_curve([1 << 16], 4096, 8)
    assert chase[0]["cycles_per_load"] > 100
