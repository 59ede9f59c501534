"""``gradcli test``: a test runner for ``.grad`` programs, for CI (SPEC §1, issue 15).

One process runs many program files, each in isolation, and reports as pytest does:

    collect.py   which files: ``*.grad`` under PATHS, sorted; ``-k EXPR``; ``--shard K/N``
    execute.py   one file, as ``gradcli eval -f`` (and ``gradcli check`` with ``--gradcheck``) runs it
    workers.py   ``-j N``: worker processes, chunks of files, crashes and overruns survived
    report.py    progress and summary, ``--json``, ``--junit-xml``
    command.py   the command: options checked, the pieces above put together, the exit code
"""
