"""The local llama.cpp run's closing note (harness.report.local_note), read from a server log and a summary."""

from __future__ import annotations

import pytest

from harness.report.local_note import closing_note, server_figures
from harness.score.summary_model import Summary
from tests.devtools.test_llamacpp_local_llm import SERVER_LOG


def test_server_figures_pool_the_timings_and_count_500s():
    figures = server_figures(SERVER_LOG)
    assert figures["prompt_tok_s"] == pytest.approx(200.0)  # 400 tokens in 2 s, not the mean of 100 and 300
    assert figures["gen_tok_s"] == pytest.approx(50.0)
    assert figures["http_500"] == 1
    assert server_figures("") == {"http_500": 0.0}


def test_closing_note_without_a_log_has_no_server_line() -> None:
    summary = {"run": {"run_id": "r"}, "conformance": {}, "variants": [{"name": "reference", "model": "reference"}]}
    summary["variants"][0] |= {"verdict_accuracy": 1.0, "quality_cases": 3}
    text = closing_note(Summary.model_validate(summary))
    assert text.startswith("## Local LLM: closing note\n")
    assert "| reference | 3 | 0 | 100% | n/a |" in text
    assert "Server:" not in text
