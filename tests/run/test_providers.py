"""The provider registry: the spec grammar, study-file validation (file and key path, exit 2), the client flags,
and the components every run records in its manifest."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from pydantic import field_validator

from harness.cli import main
from harness.devtools.local_server import LocalOpenAIServer
from harness.llm.openai_settings import OpenAISettings as ClientSettings
from harness.run.providers import (
    NoSettings,
    OpenAIProviderSettings,
    ProviderSettings,
    build_verifier,
    client_settings,
    grammar,
    provider_of,
    providers,
    settings_for,
)
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
    assert isinstance(settings_for("openai:m", {"max_tokens": 5}), OpenAIProviderSettings)
    assert isinstance(settings_for("reference", {}), NoSettings)
    with pytest.raises(ModelSpecError, match=r'model_settings\."openai:m"\.max_atempts: Extra inputs'):
        settings_for("openai:m", {"max_atempts": 3})
    with pytest.raises(ModelSpecError, match=r'model_settings\."reference"\.max_tokens: Extra inputs'):
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
            'study.toml: model_settings."openai:m".max_tokns: Extra inputs',
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


BAD_SETTINGS = [  # (key, value): each refused by the client's settings model
    ("structured_mode", "bogus"),
    ("structured_mode", None),
    ("max_attempts", 0),
    ("max_attempts", -2),
    ("max_attempts", 2.5),
    ("max_attempts", "many"),
    ("timeout", 0),
    ("timeout", -1.0),
    ("timeout", "soon"),
    ("backoff_base", -0.1),
    ("backoff_max", -1),
    ("max_retry_after", -1),
    ("max_tokens", 0),
    ("max_tokens", "lots"),
    ("token_param", "max_output_tokens"),
    ("extra_body", [1]),
    ("transport", "curl"),
]


@pytest.mark.parametrize(("key", "value"), BAD_SETTINGS)
def test_the_registry_refuses_what_the_client_refuses(key: str, value: object) -> None:
    """One home of the client's rules: what its settings model refuses, a study's settings refuse, naming the key
    (None, "not given", is the one value only the registry takes: the client's default applies)."""
    if value is not None:
        with pytest.raises(ValueError, match=key):
            ClientSettings.model_validate({key: value})
        with pytest.raises(ModelSpecError, match=rf'^model_settings\."openai:m"\.{key}: '):
            settings_for("openai:m", {key: value})
    else:
        assert settings_for("openai:m", {key: value}).client_kwargs() == {}


def test_what_the_registry_takes_the_client_is_built_with() -> None:
    given = {
        "structured_mode": "plain",
        "max_attempts": 1,
        "timeout": 0.5,
        "backoff_base": 0,
        "backoff_max": 0,
        "max_retry_after": 0,
        "max_connection_failures": 2,
        "max_tokens": 1,
        "token_param": "max_completion_tokens",
        "extra_body": {"top_k": 5},
        "transport": "httpx",
    }
    assert set(given) == set(ClientSettings.model_fields)  # every client setting
    settings = settings_for("openai:m", {**given, "base_url": "http://127.0.0.1:9/v1"})
    built = build_verifier("openai:m", "baseline", settings)
    client = built.describe()["model"]["settings"]  # type: ignore[index]
    assert client == {**ClientSettings().model_dump(mode="json"), **given}
    assert settings.recorded() == {**given, "base_url": "http://127.0.0.1:9/v1"}  # only what was given
    assert settings_for("openai:m", {}).recorded() == {"extra_body": {}}  # as run logs have always recorded it


def test_the_provider_settings_are_built_from_the_clients() -> None:
    fields = OpenAIProviderSettings.model_fields
    assert set(fields) == set(ClientSettings.model_fields) | {"base_url", "api_key_env"}
    client, registry = (m.model_json_schema()["properties"] for m in (ClientSettings, OpenAIProviderSettings))
    for name, field in ClientSettings.model_fields.items():
        rule = {k: v for k, v in client[name].items() if k not in ("default", "description", "title")}
        if "anyOf" not in rule and field.default_factory is None:
            rule = {"anyOf": [rule, {"type": "null"}]}  # optional: None leaves the client's default
        assert {k: v for k, v in registry[name].items() if k not in ("default", "description", "title")} == rule, name
        assert (fields[name].description or "").startswith(field.description or "?"), name  # the same help

    class Checked(ClientSettings):
        @field_validator("timeout")
        @classmethod
        def _whole(cls, value: float) -> float:
            return value

    with pytest.raises(TypeError, match="validators"):  # a rule the copy would miss is refused at import
        client_settings(Checked, ProviderSettings)


STUDY_TEXTS = {
    ".toml": '{common}[model_settings."openai:m"]\nbase_url = "http://127.0.0.1:9/v1"\n{key} = {value}\n',
    ".yaml": '{common}model_settings:\n  "openai:m":\n    base_url: "http://127.0.0.1:9/v1"\n    {key}: {value}\n',
}


@pytest.mark.parametrize("suffix", [".toml", ".yaml"])
@pytest.mark.parametrize(
    ("key", "value", "error"),
    [
        ("structured_mode", '"bogus"', "Input should be 'json_schema', 'json_object' or 'plain'"),
        ("max_attempts", "0", "Input should be greater than or equal to 1"),
        ("timeout", '"soon"', "Input should be a valid number"),
    ],
)
def test_a_bad_client_setting_in_a_study_file_exits_2_naming_file_and_key(
    tmp_path: Path, suffix: str, key: str, value: str, error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = write_corpus(tmp_path / "cases", ["q1"])
    common = f'cases = ["{cases}"]\nmodels = ["openai:m"]\ncache = "{tmp_path / "cache"}"\n'
    if suffix == ".yaml":
        common = f'cases: ["{cases}"]\nmodels: ["openai:m"]\ncache: "{tmp_path / "cache"}"\n'
    study = tmp_path / f"study{suffix}"
    study.write_text(STUDY_TEXTS[suffix].format(common=common, key=key, value=value))
    assert main(["run", "--study", str(study), "--out", str(tmp_path / "out"), "--no-report"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f'{study}: model_settings."openai:m".{key}: {error}' in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("flag", "value", "error"),
    [
        ("--structured-mode", "bogus", "argument --structured-mode: invalid choice: 'bogus'"),
        ("--token-param", "max_output_tokens", "argument --token-param: invalid choice: 'max_output_tokens'"),
        ("--max-attempts", "0", "--max-attempts: Input should be greater than or equal to 1"),
        ("--timeout", "0", "--timeout: Input should be greater than 0"),
        ("--backoff-base", "-1", "--backoff-base: Input should be greater than or equal to 0"),
        ("--max-tokens", "0", "--max-tokens: Input should be greater than or equal to 1"),
        ("--max-attempts", "many", "argument --max-attempts: invalid int value: 'many'"),
        ("--timeout", "soon", "argument --timeout: invalid float value: 'soon'"),
        ("--extra-body", "[1]", "--extra-body must be a JSON object"),
    ],
)
def test_a_bad_client_flag_exits_2_naming_the_flag(
    tmp_path: Path, flag: str, value: str, error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = write_corpus(tmp_path / "cases", ["q1"])
    args = ["run", "--cases", str(cases), "--model", "openai:m", "--base-url", "http://127.0.0.1:9/v1"]
    args += ["--out", str(tmp_path / "out"), "--no-cache", "--no-report", flag, value]
    assert main(args) == 2
    assert error in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "out").exists()


def test_every_client_setting_is_a_flag_and_every_client_flag_a_setting() -> None:
    """The client flags are made from the registry's settings models: one per field, none without a field."""
    from harness.cli import build_parser
    from harness.cli.client_flags import flag_of

    parser = build_parser(["run"])._subparsers._group_actions[0].choices["run"]  # type: ignore[union-attr]
    (group,) = [g for g in parser._action_groups if (g.title or "").startswith("client settings")]
    flags = {option for action in group._group_actions for option in action.option_strings}
    fields = {name for provider in providers() for name in provider.settings.model_fields}
    assert flags == {flag_of(name) for name in fields}
    assert flags >= {  # the flags users have always had
        "--base-url",
        "--max-tokens",
        "--timeout",
        "--max-attempts",
        "--max-retry-after",
        "--structured-mode",
        "--extra-body",
        "--transport",
    }


def test_client_flags_override_the_study_file_per_key(tmp_path: Path) -> None:
    from harness.cli import build_parser
    from harness.cli.run import study_from_args

    study = tmp_path / "study.toml"
    study.write_text('models = ["openai:m"]\n[model_settings."openai:m"]\nmax_tokens = 9\ntimeout = 5\n')
    argv = ["run", "--study", str(study), "--timeout", "7", "--token-param", "max_completion_tokens"]
    settings = study_from_args(build_parser(["run"]).parse_args(argv)).model_settings["openai:m"]
    assert settings.recorded() == {
        "max_tokens": 9,
        "timeout": 7.0,
        "token_param": "max_completion_tokens",
        "extra_body": {},
    }


def test_client_flags_no_model_takes_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = write_corpus(tmp_path / "cases", ["q1"])
    args = ["run", "--cases", str(cases), "--model", "reference", "--max-tokens", "9", "--out", str(tmp_path / "o")]
    assert main(args) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "client flags (max_tokens) given, but no model of this run takes them (reference)" in err
    assert "add --model 'openai:<model>'" in err and not (tmp_path / "o").exists()


def test_client_flags_reach_only_the_models_that_take_them() -> None:
    from harness.cli import build_parser
    from harness.cli.client_flags import apply_client_flags

    args = build_parser(["run"]).parse_args(["run", "--model", "reference", "--model", "openai:m", "--timeout", "7"])
    study = apply_client_flags(Study(models=["reference", "openai:m"]), args)
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
