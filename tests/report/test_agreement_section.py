"""The report's Agreement section: the figures of agreement.json, the most disagreed claims first, each linked
to its labelling page, everything escaped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness.cli import main
from harness.report.agreement_view import agreement_section


def agreement_file(path: Path) -> Path:
    data = {
        "annotators": ["ann<1>", "ann2"],
        "cases": 2,
        "pairs": [
            {
                "a": "ann<1>",
                "b": "ann2",
                "claims": 4,
                "cohen_kappa": 0.5,
                "cohen_kappa_ci": [0.1, 0.9],
                "percent_agreement": 0.75,
                "per_class": {},
            }
        ],
        "krippendorff_alpha": {"value": 0.48, "ci": [0.05, 0.85], "claims": 4},
        "vs_verifier": [],
        "verdicts": {"pairs": [], "krippendorff_alpha": {"value": None, "ci": None, "claims": 0}, "vs_verifier": []},
        "disagreements": [
            {
                "case_id": "s-b",
                "claim_id": "C2",
                "labels": {"ann<1>": "overstated", "ann2": "unsupported"},
                "disagreement": 1.0,
            },
            {
                "case_id": "s-a",
                "claim_id": "C1",
                "labels": {"ann<1>": "overstated", "ann2": "overstated", "verifier": "contradicted"},
                "disagreement": 0.666667,
            },
            {
                "case_id": "s-a",
                "claim_id": "C3",
                "labels": {"ann<1>": "overstated", "ann2": "overstated"},
                "disagreement": 0.0,
            },
        ],
    }
    path.write_text(json.dumps(data))
    return path


def test_section_rows_keep_the_order_and_drop_agreed_claims(tmp_path: Path) -> None:
    section = agreement_section(agreement_file(tmp_path / "agreement.json"), "http://127.0.0.1:9000/")
    assert [(d["case_id"], d["claim_id"]) for d in section["disagreements"]] == [("s-b", "C2"), ("s-a", "C1")]
    assert section["disagreements"][0]["href"] == "http://127.0.0.1:9000/case/s-b"


def test_report_shows_the_section(reference_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(reference_run, run)
    path = agreement_file(tmp_path / "agreement.json")
    assert main(["report", str(run), "--agreement", str(path)]) == 0
    html = (run / "report.html").read_text()
    section = html[
        html.index('<section id="agreement">') : html.index("</section>", html.index('<section id="agreement">'))
    ]
    assert "ann&lt;1&gt; · ann2" in section and "ann<1>" not in section
    assert section.index("/case/s-b") < section.index("/case/s-a")
    assert "0.500" in section and "[0.100, 0.900]" in section and "alpha 0.480" in section
    # without --agreement there is no section; a broken file is refused with its name
    assert main(["report", str(run)]) == 0
    assert '<section id="agreement">' not in (run / "report.html").read_text()
    (tmp_path / "bad.json").write_text("{}")
    assert main(["report", str(run), "--agreement", str(tmp_path / "bad.json")]) == 2


def test_the_section_prints_kappa_at_one_precision_and_says_when_it_is_undefined(tmp_path: Path) -> None:
    path = agreement_file(tmp_path / "agreement.json")
    data = json.loads(path.read_text())
    data["vs_verifier"] = [{"annotator": "ann2", "claims": 4, "cohen_kappa": None, "cohen_kappa_ci": None,
                            "percent_agreement": 0.5, "cohen_kappa_undefined": "the production verifier used one class"}]  # fmt: skip
    path.write_text(json.dumps(data))
    section = agreement_section(path)
    assert section["pairs"][0]["kappa_text"] == "0.500 [0.100, 0.900]"
    assert section["vs_verifier"][0]["kappa_text"] == "undefined: the production verifier used one class"
    assert section["alpha"]["text"] == "0.480 [0.050, 0.850]"
