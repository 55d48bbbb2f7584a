"""The command line most probes share, built in one place.

A probe's ``main`` names its options in the order its ``--help`` lists them, e.g.::

    return probe_cli.probe_main(__doc__, argv,
        gpu=probe_cli.action("run the probe under ncu, files to here", lambda a: gpu(a.gpu)),
        child=probe_cli.action(probe_cli.HIDDEN, lambda a: child(a.child)),
        report=probe_cli.table("folder of a --gpu run", lambda a: report(a.report)),
        md=probe_cli.setting("with --report: also write the table here"))

``--gpu DIR`` runs the probe (usually under ncu) with its files to DIR, the hidden
``--child DIR`` is the process ncu runs, ``--report DIR`` prints the tables of a
``--gpu`` run and ``--md FILE`` also writes them there.  Of the actions given, ``--child``
runs first (the process under ncu must do nothing else), then the others in the order
named.  With none given, the probe's help (or its ``usage_error``) and exit status 2.
"""
from __future__ import annotations

import argparse
import dataclasses
import pathlib
from typing import Callable

from simgpu_apps import table_out

HIDDEN = argparse.SUPPRESS  # an option left out of --help (--child: ncu's process)


@dataclasses.dataclass(frozen=True)
class Option:
    help: str
    run: Callable | None  # args -> exit status (None means 0); None: a setting actions read
    prints_table: bool    # run returns Markdown: print it, and write it to --md if given
    mkdir: bool           # create the option's folder before run
    argparse_kw: dict


def _folder_by_default(kw: dict) -> dict:
    if "action" not in kw:  # store_true and the like take no type
        kw.setdefault("type", pathlib.Path)
    return kw


def action(help: str, run: Callable, *, mkdir: bool = False, **argparse_kw) -> Option:
    """An option that runs ``run(args)`` when given; a folder unless argparse_kw says otherwise."""
    return Option(help, run, False, mkdir, _folder_by_default(argparse_kw))


def table(help: str, text: Callable, **argparse_kw) -> Option:
    """An option whose ``text(args)`` is printed (and written to --md when given)."""
    return Option(help, text, True, False, _folder_by_default(argparse_kw))


def setting(help: str, **argparse_kw) -> Option:
    """An option the actions read (--md, a repeat count, ...); it runs nothing itself."""
    return Option(help, None, False, False, argparse_kw)


def probe_main(doc: str, argv: list[str] | None, *, usage_error: str | None = None,
               help_file=None, **options: Option) -> int:
    """Parse ``argv`` with ``options`` (keyword order is --help's order; ``a_b`` is
    ``--a-b``) and run the chosen action.  With no action given: ``usage_error`` through
    argparse (usage on stderr, exit 2) if set, else the help on ``help_file`` (stdout by
    default) and 2."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    for name, opt in options.items():
        ap.add_argument("--" + name.replace("_", "-"), help=opt.help, **opt.argparse_kw)
    args = ap.parse_args(argv)
    given = [name for name, opt in options.items() if opt.run and getattr(args, name)]
    given.sort(key=lambda name: name != "child")  # stable: the rest keep their order
    if given:
        opt = options[given[0]]
        if opt.mkdir:
            getattr(args, given[0]).mkdir(parents=True, exist_ok=True)
        if opt.prints_table:
            return table_out.emit(opt.run(args), getattr(args, "md", None))
        return opt.run(args) or 0
    if usage_error:
        ap.error(usage_error)
    ap.print_help(help_file)
    return 2
