"""``arena publish`` and ``arena serve``: the command lines; the builder is imported only
when a command runs, so that ``arena`` starts fast."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def add_publish_parser(subparsers: Any) -> None:
    """Add ``publish`` to ``subparsers`` (the result of argparse's add_subparsers())."""
    p = subparsers.add_parser(
        "publish", help="write a tournament's or a league's static web site",
        description="Write a self-contained static site for the tournament or league in "
                    "DIR: the leaderboard with charts, a page per bot, the games with a "
                    "replay of each, the tournament statement and the raw records. Given "
                    "several DIRs, one site: a dated index of the events, each event's own "
                    "site under events/, and a board per game and table size ranking every "
                    "bot over the events. It works from file:// and from any static web "
                    "host.")
    p.add_argument("folders", type=Path, nargs="+", metavar="DIR",
                   help="a tournament's or league's output folder (several: one site of "
                        "them all)")
    p.add_argument("--out", type=Path, metavar="SITE", required=True,
                   help="the site folder (created; an earlier site there is replaced)")
    p.add_argument("--resamples", type=int, metavar="N",
                   help="bootstrap resamples for the rating intervals (default: as for the "
                   "tournament's leaderboard, else 1000)")
    p.add_argument("--slug", action="append", default=[], metavar="DIR=SLUG",
                   help="with several DIRs: publish DIR's event under events/SLUG/ instead "
                        "of its name's (a-z, 0-9, '.', '_', '-'); for two events of one "
                        "name, e.g. --slug out/cup-2025=autumn_cup_2025 (repeatable)")


def add_serve_parser(subparsers: Any) -> None:
    """Add ``serve`` to ``subparsers``."""
    p = subparsers.add_parser(
        "serve", help="serve a published site on 127.0.0.1 for a quick look",
        description="Serve the site folder on 127.0.0.1 (this machine only) until Ctrl-C.")
    p.add_argument("site", type=Path, metavar="SITE", help="a folder written by arena publish")
    p.add_argument("--port", type=int, default=8000, metavar="N",
                   help="the port (default 8000; 0 picks a free one)")


def _usage(message: str) -> int:
    print(message, file=sys.stderr)
    return 2


def cmd_publish(args: argparse.Namespace) -> int:
    """Run ``arena publish``: 0 when the site is written, 2 for a usage mistake."""
    from arena.publish.build import publish
    from arena.runs.store import Store

    folders: list[Path] = args.folders
    if args.resamples is not None and args.resamples < 1:
        return _usage("arena publish: --resamples must be positive")
    if len(folders) > 1:
        try:
            slugs = _slugs(args.slug, folders)
        except ValueError as e:
            return _usage(f"arena publish: {e}")
        return _publish_many(folders, slugs, args)
    if args.slug:
        return _usage("arena publish: --slug names an event's folder in a site of two or "
                      "more DIRs; one DIR's site has no events/ folder")
    folder = folders[0]
    if not folder.is_dir() or not Store.exists(folder):
        return _usage(f"{folder}: no tournament here")
    return _published(args, lambda: publish(folder, args.out, resamples=args.resamples),
                      lambda s: f"{s.games} games and {s.bots} bots")


def _published(args: argparse.Namespace, build: Callable[[], Any],
               what: Callable[[Any], str]) -> int:
    """Run ``build`` (a publish), saying what it wrote, or why not in one line."""
    from arena.publish.build import PublishError
    from arena.runs.store import StoreError

    start = time.perf_counter()
    try:
        summary = build()
    except (PublishError, StoreError) as e:
        return _usage(str(e))
    except OSError as e:
        print(f"arena publish: cannot write {args.out}: {e.strerror or e}", file=sys.stderr)
        return 1
    seconds = time.perf_counter() - start
    print(f"published {what(summary)} to {summary.site} "
          f"({summary.size / 1e6:.1f} MB, {seconds:.1f} s); open "
          f"{summary.site / 'index.html'} or run: arena serve {args.out}")
    return 0


def _slugs(given: list[str], folders: list[Path]) -> dict[Path, str]:
    """The ``--slug DIR=SLUG`` options as {DIR as given on the command line: SLUG}; a
    ValueError (one line naming the option) for a malformed one, a SLUG that is not a
    folder name the site would make, or a DIR that is not one of ``folders``."""
    from arena.publish.multi import event_slug

    by_place = {folder.resolve(): folder for folder in folders}
    slugs: dict[Path, str] = {}
    for option in given:
        where, sep, slug = option.rpartition("=")
        if not sep or not where:
            raise ValueError(f"--slug {option!r}: expected DIR=SLUG")
        if not slug or event_slug(slug) != slug:
            raise ValueError(f"--slug {option!r}: {slug!r} is not a folder name of the "
                             f"site: a-z, 0-9, '.', '_' and '-', not starting with '.' "
                             f"(e.g. {event_slug(slug)!r})")
        folder = by_place.get(Path(where).resolve())
        if folder is None:
            raise ValueError(f"--slug {option!r}: {where} is not one of the DIRs published")
        if folder in slugs:
            raise ValueError(f"--slug {option!r}: {where} has a --slug already")
        slugs[folder] = slug
    return slugs


def _publish_many(folders: list[Path], slugs: dict[Path, str],
                  args: argparse.Namespace) -> int:
    from arena.publish.multi import publish_many

    return _published(
        args, lambda: publish_many(folders, args.out, resamples=args.resamples,
                                   slugs=slugs),
        lambda s: f"{s.events} events ({s.games} games) and "
                  f"{s.boards} board{'s' if s.boards != 1 else ''}")


def cmd_serve(args: argparse.Namespace) -> int:
    """Run ``arena serve``: serves until Ctrl-C or SIGTERM (exit 0); 2 for a usage mistake,
    1 when the port cannot be used."""
    from arena.publish.serve import HOST, serve

    site: Path = args.site
    if not (site / "index.html").is_file():
        return _usage(f"{site}: no site here (no index.html); make one with arena publish")
    if not 0 <= args.port <= 65535:
        return _usage("arena serve: --port must be 0..65535")

    def ready(url: str) -> None:
        print(f"serving {site} at {url} (Ctrl-C to stop)", flush=True)

    try:
        serve(site, args.port, ready)
    except OSError as e:
        print(f"arena serve: cannot listen on {HOST}:{args.port}: {e.strerror or e}",
              file=sys.stderr)
        return 1
    print("stopped", flush=True)
    return 0
