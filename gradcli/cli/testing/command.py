"""The ``gradcli test`` command: check the options, collect, run, report; the exit code.

Exit codes: 0 every program passed, 1 a program failed or had an error, 2 bad usage or no
program collected (a shard with nothing in it is not an error: the suite is spread over the
other shards).
"""

from __future__ import annotations

import math
import os
import sys
import time

from ...errors import GradcliError, UsageError


def run_tests(*, paths=None, keyword=None, jobs=None, shard=None, junit_xml=None, json_=False,
              gradcheck=False, exitfirst=False, test_seed=None, test_timeout=60.0, dtype=None,
              eps=1e-6, atol=1e-5, rtol=1e-3, max_elements=None, max_program_size=None,
              max_statements=None, debug=False) -> int:
    from . import report
    from .execute import Settings
    started, t0 = time.time(), time.perf_counter()
    try:
        settings = Settings(seed=test_seed, timeout=test_timeout or None, dtype=dtype or "float32",
                            gradcheck=gradcheck, eps=eps, atol=atol, rtol=rtol, max_elements=max_elements,
                            max_program_size=max_program_size, max_statements=max_statements, debug=debug)
        _check_options(settings, jobs, junit_xml)
        collected, chosen, shard = _collect(paths, keyword, shard)
    except GradcliError as err:
        return _usage_error(err, json_)
    try:
        results, stopped = _run(chosen, settings, jobs, exitfirst, enabled=not json_)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    summary = report.Summary(collected, len(chosen), shard, results, time.perf_counter() - t0, stopped)
    if json_:
        print(report.json_text(summary))
        sys.stdout.flush()
    report.print_report(summary, sys.stderr if json_ else None)
    if junit_xml:
        try:
            report.write_junit(junit_xml, summary, started)
        except OSError as exc:
            print(f"error: cannot write {junit_xml}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    return summary.exit_code


def _collect(paths, keyword, shard):
    """``(number collected, the items to run, (K, N) or None)``; nothing to run is a usage error,
    except in a shard: the others have the suite."""
    from . import collect
    where = collect.parse_shard(shard)
    items = collect.collect(list(paths or []))
    if not items:
        raise UsageError(f"no *.grad files found in {', '.join(paths or ['.'])}")
    selected = collect.select(items, keyword, None)
    if not selected:
        raise UsageError(f"-k {keyword!r} selects none of the {len(items)} programs collected")
    return len(items), collect.select(selected, None, where), where


def _check_options(settings, jobs, junit_xml) -> None:
    if settings.dtype not in ("float32", "float64"):
        raise UsageError(f"--dtype must be float32 or float64, not {settings.dtype!r}")
    if jobs is not None and jobs < 1:
        raise UsageError(f"-j expects a number of worker processes, 1 or more; got {jobs}")
    if settings.timeout is not None and not (settings.timeout > 0 and math.isfinite(settings.timeout)):
        raise UsageError("--timeout must be a positive number of seconds (0: no limit)")
    for flag, value in (("--eps", settings.eps), ("--atol", settings.atol), ("--rtol", settings.rtol)):
        if not (value >= 0 and math.isfinite(value)) or (flag == "--eps" and value == 0):
            raise UsageError(f"{flag} must be a {'positive' if flag == '--eps' else 'non-negative'} number, "
                             f"not {value:g}")
    if junit_xml is not None:
        directory = os.path.dirname(junit_xml) or "."
        if not os.path.isdir(directory) or os.path.isdir(junit_xml):
            raise UsageError(f"--junit-xml {junit_xml}: " + ("is a directory" if os.path.isdir(junit_xml)
                                                              else f"no such directory: {directory}"))


def _usage_error(err: GradcliError, json_: bool) -> int:
    from ...present.tables import error_text
    from .report import json_text
    if json_:
        print(json_text(None, err))
    print(error_text(err, None), file=sys.stderr)
    return err.exit_code


def _run(items, settings, jobs, exitfirst, enabled):
    """Each item's result, in collection order, and whether ``-x`` stopped the run early."""
    from .report import Progress
    from .workers import default_jobs
    jobs = min(jobs or default_jobs(), len(items))
    if items:
        _warm_up()
    pool = _pool(settings, jobs, items) if jobs > 1 else None  # before the progress bar
    progress = Progress(len(items), enabled)
    results, stopped = [], False
    try:
        for result in (pool.results() if pool is not None else _in_process(items, settings)):
            results.append(result)
            progress.advance(result)
            if exitfirst and result.outcome != "passed":
                stopped = len(results) < len(items)
                break
    finally:
        progress.stop()
        if pool is not None:
            pool.close()
    results.sort(key=lambda r: r.index)
    return results, stopped


def _pool(settings, jobs, items):
    """Started workers, or None (run in this process) where the system cannot give processes
    and their queues (no /dev/shm for the semaphores, a process limit): slower, not wrong."""
    from .workers import Pool
    pool = None
    try:
        pool = Pool(settings, jobs)
        return pool.start(items)
    except OSError as exc:
        if pool is not None:
            pool.close()
        print(f"note: running in one process: worker processes are not available here ({exc})", file=sys.stderr)
        return None


def _warm_up() -> None:
    """Run a one-line program first: the parser is built and what a run imports (the evaluator,
    numpy.random...) is imported once, before workers fork and inherit it, instead of inside the
    first file's time in each worker (~50 ms)."""
    from ..commands import options
    from ..session import engine_state, run
    with engine_state():
        run(options(source="x = ones(1)", seed=0))


def _in_process(items, settings):
    from .execute import run_file
    for item in items:
        yield run_file(item, settings)
