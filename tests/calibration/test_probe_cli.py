"""calibration/probe_cli.py: the probes' shared command line, without a GPU."""
import pathlib

import pytest

from calibration import probe_cli

DOC = "A probe.\n\nMore text that --help leaves out."


def cli(calls, argv, **kw):
    """A probe whose actions record (name, value) in ``calls``."""
    return probe_cli.probe_main(
        DOC, argv, **kw,
        gpu=probe_cli.action("run it", lambda a: calls.append(("gpu", a.gpu))),
        child=probe_cli.action(probe_cli.HIDDEN, lambda a: calls.append(("child", a.child)) or 3),
        report=probe_cli.table("folder of a --gpu run", lambda a: f"| table of {a.report.name} |"),
        md=probe_cli.setting("with --report: also write the table here"))


def test_child_runs_first_and_its_status_is_returned():
    calls = []
    assert cli(calls, ["--gpu", "g", "--child", "c"]) == 3
    assert calls == [("child", pathlib.Path("c"))]


def test_an_action_returning_none_exits_0():
    calls = []
    assert cli(calls, ["--gpu", "g", "--report", "r"]) == 0
    assert calls == [("gpu", pathlib.Path("g"))]


def test_report_prints_and_writes_md(tmp_path, capsys):
    md = tmp_path / "t.md"
    assert cli([], ["--report", "runs/x", "--md", str(md)]) == 0
    assert capsys.readouterr().out == "| table of x |\n"
    assert md.read_text() == "| table of x |\n"


def test_mkdir_creates_the_folder_before_the_action(tmp_path):
    out = tmp_path / "a" / "b"
    seen = []
    probe_cli.probe_main(DOC, ["--child", str(out)],
                         child=probe_cli.action("x", lambda a: seen.append(a.child.is_dir()),
                                                mkdir=True))
    assert seen == [True]


def test_help_lists_options_in_the_order_named_and_hides_child(capsys):
    with pytest.raises(SystemExit):
        cli([], ["--help"])
    out = capsys.readouterr().out
    assert "A probe." in out and "More text" not in out
    assert "--child" not in out
    assert out.index("--gpu") < out.index("--report") < out.index("--md")


def test_no_action_prints_help_and_returns_2(capsys):
    assert cli([], []) == 2
    assert "--report" in capsys.readouterr().out


def test_no_action_with_usage_error_exits_2_with_the_message(capsys):
    with pytest.raises(SystemExit) as stop:
        cli([], ["--md", "x.md"], usage_error="give --gpu OUT or --report OUT")
    assert stop.value.code == 2
    assert "give --gpu OUT or --report OUT" in capsys.readouterr().err
