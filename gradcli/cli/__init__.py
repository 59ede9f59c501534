"""The command line: commands, the fast path, the typer app, the session pipeline.

``gradcli.cli.fast.main`` is the console script: it binds plain command lines itself and imports
typer (``gradcli.cli.typer_app``) only for help and usage errors. ``app`` and ``main`` are
re-exported here lazily, so importing this package costs nothing.
"""

from __future__ import annotations


def __getattr__(name: str):
    if name in ("app", "main"):
        from . import typer_app
        return getattr(typer_app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
