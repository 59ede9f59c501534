"""How ``gradcli test`` reports: progress and a pytest-style summary for people, one JSON document
for scripts (``--json``), JUnit XML for CI test reporters (``--junit-xml FILE``).

The JUnit file has pytest's ``xunit2`` shape, the one Jenkins' ``junit-10.xsd`` describes and
GitLab, Jenkins and GitHub's test-report actions read: ``<testsuites>`` holding one
``<testsuite>`` holding one ``<testcase>`` per file (``classname`` its directory, dotted;
``name`` its file name), with a ``<failure>`` for a failed ``assert`` or gradient check and an
``<error>`` for a file that could not run (syntax, evaluation, limit, timeout), so that the two
counts stay apart as pytest keeps them.
"""

from __future__ import annotations

import os
import re
import sys

from .execute import ERROR, FAILED, PASSED


class Summary:
    """The counts of a run, and how it ended."""

    def __init__(self, collected: int, selected: int, shard, results: list, seconds: float, stopped: bool):
        self.collected, self.selected, self.shard = collected, selected, shard
        self.results, self.seconds, self.stopped = results, seconds, stopped
        self.passed = sum(r.outcome == PASSED for r in results)
        self.failed = sum(r.outcome == FAILED for r in results)
        self.errors = sum(r.outcome == ERROR for r in results)

    @property
    def exit_code(self) -> int:
        return 0 if self.failed == 0 and self.errors == 0 else 1

    def line(self) -> str:
        """``N passed, M failed, K errors in S s``, as pytest's last line reads."""
        parts = [f"{self.passed} passed", f"{self.failed} failed",
                 f"{self.errors} error{'' if self.errors == 1 else 's'}"]
        if self.collected - self.selected:
            parts.append(f"{self.collected - self.selected} deselected")
        return f"{', '.join(parts)} in {self.seconds:.2f} s"

    def record(self) -> dict:
        return {"collected": self.collected, "selected": self.selected, "run": len(self.results),
                "passed": self.passed, "failed": self.failed, "errors": self.errors,
                "time": round(self.seconds, 6), "stopped_early": self.stopped,
                "shard": None if self.shard is None else f"{self.shard[0]}/{self.shard[1]}"}


# -- for people --------------------------------------------------------------------------------------

class Progress:
    """A rich progress bar on a terminal (refreshed from the caller's loop: no thread, so that
    worker processes fork cleanly), nothing when the output is piped or under ``--json``."""

    def __init__(self, total: int, enabled: bool):
        self.bar = None
        if enabled and total and _isatty(sys.stdout):
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeElapsedColumn
            from ...present.tables import _console
            self.bar = Bar(TextColumn("gradcli test"), BarColumn(), MofNCompleteColumn(),
                           TextColumn("{task.fields[counts]}"), TimeElapsedColumn(),
                           console=_console(), auto_refresh=False, transient=True)
            self.task = self.bar.add_task("", total=total, counts="")
            self.counts = {PASSED: 0, FAILED: 0, ERROR: 0}
            self.shown = 0.0
            self.bar.start()

    def advance(self, result) -> None:
        if self.bar is not None:
            import time
            self.counts[result.outcome] += 1
            c = self.counts
            self.bar.update(self.task, advance=1, counts=f"{c[PASSED]} passed, {c[FAILED]} failed, {c[ERROR]} errors")
            if time.monotonic() - self.shown > 0.05:  # 20 frames a second: drawing costs more than a file
                self.bar.refresh()
                self.shown = time.monotonic()

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()


# Control characters from a program (an assert's message, a string in the source) are shown
# escaped, never sent to the terminal, where ESC [ 2 J would clear the screen of the report.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _escape(match) -> str:
    return f"\\x{ord(match.group()):02x}"


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def print_report(summary: Summary, file=None) -> None:
    """One block per failed or erroring file (caret-style, in collection order), then the summary."""
    from rich.text import Text
    from ...present.tables import _console
    console = _console(file)
    for r in summary.results:
        for problem in r.failures + ([r.error] if r.error is not None else []):
            console.print(Text(_CONTROL.sub(_escape, problem.text)), soft_wrap=True)
            console.print()
    if summary.stopped:
        console.print(f"stopped at the first failure (-x): {summary.selected - len(summary.results)} of "
                      f"{summary.selected} programs not run", soft_wrap=True)
    style = "bold green" if summary.exit_code == 0 else "bold red"
    console.print(Text(summary.line(), style=style), soft_wrap=True)


# -- for scripts -------------------------------------------------------------------------------------

def json_text(summary: Summary | None, error=None) -> str:
    """``--json``'s one document: the summary and one record per file run (collection order), or
    the usage error that stopped the run before it began."""
    from ..._version import __version__
    from ...present.tables import dump_document, error_record
    return dump_document({
        "version": __version__,
        "summary": None if summary is None else summary.record(),
        "results": [] if summary is None else [r.record() for r in summary.results],
        "error": None if error is None else error_record(error),
    })


# -- for CI: JUnit XML -------------------------------------------------------------------------------

# Characters XML 1.0 cannot hold, even escaped (control characters a program may print).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def junit_tree(summary: Summary, started: float):
    """The ``<testsuites>`` element of a run (``started``: its start, seconds since the epoch)."""
    import socket
    import time
    import xml.etree.ElementTree as ET
    counts = {"tests": str(len(summary.results)), "failures": str(summary.failed),
              "errors": str(summary.errors)}
    seconds = f"{summary.seconds:.3f}"
    root = ET.Element("testsuites", name="gradcli test", time=seconds, **counts)
    suite = ET.SubElement(root, "testsuite", name="gradcli", skipped="0", time=seconds,
                          timestamp=time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
                          hostname=_xml_text(socket.gethostname()), **counts)
    for r in summary.results:
        case = ET.SubElement(suite, "testcase", classname=_xml_text(r.classname), name=_xml_text(r.name),
                             time=f"{r.time:.3f}")
        # One element per testcase, so that the counts above are the elements' counts: an error
        # (the program stopped) outranks the failed asserts before it, which its text still shows.
        problems = r.failures + ([r.error] if r.error is not None else [])
        if problems:
            main = r.error or r.failures[0]
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            element = ET.SubElement(case, "error" if r.error is not None else "failure",
                                    message=_xml_text(_located(r, main) + more), type=main.kind)
            element.text = _xml_text("\n\n".join(p.text for p in problems))
        if r.printed:
            ET.SubElement(case, "system-out").text = _xml_text("\n".join(r.printed))
    ET.indent(root)
    return ET.ElementTree(root)


def _located(r, problem) -> str:
    where = r.path if problem.line is None else f"{r.path}:{problem.line}"
    return f"{where}: {problem.message}"


def write_junit(path: str, summary: Summary, started: float) -> None:
    """Write the file whole or not at all (a temporary file beside it, then renamed)."""
    tree = junit_tree(summary, started)
    tmp = os.path.join(os.path.dirname(path) or ".", f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        tree.write(tmp, encoding="utf-8", xml_declaration=True)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
