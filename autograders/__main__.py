"""Command line: ``python -m autograders COMMAND …``.

Commands: ``init-course``, ``init-exchange``, ``new-key``, ``grade``, ``report``, ``cluster-certs``,
``install-kernel``, ``instructor-ui``, ``student-ui``.
"""

import sys

USAGE = (
    "usage: python -m autograders {init-course,init-exchange,new-key,grade,report,cluster-certs,"
    "install-kernel,instructor-ui,student-ui} …"
)


def main() -> int:
    """Dispatch to a command of the course's grading tools; return the exit code."""
    command = sys.argv[1] if len(sys.argv) > 1 else None
    if command == "install-kernel":
        from autograders.kernel import install_kernel

        print(f"installed the grading kernel in {install_kernel()}")
        return 0
    if command == "init-course":
        from autograders.course import main as init_course

        return init_course(sys.argv[2:])
    if command == "init-exchange":
        from autograders.exchange import main as init_exchange

        return init_exchange(sys.argv[2:])
    if command == "new-key":
        from autograders.secret import main as new_key

        return new_key(sys.argv[2:])
    if command == "grade":
        from autograders.grade import main as grade

        return grade(sys.argv[2:])
    if command == "report":
        from autograders.report import main as report

        return report(sys.argv[2:])
    if command == "cluster-certs":
        from autograders.cluster import main as cluster_certs

        return cluster_certs(sys.argv[2:])
    if command in ("instructor-ui", "student-ui"):
        from autograders.lab import main as lab_ui

        return lab_ui(sys.argv[2:], on=command == "instructor-ui")
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
