"""Where the console script pointed before the CLI moved to ``gradcli.cli``: a ``gradcli``
launcher written by an earlier install still imports ``gradcli.fastcli.main``."""

from .cli.fast import main  # noqa: F401
