"""The provider registry: the spec grammar, study-file validation (file and key path, exit 2), the client flags,
and the components every run records in its manifest."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from harness.cli import main
from harness.devtools.local_server import LocalOpenAIServer
from harness.run.providers import NoSettings, OpenAISettings, build_verifier, grammar, provider_of, settings_for
from harness.run.study import Study, StudyError, build_study
from harness.system.verifiers.base import Verifier
from harness.system.verifiers.factory import ModelSpec, ModelSpecError, parse_model_spec
from tests.run.corpus_builder import write_corpus

API_KEY = "sk-provider-test-KEY-71f3"


def test_one_parser_reads_every_spec_and_the_registry_judges_it() -> None:
    assert parse_model_spec(" openai: gpt-4o-mini ") == ModelSpec("openai", "gpt-4o-mini")
    assert parse_model_spec("reference") == ModelSpec("reference", None)
    assert provider_of("openai:m").takes_prompt and not provider_of("reference").takes_prompt
    assert grammar() == "'reference' or 'openai:<model>'"
    for bad in ("openai:", "openai", "reference:x", "anthropic:claude", ""):
        with pytest.raises(ModelSpecError, match=r"unknown model spec.*'reference' or 'openai:<model>'"):
            provider_of(bad)


def test_settings_go_through_their_provider_model() -> None:
    assert isinstance(settings_for("openai:m", {"max_tokens": 5}), OpenAISettings)
    assert isinstance(settings_for("reference", {}), NoSettings)
    with pytest.raises(ModelSpecError, match=r"model_settings\.openai:m\.max_atempts: Extra inputs"):
        settings_for("openai:m", {"max_atempts": 3})
    with pytest.raises(ModelSpecError, match=r"model_settings\.reference\.max_tokens: Extra inputs"):
        settings_for("reference", {"max_tokens": 3})
    built = build_verifier("openai:m", "baseline", settings_for("openai:m", {"base_url": "http://127.0.0.1:9/v1"}))
    assert isinstance(built, Verifier) and built.describe()["model"]["base_url"] == "http://127.0.0.1:9/v1"  # type: ignore[index]
    assert build_verifier("reference", "baseline").name == "reference"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('models = ["anthropic:claude"]\n', "study.toml: models: Value error, unknown model spec 'anthropic:claude'"),
        (
            'models = ["openai:m"]\n[model_settings."openai:m"]\nmax_tokns = 5\n',
            "study.toml: model_settings: Value error, model_settings.openai:m.max_tokns: Extra inputs",
        ),
        (
            'models = ["openai:m"]\n[model_settings."nosuch:m"]\nmax_tokens = 5\n',
            "study.toml: model_settings: Value error, unknown model spec 'nosuch:m'",
        ),
    ],
)
def test_a_study_file_names_the_file_and_key_of_a_bad_provider_or_setting(
    tmp_path: Path, text: str, error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    study = tmp_path / "study.toml"
    study.write_text(text)
    assert main(["run", "--study", str(study), "--out", str(tmp_path / "out")]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"{tmp_path}/{error}" in err
    assert not (tmp_path / "out").exists()
    with pytest.raises(StudyError, match=r"max_tokns|unknown model spec"):
        build_study(tomllib.loads(text), {}, source="study.toml")


def test_client_flags_no_model_takes_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = write_corpus(tmp_path / "cases", ["q1"])
    args = ["run", "--cases", str(cases), "--model", "reference", "--max-tokens", "9", "--out", str(tmp_path / "o")]
    assert main(args) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "client flags (max_tokens) given, but no model of this run takes them (reference)" in err
    assert "add --model 'openai:<model>'" in err and not (tmp_path / "o").exists()


def test_client_flags_reach_only_the_models_that_take_them() -> None:
    from harness.cli import build_parser
    from harness.cli.run import _apply_client_flags

    args = build_parser(["run"]).parse_args(["run", "--model", "reference", "--model", "openai:m", "--timeout", "7"])
    study = _apply_client_flags(Study(models=["reference", "openai:m"]), args)
    assert set(study.model_settings) == {"openai:m"}
    assert study.model_settings["openai:m"].client_kwargs() == {"timeout": 7.0}


def test_the_manifest_records_every_component_without_a_secret(
    tmp_path: Path, openai_server: LocalOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROVIDER_TEST_KEY", API_KEY)
    study = tmp_path / "study.toml"
    study.write_text(
        f'[model_settings."openai:local-model"]\nbase_url = "{openai_server.base_url}"\n'
        'api_key_env = "PROVIDER_TEST_KEY"\nstructured_mode = "json_object"\n'
    )
    cases = write_corpus(tmp_path / "cases", ["q1", "q2"])
    args = [
        "run",
        "--study",
        str(study),
        "--cases",
        str(cases),
        "--model",
        "reference",
        "--model",
        "openai:local-model",
    ]
    args += ["--out", str(tmp_path / "run"), "--cache", str(tmp_path / "cache"), "--no-report"]
    assert main(args) in (0, 1)
    text = (tmp_path / "run" / "manifest.json").read_text()
    components = json.loads(text)["components"]
    llm = components["openai:local-model@baseline"]
    assert llm["provider"] == "openai" and components["reference"]["provider"] == "reference"
    client = llm["verifier"]["model"]
    assert client["base_url"] == openai_server.base_url and client["structured_mode_in_use"] == "json_object"
    assert "structured_mode_refusals" in client
    assert llm["verifier"]["prompt"]["name"] == "baseline" and llm["verifier"]["prompt"]["hash"]
    assert llm["replay_identity"]["prompt"]["hash"] == llm["verifier"]["prompt"]["hash"]  # a cache: replayable
    assert components["reference"]["replay_identity"] is None  # no response cache: nothing replays
    assert components["reference"]["verifier"]["version"]
    assert API_KEY not in text and "PROVIDER_TEST_KEY" in text  # the variable's name, never its value
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert {m["key"] for m in summary["metrics"]} >= {"verdict_accuracy", "claim_accuracy", "unsafe_pass_rate"}
