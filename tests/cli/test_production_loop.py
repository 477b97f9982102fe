"""The whole loop from production to a corpus, as a user runs it: sessions persisted by the service (made from
the disk quality cases by the project's fixture generator) are imported from JSONL, SQLite and PostgreSQL into
one folder; two annotators label them, one with the keyboard in headless Chromium and both over HTTP; then
agreement, export, validate, run, and the report's agreement section."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import httpx
import pytest
from sqlalchemy import JSON
from sqlalchemy.dialects.postgresql import JSONB

from harness.cli import main
from harness.corpus.loader import load_cases
from harness.corpus.sessions import load_imported
from harness.devtools.production_sessions import session_id_for
from harness.report.browser import find_chromium
from harness.system.models import Derivability
from tests.corpus.production import QUALITY, jsonl, rows, session_table
from tests.report.cdp import open_page
from tests.report.label_server import label_server
from tests.report.test_label_browser import SAVED, press, settled

QUERY = "SELECT id, session, executor FROM diagnosis_export ORDER BY id"
OTHER = {d.value: list(Derivability)[(i + 3) % 6].value for i, d in enumerate(Derivability)}


def http_label(url: str, case_id: str, answers: dict[str, str]) -> None:
    page = httpx.get(f"{url}/case/{case_id}").text
    token = re.search(r'name="token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    for claim_id, value in answers.items():
        r = httpx.post(f"{url}/case/{case_id}/label", data={"token": token, "claim_id": claim_id, "label": value})
        assert r.status_code == 303


LABELS_SHOWN = "JSON.stringify(Array.from(document.querySelectorAll('section.claim')).map(s => s.dataset.label))"


async def keyboard_label(url: str, keys: list[str]) -> list[str]:
    async with open_page(url) as page:
        await settled(page, "document.querySelector('section.claim.current') !== null")
        for key in keys:
            await press(page, key)
        await settled(page, SAVED)  # on disk; the page has gone on to the next open session
        await page.send("Page.navigate", url=url)
        await settled(page, f"location.href === {json.dumps(url)} && document.querySelectorAll('section.claim').length")
        return list(json.loads(await page.evaluate(LABELS_SHOWN)))


def test_production_to_corpus(postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if find_chromium() is None:
        pytest.skip("no chromium binary")
    source = rows()
    third = len(source) // 3
    folder = tmp_path / "sessions"
    # 1. import: a third from each source, into one folder
    assert main(["import", "sessions", str(jsonl(tmp_path / "a.jsonl", source[:third])), "--out", str(folder)]) == 0
    sqlite = f"sqlite:///{tmp_path / 'prod.db'}"
    session_table(sqlite, "diagnosis_export", JSON, source[third : 2 * third])
    assert main(["import", "sessions", sqlite, "--query", QUERY, "--out", str(folder)]) == 0
    session_table(postgres_url, "diagnosis_export", JSONB, source[2 * third :])
    assert main(["import", "sessions", postgres_url, "--query", QUERY, "--out", str(folder)]) == 0
    imported = load_imported(folder)
    assert sorted(c.id for c in imported) == sorted(r["id"] for r in source)
    capsys.readouterr()
    assert main(["cases", "validate", str(folder)]) == 2
    out = capsys.readouterr()
    assert "meta.unlabelled: unlabelled" in out.out + out.err

    # 2. label: ann1 gives the gold labels of the cases the sessions came from, ann2 differs on every third claim
    gold = {session_id_for(c.id): c.expected.acceptable_labels() for c in load_cases([QUALITY])}
    keyboard_case = imported[0]
    with label_server(folder, "ann1", tmp_path) as one, label_server(folder, "ann2", tmp_path) as two:
        for n, case in enumerate(imported):
            ids = [c.claim_id for c in case.prepared().claims]
            first = {cid: sorted(gold[case.id][cid])[0].value for cid in ids}
            second = {cid: (OTHER[v] if (n + i) % 3 == 0 else v) for i, (cid, v) in enumerate(first.items())}
            if case is keyboard_case:
                keys = [str(list(Derivability).index(Derivability(first[cid])) + 1) for cid in ids]
                shown = asyncio.run(keyboard_label(f"{one.url}/case/{case.id}", keys))
                assert shown == [first[cid] for cid in ids]
            else:
                http_label(one.url, case.id, first)
            http_label(two.url, case.id, second)

    # 3. agreement
    assert main(["agreement", str(folder)]) == 0
    agreement = json.loads((folder / "agreement.json").read_text())
    (pair,) = agreement["pairs"]
    total = sum(len(c.prepared().claims) for c in imported)
    assert pair["claims"] == total and 0 < pair["percent_agreement"] < 1
    assert {v["annotator"] for v in agreement["vs_verifier"]} == {"ann1", "ann2"}
    assert {v["annotator"] for v in agreement["verdicts"]["vs_verifier"]} == {"ann1", "ann2"}

    # 4. export, validate, run, report
    cases = tmp_path / "corpus"
    assert main(["label", "export", str(folder), "--out", str(cases)]) == 0
    assert len(list(cases.glob("*.yaml"))) == len(imported)
    assert main(["cases", "validate", str(cases)]) == 0
    run = tmp_path / "run"
    assert main(["run", "--cases", str(cases), "--out", str(run), "--no-cache"]) == 0
    results = [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]
    assert {r["case_id"] for r in results} == {c.id for c in imported}
    assert main(["report", str(run), "--agreement", str(folder / "agreement.json")]) == 0
    html = (run / "report.html").read_text()
    first_disagreement = agreement["disagreements"][0]
    assert f'href="http://127.0.0.1:8765/case/{first_disagreement["case_id"]}"' in html
