"""Command line of the book: ``python -m qlib.book {run,build,all,list}`` (also ``qbook``).

Examples::

    python -m qlib.book all --profile default --data-dir path/to/data     # execute + build the book
    python -m qlib.book run --profile smoke --only eden/ --force          # re-run one part
    python -m qlib.book run --profile smoke --output-dir _build/smoke     # --output-dir/--root: before or after the subcommand
    python -m qlib.book run --profile paper --only quantized-mis/03 --device cuda
    python -m qlib.book run --only eden/01 --set fig2_bits=[2,4] --set fig2_trials=20
    python -m qlib.book run --profile path/to/mine.yml                    # a user profile file
    python -m qlib.book build                                             # HTML from executed notebooks
    python -m qlib.book run --jobs 4                                      # 4 notebooks at once (local Dask)
    python -m qlib.book run --profile paper --replicates 5 --scheduler tcp://head:8786 --device cuda
    python -m qlib.book publish --profile smoke --site-dir _build/site    # run, build, check, one site folder
    python -m qlib.book pdf                                               # the book as one PDF (needs TeX)
    python -m qlib.book archive --profile paper --only attacks/03         # run at paper, store in archive/paper/
    python -m qlib.book archive --profile paper --from _build/gpu         # store notebooks executed elsewhere
    python -m qlib.book archive-check                                     # every entry's schema and stamp
    python -m qlib.book archive-revalidate                                # carry stale entries forward (smoke + spot rows)
    python -m qlib.book archive-revalidate --dry-run --archive ARCHIVE_COPY  # report only, on a copy of the archive
    python -m qlib.book archive-spot --only rqp-sgd/03                    # one paper-sized unit against the archive
    python -m qlib.book lab-form [--check]                                # the chapters stored as JupyterLab saves them

Exit status: 0 done; 1 a notebook failed; 2 bad arguments, profile or override (nothing ran);
3 the output directory is unusable or in use by another runner; 4 publish refused a broken site
(a missing page, an empty index, a broken link, a failed notebook; nothing written); 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import archive, build, check, nbfile, publish, runner
from .options import RunOptions
from .profiles import PROFILES, ProfileError, parse_overrides
from .toc import find_root, notebooks

__all__ = ["DEFAULT_JOBS", "main"]

EXIT_FAILED, EXIT_USAGE, EXIT_OUTPUT, EXIT_REFUSED, EXIT_INTERRUPTED = 1, 2, 3, 4, 130
DEFAULT_JOBS = max(1, min(4, os.cpu_count() or 1))


# What stops a command before it is done, besides Ctrl-C: a bad argument/profile/override, an unusable
# output directory (see :func:`_stopped` for the exit status of each)
_STOPS = (ProfileError, ValueError, FileNotFoundError, runner.OutputDirError)


def _stopped(exc: BaseException, *, interrupted: str, refused: type | None = None) -> int:
    """Say why a command stopped (one line on stderr) and return its exit status."""
    if isinstance(exc, KeyboardInterrupt):
        print(interrupted, file=sys.stderr)
        return EXIT_INTERRUPTED
    print(f"error: {exc}", file=sys.stderr)
    if refused is not None and isinstance(exc, refused):
        return EXIT_REFUSED
    return EXIT_OUTPUT if isinstance(exc, runner.OutputDirError) else EXIT_USAGE


def _jobs(text: str) -> int:
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"--jobs must be >= 1, got {n}")
    return n


def _add_place_args(p: argparse.ArgumentParser, *, top: bool) -> None:
    """``--root`` and ``--output-dir``: accepted before the subcommand and after it (a value given
    after it wins). On a subcommand their default is SUPPRESS, so one left out there does not
    overwrite the one given before the subcommand."""
    default = None if top else argparse.SUPPRESS
    p.add_argument("--root", type=Path, default=default, help="book root (default: found upwards from cwd)")
    p.add_argument("--output-dir", type=Path, default=default,
                   help="executed notebooks and results (default: <root>/_build/book)")


def _add_run_args(p: argparse.ArgumentParser) -> None:
    _add_place_args(p, top=False)
    p.add_argument("--profile", default="default",
                   help=f"parameter profile: {' | '.join(PROFILES)}, or a path to a .yml file (default: %(default)s)")
    p.add_argument("--only", nargs="*", action="extend", default=None, metavar="NB",
                   help="notebooks to run: a part prefix (eden/), a path below chapters/, or a glob; repeatable (--only a/ --only b/ runs both)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", dest="overrides",
                   help="override a parameter of every selected notebook that declares it (YAML-typed value)")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda (default: %(default)s)")
    p.add_argument("--jobs", type=_jobs, default=DEFAULT_JOBS, metavar="N",
                   help="notebooks at once, on a local Dask cluster of N worker processes; 1 runs them one "
                        "after the other in this process (default: %(default)s, the number of CPU cores up to 4)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run on an existing Dask cluster (tcp://host:8786) instead of a local one")
    p.add_argument("--replicates", type=int, default=1, metavar="K",
                   help="also run every notebook with K-1 further seeds; the appendix shows verdict stability")
    p.add_argument("--data-dir", default=None, help="offline datasets (default: $QLIB_DATA_DIR or ~/.cache/qlib/data)")
    p.add_argument("--force", action="store_true", help="re-run notebooks whose inputs are unchanged (and compute "
                                                        "every unit of work again)")
    p.add_argument("--no-resume", action="store_true",
                   help="compute every unit of work of a notebook again, instead of reusing those an earlier "
                        "(interrupted) run saved with the same code and parameters")
    p.add_argument("--timeout", type=int, default=None, help="per-cell timeout in seconds")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m qlib.book", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_place_args(ap, top=True)
    sub = ap.add_subparsers(dest="cmd", required=True)
    _add_run_args(sub.add_parser("run", help="execute notebooks with papermill"))
    _add_place_args(sub.add_parser("build", help="build the HTML book (warnings are errors)"), top=False)
    _add_run_args(sub.add_parser("all", help="run, then build"))
    _add_place_args(sub.add_parser("list", help="list the notebooks in table-of-contents order"), top=False)
    pub = sub.add_parser("publish", help="run, build and check the site; write it to one folder (or refuse)")
    _add_run_args(pub)
    pub.add_argument("--site-dir", type=Path, default=None, help="the site folder (default: <root>/_build/site)")
    pub.add_argument("--skip-run", action="store_true",
                     help="execute nothing: build and publish what the output directory holds")
    pub.add_argument("--pdf", action="store_true", help="also build the PDF (needs TeX) and link it from the landing page")
    pdf = sub.add_parser("pdf", help="build the book as one PDF from what was executed (needs TeX)")
    _add_place_args(pdf, top=False)
    pdf.add_argument("--pdf-dir", type=Path, default=None, help="where the PDF goes (default: <root>/_build/pdf)")
    arc = sub.add_parser("archive", help="run notebooks at a profile (or take them executed) and store their "
                                         "results with provenance under archive/<profile>/")
    _add_run_args(arc)
    arc.set_defaults(profile="paper", jobs=1)
    arc.add_argument("--from", dest="from_dir", type=Path, default=None, metavar="DIR",
                     help="take the notebooks already executed in this runner's output tree instead of running them")
    arc.add_argument("--no-smoke", action="store_true",
                     help="do not keep the smoke-profile rows (the entry then cannot be revalidated)")
    arc.add_argument("--smoke-only", action="store_true",
                     help="run nothing at the profile: add this machine's smoke rows to the existing entries")
    chk = sub.add_parser("archive-check", help="check every archive entry's schema and stamp (runs nothing)")
    _add_place_args(chk, top=False)
    chk.add_argument("--strict", action="store_true", help="a stale or dirty entry fails the check too")
    rev = sub.add_parser("archive-revalidate",
                         help="recompute the smoke rows and one paper-sized unit (qlib.book.spot) of stale archive "
                              "entries; carry forward those whose rows are identical")
    lab = sub.add_parser("lab-form", help="store the chapters' notebooks as JupyterLab saves them (--check: list "
                                          "those that differ, exit 1 if any)")
    _add_place_args(lab, top=False)
    lab.add_argument("--check", action="store_true")
    spt = sub.add_parser("archive-spot", help="run the paper-sized spot unit of archive entries (any state) and "
                                              "compare its rows with the archive's (writes nothing)")
    for q in (rev, spt):
        _add_place_args(q, top=False)
        q.add_argument("--only", nargs="*", action="extend", default=None, metavar="NB")
        q.add_argument("--data-dir", default=None)
    rev.add_argument("--dry-run", action="store_true", help="compute and report; write nothing in the archive")
    for q in (chk, rev, spt):
        q.add_argument("--archive", type=Path, default=None, metavar="DIR",
                       help="the archive folder (default: $QLIB_ARCHIVE_DIR, else <root>/archive)")
    args = ap.parse_args(argv)

    if args.cmd in ("archive", "archive-check", "archive-revalidate", "archive-spot"):
        return _archive(args)
    if args.cmd == "publish":
        return _publish(args)
    if args.cmd == "pdf":
        try:
            print(publish.build_pdf(root=args.root, output_dir=args.output_dir, pdf_dir=args.pdf_dir))
        except publish.PublishRefused as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_FAILED
        return 0

    if args.cmd == "lab-form":
        changed = nbfile.normalise(args.root, check=args.check)
        root = find_root(args.root)
        for p in changed:
            print(f"{'differs' if args.check else 'rewritten'}: {p.relative_to(root)}")
        return EXIT_FAILED if args.check and changed else 0
    if args.cmd == "list":
        for nb in notebooks(find_root(args.root)):
            print(nb)
        return 0
    if args.cmd in ("run", "all"):
        try:
            report = runner.run(args.root, RunOptions(
                profile=args.profile, only=args.only, device=args.device, data_dir=args.data_dir,
                output_dir=args.output_dir, force=args.force, timeout=args.timeout,
                progress=not args.no_progress and sys.stderr.isatty(), overrides=parse_overrides(args.overrides),
                jobs=args.jobs, scheduler=args.scheduler, replicates=args.replicates, resume=not args.no_resume))
        except (*_STOPS, KeyboardInterrupt) as exc:  # Ctrl-C before or after the notebooks (the loop reports its own)
            return _stopped(exc, interrupted="interrupted before any notebook finished")
        print(report.summary())
        if report.timings():
            print(report.timings())
        if report.interrupted:
            return EXIT_INTERRUPTED
        if report.failures:
            return EXIT_FAILED
    if args.cmd in ("build", "all"):
        return build.build(root=args.root, output_dir=args.output_dir)
    return 0


def _archive(args) -> int:
    try:
        if args.cmd == "archive-check":
            return check.main_check(args.root, archive=args.archive, strict=args.strict)
        if args.cmd == "archive-revalidate":
            archive.revalidate(args.root, archive=args.archive, data_dir=args.data_dir, only=args.only,
                               dry_run=args.dry_run)
            return check.main_check(args.root, archive=args.archive)
        if args.cmd == "archive-spot":
            results = archive.spot_checks(args.root, archive=args.archive, data_dir=args.data_dir, only=args.only)
            print(f"{sum(r.ok for r in results)} of {len(results)} spot checks gave the archived rows")
            return 0 if results and all(r.ok for r in results) else EXIT_FAILED
        if args.smoke_only:
            done = archive.attach_smoke(root=args.root, profile=args.profile, only=args.only, data_dir=args.data_dir)
            return 0 if done else EXIT_FAILED
        written = archive.archive(args.root, RunOptions(
            profile=args.profile, only=args.only, device=args.device, data_dir=args.data_dir,
            output_dir=args.output_dir, overrides=parse_overrides(args.overrides), jobs=args.jobs, force=args.force,
            timeout=args.timeout, resume=not getattr(args, "no_resume", False)),
            from_dir=args.from_dir, smoke=not args.no_smoke)
    except (*_STOPS, KeyboardInterrupt) as exc:
        return _stopped(exc, interrupted="interrupted")
    print(f"{len(written)} archive entries written")
    return 0 if written else EXIT_FAILED


def _publish(args) -> int:
    try:
        publish.publish(args.root, RunOptions(profile=args.profile, device=args.device, data_dir=args.data_dir,
                                              output_dir=args.output_dir, jobs=args.jobs, force=args.force),
                        site_dir=args.site_dir, skip_run=args.skip_run, pdf=args.pdf)
    except (publish.PublishRefused, *_STOPS, KeyboardInterrupt) as exc:
        return _stopped(exc, interrupted="interrupted", refused=publish.PublishRefused)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
