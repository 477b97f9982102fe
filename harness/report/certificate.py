"""`certificate.html`: a certificate read as an auditor reads it, in one standalone file.

The headline says exactly what `status` says; a failing certificate shows no green anywhere (a scenario
whose cases passed in a failed run is grey, never a green chip); the full git sha, with `-dirty`, is
shown whole. Everything that came from a SUT or a case is escaped by the template.
"""

from __future__ import annotations

from harness.report.render import asset, environment
from harness.score.certificate_model import Certificate, ScenarioTally, Status

STATUS_CLASS = {"certified": "ok", "partial": "partial", "failed": "failed"}


def scenario_chip(status: Status, entry: ScenarioTally) -> tuple[str, str]:
    """(css class, label) of one scenario's chip; green only on a certificate that is not failed."""
    if entry.cases == 0:
        return "uncovered", "not covered"
    if entry.passed < entry.cases:
        return "failed", f"{entry.cases - entry.passed} of {entry.cases} failed"
    if status == "failed":
        return "neutral", f"{entry.passed}/{entry.cases} agreed"
    return "ok", f"{entry.passed}/{entry.cases} agreed"


def render_certificate(certificate: Certificate) -> str:
    """certificate.html from the model (the template reads its attributes: `c.sut.name`, `c.kit.dirty`, ...)."""
    status = certificate.status
    chips = [(sid, *scenario_chip(status, entry), entry) for sid, entry in sorted(certificate.scenarios.items())]
    template = environment().get_template("certificate.html.j2")
    return template.render(c=certificate, status_class=STATUS_CLASS[status], chips=chips, css=asset("certificate.css"))
