"""Finishing a run: once its records are written, score them, write the certificate and the report.

The one way a run is finished, on every platform: in the process that ran it, from the run folder. Each record
carries its outcome and its conformance findings (judged by the run's worker as it wrote it), so scoring reads
the records only, never the cases; the report reads the few cases its drill-down shows. While the run waits on
its replies, a thread imports what finishing needs (`Finisher.start`), so those imports are not on the path
from the last reply to the summary; nothing else happens beside the run.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.app.phases import CERTIFICATE, REPORT, SCORE, phase
from harness.run.gates import GateSettings
from harness.run.log import Manifest
from harness.run.providers import import_ahead

if TYPE_CHECKING:  # imported by the thread `start` runs, not at start-up
    from harness.score.summary_model import Summary

SCORING_MODULES = ("harness.score.scoring", "harness.kit.certificate")
"""What scoring and the certificate import (pandas, the kit's server)."""
REPORT_MODULES = ("harness.report.render", "harness.report.figures")
"""What the HTML report imports (jinja2, the summary models)."""


@dataclass(frozen=True)
class Finished:
    """What finishing a run gives back: scoring's summary and the certificate's headline."""

    summary: Summary
    headline: str


class Finisher:
    """Finishes one run (`finish`), with what it needs imported while the run still waits on replies (`start`).

    `start` is `run_study`'s `on_start`: the import thread starts when the first requests go out, not before (it
    would take the GIL from what the first request waits for). `finish` joins it first, so no module is ever
    imported by two threads at once; without `start`, it imports in the calling thread. A failed import is left
    for the real one to raise, where it is used.
    """

    def __init__(self, report: bool) -> None:
        self.report = report
        modules = SCORING_MODULES + (REPORT_MODULES if report else ())
        self._imports = threading.Thread(target=import_ahead, args=(modules,), name="vbench-imports", daemon=True)

    def start(self) -> None:
        self._imports.start()

    def finish(self, run_dir: Path, settings: GateSettings, manifest: Manifest, corpus_policy: int) -> Finished:
        """Score the run folder (summary.json, outcomes.jsonl, junit.xml), write the certificate and, with
        `report`, report.html and summary.md; a report that cannot be written is a `ReportError`."""
        if self._imports.ident is not None:
            self._imports.join()
        from harness.kit.certificate import write_run_certificate
        from harness.score.scoring import score_run

        with phase(SCORE):
            summary = score_run(run_dir, settings)
        with phase(CERTIFICATE):
            headline = write_run_certificate(run_dir, manifest, summary, corpus_policy).headline
        if self.report:
            from harness.report.render import render_scored

            with phase(REPORT):
                render_scored(run_dir, summary, manifest=manifest)
        return Finished(summary, headline)


def finish(
    run_dir: Path, settings: GateSettings, manifest: Manifest, corpus_policy: int, report: bool = True
) -> Finished:
    """What `vbench run` does once its records are written (`Finisher.finish`, without imports ahead)."""
    return Finisher(report).finish(run_dir, settings, manifest, corpus_policy)
