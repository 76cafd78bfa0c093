"""The command line: ``python -m mhsa_helpers.training`` rebuilds the worked example ``trained``.

It trains with the fixed seed and writes ``mhsa_helpers/data/trained.npz``
(byte for byte the same file for the same seed and steps).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .heads import head_sentence
from .loop import STEPS, train
from .saved import DATA, save_trained

__all__ = ["main"]


def main(argv=None) -> int:
    """Train with the fixed seed and write the worked example ``trained``."""
    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--out", type=Path, default=DATA, help=f"where to write (default {DATA})")
    p.add_argument("--steps", type=int, default=STEPS)
    args = p.parse_args(argv)
    result = train(args.steps, bar="training")
    arrays = save_trained(result, args.out)
    print(result.summary())
    heads = zip(arrays["head_patterns"], arrays["head_shares"], strict=True)
    for k, (pattern, share) in enumerate(heads):
        print(head_sentence(k, str(pattern), share))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
