"""`vbench run --perturb`: robustness units over real HTTP, and their absence from every headline figure.

Two scripted models behind the local OpenAI-compatible server: a position-biased one that labels the claim it
reads first in the prompt's structured claims `direct_observation` (the rest by their gold), and an unbiased one
that answers the gold. Under `claim-order` only the biased one may flip.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.corpus.perturb import PERTURBATIONS
from harness.devtools.local_server import LocalOpenAIServer
from harness.devtools.responders import claim_ids_in, last_user_message
from harness.run.folder import read_manifest, read_results
from tests.report.conftest import embedded
from tests.run.corpus_builder import GOLD, write_corpus

CASE_ID = re.compile(r"\[(q\d+)\]")
BIASED, UNBIASED = "openai:biased", "openai:unbiased"


def first(value: Any) -> str:
    return value[0] if isinstance(value, list) else value


def scripted(body: dict[str, Any]) -> str:
    """The gold answer of the case named in the question; the biased model calls its first-read claim observed."""
    text = last_user_message(body)
    labels, verdict = GOLD[CASE_ID.search(text).group(1)]  # type: ignore[union-attr]
    ids = claim_ids_in(text)
    checks = []
    for position, cid in enumerate(ids):
        label = first(labels[cid])
        if body.get("model") == "biased" and position == 0:
            label = "direct_observation"
        checks.append({"claim_id": cid, "verification": label, "detail": "scripted", "evidence_refs": []})
    reply = {
        "verdict": first(verdict),
        "groundedness_score": 0.9,
        "critical_fact_count": len(ids),
        "claim_checks": checks,
        "facts_checked": [],
        "rationale": "scripted",
    }
    return json.dumps(reply)


def run_args(server: LocalOpenAIServer, corpus: Path, out: Path, *extra: str) -> list[str]:
    return [
        "run",
        "--cases",
        str(corpus),
        "--model",
        BIASED,
        "--model",
        UNBIASED,
        "--base-url",
        server.base_url,
        "--out",
        str(out),
        "--no-cache",
        "--no-report",
        *extra,
    ]


@pytest.fixture
def scripted_server(openai_server: LocalOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> LocalOpenAIServer:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-perturb")
    openai_server.responder = scripted
    return openai_server


def variant(summary: dict[str, Any], model: str) -> dict[str, Any]:
    return next(v for v in summary["variants"] if v["name"] == f"{model}@baseline")


def headline(summary: dict[str, Any]) -> dict[str, Any]:
    """Every figure of summary.json but the run's identity, the timings and the robustness block."""
    timing = {"latency_ms_p50", "latency_ms_p95", "harness_cpu_ms_per_case", "harness_cpu_ms_p50", "harness_cpu_ms_p95"}
    variants = [
        {
            k: v
            for k, v in var.items()
            if k != "robustness" and "latency" not in k and "cpu" not in k and k not in timing
        }
        for var in summary["variants"]
    ]
    return {
        "variants": variants,
        "comparisons": summary["comparisons"],
        "conformance": summary["conformance"],
        "decisions": summary["decisions"],
        "gates": summary["gates"],
        "results": summary["run"]["results"],
    }


def test_biased_model_flips_under_claim_order_and_unbiased_does_not(
    tmp_path: Path, scripted_server: LocalOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = write_corpus(tmp_path / "cases")
    plain, perturbed = tmp_path / "plain", tmp_path / "perturbed"
    assert main(run_args(scripted_server, corpus, plain, "--epochs", "2")) in (0, 1)
    requests_plain = scripted_server.request_count
    code = main(run_args(scripted_server, corpus, perturbed, "--epochs", "2", "--perturb", "claim-order"))
    assert code in (0, 1)
    console = capsys.readouterr().out
    assert "robustness" in console and "claim-order" in console and "0.357" in console  # the biased claim flips
    # every quality case again under the perturbation, per variant and epoch: twice the requests
    assert scripted_server.request_count - requests_plain == 2 * requests_plain

    summary = json.loads((perturbed / "summary.json").read_text())
    biased = variant(summary, BIASED)["robustness"]["claim-order"]
    unbiased = variant(summary, UNBIASED)["robustness"]["claim-order"]
    for figures in (biased, unbiased):
        assert set(figures) >= {
            "verdict_flip_rate",
            "verdict_flip_rate_ci",
            "claim_flip_rate",
            "claim_flip_rate_ci",
            "cases",
            "verdict_accuracy",
            "claim_accuracy",
        }
        assert figures["cases"] == 7 and figures["units"] == 14
    # by hand: the biased model relabels C2 (q2, q3, q6) and C1 (q4, q5) when they swap places: 5 of 7 cases,
    # one of two claims each, in both epochs
    assert biased["claim_flip_rate"] == pytest.approx(5 / 14)
    assert biased["claim_flip_rate_ci"][1] > 0
    assert unbiased["claim_flip_rate"] == 0 and unbiased["verdict_flip_rate"] == 0
    assert unbiased["claim_accuracy"] == 1.0

    # the perturbed units never reach a headline figure: the run equals the one without --perturb
    plain_summary = json.loads((plain / "summary.json").read_text())
    assert "robustness" not in plain_summary["variants"][0]
    assert headline(summary) == headline(plain_summary)
    assert summary["run"]["perturbed_results"] == 28
    assert _rows(perturbed / "outcomes.jsonl") == _rows(plain / "outcomes.jsonl")
    assert (perturbed / "junit.xml").read_text().count("<testcase") == (plain / "junit.xml").read_text().count(
        "<testcase"
    )

    records = read_results(perturbed)
    robustness_units = [r for r in records if r.perturbation is not None]
    assert len(robustness_units) == 28 and {r.perturbation for r in robustness_units} == {"claim-order"}
    assert all(r.perturbation_seed is not None and r.case_id in GOLD for r in robustness_units)
    assert len({r.key for r in records}) == len(records)  # their own keys: nothing overwrote an original
    manifest = read_manifest(perturbed)
    assert manifest.settings["perturb"] == ["claim-order"] and isinstance(manifest.settings["perturb_seed"], int)
    assert manifest.settings["perturbed_cases"] == {"claim-order": 7}
    assert len((perturbed / "cases.jsonl").read_text().splitlines()) == 8  # the originals only


def _rows(path: Path) -> list[dict[str, Any]]:
    return sorted((json.loads(line) for line in path.read_text().splitlines()), key=json.dumps)


def test_claim_ids_are_read_back_through_the_map(tmp_path: Path, scripted_server: LocalOpenAIServer) -> None:
    """The unbiased model answers renamed claims by their gold: no flip once the ids are read back."""
    corpus = write_corpus(tmp_path / "cases")

    def by_renamed_gold(body: dict[str, Any]) -> str:
        reply = json.loads(scripted(_renamed_to_original(body)))
        names = claim_ids_in(last_user_message(body))
        originals = claim_ids_in(last_user_message(_renamed_to_original(body)))
        back = dict(zip(originals, names, strict=True))
        for check in reply["claim_checks"]:
            check["claim_id"] = back[check["claim_id"]]
        return json.dumps(reply)

    scripted_server.responder = by_renamed_gold
    out = tmp_path / "run"
    assert main(run_args(scripted_server, corpus, out, "--perturb", "claim-ids")) in (0, 1)
    summary = json.loads((out / "summary.json").read_text())
    figures = variant(summary, UNBIASED)["robustness"]["claim-ids"]
    assert figures["cases"] == 7 and figures["claim_flip_rate"] == 0 and figures["claim_accuracy"] == 1.0
    maps = [r.claim_id_map for r in read_results(out) if r.perturbation == "claim-ids"]
    assert maps and all(m and sorted(m.values()) == ["C1", "C2"] for m in maps)


def _renamed_to_original(body: dict[str, Any]) -> dict[str, Any]:
    """The request with its claim ids put back to C1, C2... in the order they appear (the gold is keyed so)."""
    text = last_user_message(body)
    names = claim_ids_in(text)
    for number, name in enumerate(names, start=1):
        text = text.replace(f'"claim_id": "{name}"', f'"claim_id": "C{number}"')
    return {**body, "messages": [{"role": "user", "content": text}]}


def test_unknown_perturbation_exits_2_listing_the_names(
    tmp_path: Path, scripted_server: LocalOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = write_corpus(tmp_path / "cases")
    code = main(run_args(scripted_server, corpus, tmp_path / "run", "--perturb", "claim-order,shuffle"))
    assert code == 2
    err = capsys.readouterr().err
    assert "shuffle" in err and all(name in err for name in PERTURBATIONS)
    assert scripted_server.request_count == 0


def test_a_perturbation_that_applies_to_nothing_exits_2(
    tmp_path: Path, scripted_server: LocalOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every demo case shares one incident and no JSON result: nothing to draw a distractor from or re-lay out."""
    corpus = write_corpus(tmp_path / "cases")
    code = main(run_args(scripted_server, corpus, tmp_path / "run", "--perturb", "format"))
    assert code == 2
    assert "format" in capsys.readouterr().err and scripted_server.request_count == 0
    assert not (tmp_path / "run").exists()  # refused before anything is written
    assert main(run_args(scripted_server, corpus, tmp_path / "run", "--perturb-seed", "3")) == 2
    assert "perturb_seed" in capsys.readouterr().err and scripted_server.request_count == 0


def test_study_key_perturb(tmp_path: Path, scripted_server: LocalOpenAIServer) -> None:
    corpus = write_corpus(tmp_path / "cases", with_policy=False)
    study = tmp_path / "study.toml"
    study.write_text('perturb = ["invocation-order"]\nperturb_seed = 5\n')
    out = tmp_path / "run"
    assert main([*run_args(scripted_server, corpus, out), "--study", str(study)]) in (0, 1)
    manifest = read_manifest(out)
    assert manifest.settings["perturb"] == ["invocation-order"] and manifest.settings["perturb_seed"] == 5
    summary = json.loads((out / "summary.json").read_text())
    figures = variant(summary, UNBIASED)["robustness"]["invocation-order"]
    assert figures["cases"] == 7 and figures["verdict_flip_rate"] == 0


def test_report_shows_robustness_and_lists_no_perturbed_unit(
    tmp_path: Path, scripted_server: LocalOpenAIServer
) -> None:
    corpus = write_corpus(tmp_path / "cases")
    out = tmp_path / "run"
    assert main(run_args(scripted_server, corpus, out, "--perturb", "claim-order,invocation-order")) in (0, 1)
    assert main(["report", str(out)]) == 0
    page = (out / "report.html").read_text()
    section = page[page.index('<section id="robustness">') : page.index("</section>", page.index('id="robustness"'))]
    rows = re.findall(r"<tr><td class=\"name\">([^<]+)</td><td class=\"mono\">([^<]+)</td>", section)
    assert sorted(rows) == sorted(
        (f"{m}@baseline", p) for m in (BIASED, UNBIASED) for p in ("claim-order", "invocation-order")
    )
    summary = json.loads((out / "summary.json").read_text())
    biased = variant(summary, BIASED)["robustness"]["claim-order"]
    assert f"{100 * biased['claim_flip_rate']:.1f}%" in section
    # the case list embeds every headline result and no robustness unit (same ids, same variants: count them)
    data = embedded(out / "report.html")
    assert len(data["records"]) == 1 + 2 * 7 == summary["run"]["results"]
    assert summary["run"]["perturbed_results"] == 2 * 2 * 7
    # a report rendered again from the log is not thrown off by the extra lines (counts match, nothing rescored)
    before = (out / "summary.json").read_text()
    assert main(["report", str(out)]) == 0
    assert (out / "summary.json").read_text() == before


def test_resume_and_replay_keep_robustness_units_apart(tmp_path: Path, scripted_server: LocalOpenAIServer) -> None:
    corpus = write_corpus(tmp_path / "cases")
    cache = tmp_path / "cache"
    out = tmp_path / "run"
    args = [a for a in run_args(scripted_server, corpus, out, "--perturb", "claim-order") if a != "--no-cache"]
    args += ["--cache", str(cache)]
    assert main(args) in (0, 1)
    sent = scripted_server.request_count
    assert sent == 2 * 2 * 7
    first_summary = json.loads((out / "summary.json").read_text())
    # resuming the finished run redoes nothing; resuming it with other perturbations or another seed is refused
    assert main([*args, "--resume"]) in (0, 1) and scripted_server.request_count == sent
    assert main([*args, "--resume", "--perturb", "claim-ids"]) == 2
    assert main([*args, "--resume", "--perturb-seed", "9"]) == 2
    # a warm rerun replays every quality unit, the perturbed ones as robustness units still
    again = tmp_path / "again"
    assert main([*[str(again) if a == str(out) else a for a in args]]) in (0, 1)
    assert scripted_server.request_count == sent
    records = read_results(again)
    perturbed = [r for r in records if r.perturbation is not None]
    assert len(perturbed) == 14 and all(r.replayed and r.perturbation == "claim-order" for r in perturbed)
    summary = json.loads((again / "summary.json").read_text())
    for a, b in zip(summary["variants"], first_summary["variants"], strict=True):
        assert a["robustness"] == b["robustness"] and a["claim_accuracy"] == b["claim_accuracy"]
