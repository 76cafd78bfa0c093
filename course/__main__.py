"""``python -m course``: the instructor's commands on the course's sources.

* ``readme [--check]``: write the README's parts that come from the registry
  (between ``<!-- BEGIN registry: NAME -->`` markers); ``--check`` only says
  whether the README agrees.
* ``new-exercise NAME --after STEM [--title T] [--kind K] [--signature S]``: add
  a notebook with one exercise after the notebook ``STEM``: its registry entry,
  its reference stub, its check, its notebook source and, for a kind that brings
  tests, its test module (README, "Add your own exercise").
"""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m course", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("readme", help="write the README's parts from the registry")
    r.add_argument("--check", action="store_true", help="only say whether the README agrees")
    n = sub.add_parser("new-exercise", help="add a notebook with one exercise")
    n.add_argument("name", help="the function the learner writes, e.g. alibi_bias")
    n.add_argument("--after", required=True, help="the notebook it follows: a stem or its number")
    n.add_argument("--title", help="what the notebook teaches (default: from the name)")
    n.add_argument("--kind", default="extension", help="its kind (default: extension)")
    n.add_argument("--signature", default="(X)", help="its parameter list, e.g. '(seq_len, h)'")
    n.add_argument("--slug", help="the notebook's name after its number (default: NAME)")
    args = p.parse_args(argv)
    if args.command == "readme":
        from course.readme import main as readme

        return readme(check=args.check)
    from course.scaffold import new_exercise

    try:
        written = new_exercise(
            args.name,
            after=args.after,
            title=args.title,
            kind=args.kind,
            signature=args.signature,
            slug=args.slug,
        )
    except ValueError as exc:
        print(f"new-exercise: {exc}", file=sys.stderr)
        return 2
    for line in written:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
