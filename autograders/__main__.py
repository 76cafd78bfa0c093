"""Command line: ``python -m autograders grade …`` and ``python -m autograders install-kernel``."""

import sys


def main() -> int:
    """Dispatch to ``grade`` or ``install-kernel``; return the exit code."""
    if len(sys.argv) < 2 or sys.argv[1] not in ("grade", "install-kernel"):
        print("usage: python -m autograders {grade,install-kernel} …", file=sys.stderr)
        return 2
    if sys.argv[1] == "install-kernel":
        from autograders.kernel import install_kernel

        print(f"installed the grading kernel in {install_kernel()}")
        return 0
    from autograders.grade import main as grade

    return grade(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
