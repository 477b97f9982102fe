"""The order the labelling page offers sessions in: draws persisted before they are shown (a restart offers the
same session), their probabilities recorded in the label lines, and the estimate weighting by them."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from harness.corpus.labels import LabelLine, append_label
from harness.score.estimate import estimate, judge_reference, sample_of
from harness.score.label_order import Chooser, read_draws
from tests.score.labelled_folder import import_folder

REPO = Path(__file__).resolve().parents[2]


def test_random_draws_survive_a_restart(tmp_path: Path) -> None:
    cases = import_folder(tmp_path)
    folder = tmp_path / "imp"
    is_open = {c.id: True for c in cases}
    first = Chooser(folder, "ann", cases, "random").next_open(is_open, None)
    again = Chooser(folder, "ann", cases, "random").next_open(is_open, None)
    assert first == again  # the pending draw, not a new one
    (draw,) = read_draws(folder / "draws" / "ann.jsonl")
    assert draw.case_id == first and draw.drawn.probability == pytest.approx(1 / len(cases))


def test_active_probabilities_follow_the_cells(tmp_path: Path) -> None:
    cases = import_folder(tmp_path)
    folder = tmp_path / "imp"
    chooser = Chooser(folder, "ann", cases, "active", judge_reference(cases))
    is_open = {c.id: True for c in cases}
    seen = []
    for _ in range(4):
        nxt = chooser.next_open(is_open, None)
        seen.append(nxt)
        is_open[nxt] = False
    draws = read_draws(folder / "draws" / "ann.jsonl")
    assert [d.case_id for d in draws] == seen and len(set(seen)) == 4  # without replacement
    assert [d.drawn.draw for d in draws] == [1, 2, 3, 4]
    assert all(0 < d.drawn.probability <= 1 for d in draws)


def test_the_estimate_uses_the_draws_prefix_and_flags_disagreement(tmp_path: Path) -> None:
    cases = import_folder(tmp_path)
    folder = tmp_path / "imp"
    by_id = {c.id: c for c in cases}
    chooser = Chooser(folder, "ann", cases, "active", judge_reference(cases))
    is_open = {c.id: True for c in cases}
    order = []
    for _ in range(4):
        order.append(chooser.next_open(is_open, None))
        is_open[order[-1]] = False
    for cid in order[:2] + order[3:]:  # the third draw is never finished: the sequence ends at 2
        for check in by_id[cid].production.claim_checks:
            append_label(folder, LabelLine(case_id=cid, claim_id=check.claim_id, label=check.verification,
                                           annotator="ann", at="2026-12-07T00:00:00Z", drawn=chooser.drawn_for(cid)))  # fmt: skip
    partial = by_id[order[2]].production.claim_checks[0]  # the third draw is begun, not finished
    append_label(folder, LabelLine(case_id=order[2], claim_id=partial.claim_id, label=partial.verification,
                                   annotator="ann", at="2026-12-07T00:00:00Z", drawn=chooser.drawn_for(order[2])))  # fmt: skip
    sample = sample_of(folder, cases, {*order[:2], order[3]})
    assert [cases[i].id for i in sample.idx] == order[:2]
    assert sample.probability is not None and np.all(sample.probability > 0)
    assert any("outside that sequence" in n for n in sample.notes)
    # a disagreement order is flagged as biased
    other = tmp_path / "other"
    other.mkdir()
    cases2 = import_folder(other)
    folder2 = other / "imp"
    chooser2 = Chooser(folder2, "ann", cases2, "disagreement")
    for c in cases2[:3]:
        for check in c.production.claim_checks:
            append_label(folder2, LabelLine(case_id=c.id, claim_id=check.claim_id, label=check.verification,
                                            annotator="ann", at="2026-12-07T00:00:00Z", drawn=chooser2.drawn_for(c.id)))  # fmt: skip
    report = estimate(folder2, judge_reference(cases2), "reference")
    assert report.design == "by disagreement (biased)"
    assert report.biased  # the report's section flags it
    assert any("biased" in n for n in report.notes)


def test_serve_active_records_the_probability_in_label_lines(tmp_path: Path) -> None:
    import_folder(tmp_path)
    folder = tmp_path / "imp"
    port_file = tmp_path / "port"
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def start() -> tuple[subprocess.Popen[bytes], str]:
        port_file.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "harness.cli", "label", "serve", str(folder), "--annotator", "ann", "--port", "0",
               "--port-file", str(port_file), "--order", "active"]  # fmt: skip
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while not port_file.exists():
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.05)
        return proc, f"http://127.0.0.1:{int(port_file.read_text())}"

    proc, url = start()
    try:
        first = re.search(r'id="start" href="/case/([^"]+)"', httpx.get(url + "/").text).group(1)  # type: ignore[union-attr]
        page = httpx.get(f"{url}/case/{first}").text
        token = re.search(r'name="token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        claim = re.search(r'name="claim_id" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        answer = httpx.post(
            f"{url}/case/{first}/label", data={"token": token, "claim_id": claim, "label": "overstated"}
        )
        assert answer.status_code == 303
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    line = json.loads((folder / "labels" / "ann.jsonl").read_text().splitlines()[0])
    assert line["drawn"]["order"] == "active" and line["drawn"]["draw"] == 1
    assert 0 < line["drawn"]["probability"] <= 1
    proc, url = start()  # restarted: the same session is still the one to finish
    try:
        again = re.search(r'id="start" href="/case/([^"]+)"', httpx.get(url + "/").text).group(1)  # type: ignore[union-attr]
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert again == first


def test_agreement_says_an_actively_chosen_kappa_is_not_the_populations(tmp_path: Path) -> None:
    from harness.score.agreement import agreement_report

    cases = import_folder(tmp_path)
    folder = tmp_path / "imp"
    chooser = Chooser(folder, "ann", cases, "active", judge_reference(cases))
    cid = chooser.next_open({c.id: True for c in cases}, None)
    case = next(c for c in cases if c.id == cid)
    for check in case.production.claim_checks:
        append_label(folder, LabelLine(case_id=cid, claim_id=check.claim_id, label=check.verification,
                                       annotator="ann", at="2026-12-07T00:00:00Z", drawn=chooser.drawn_for(cid)))  # fmt: skip
    report = agreement_report(folder)
    assert report.notes and "not the population" in report.notes[0]
    label_plain = tmp_path / "plain"
    label_plain.mkdir()
    import_folder(label_plain)
    assert agreement_report(label_plain / "imp").notes == []
