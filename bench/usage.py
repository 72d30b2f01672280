"""Every benchmark's command line: ``--help`` prints its usage and what it measures; an
argument it does not take is a usage error (exit status 2) before anything starts."""

from __future__ import annotations

import argparse


def usage(module: str, doc: str | None) -> argparse.ArgumentParser:
    """The command line of ``python -m <module>``, described by the module's ``doc``."""
    return argparse.ArgumentParser(
        prog=f"python -m {module}",
        description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
