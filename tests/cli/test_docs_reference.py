"""The documentation's reference pages come from the code: every command and flag of the parser, every key
of the file formats' models, every exit code. A flag or key added to the code is in the pages at the next
build, and one the generator does not reach fails here."""

from __future__ import annotations

import argparse

import pytest
from pydantic import BaseModel

from harness.cli import EXIT_CODES, build_parser
from harness.cli.docs_reference import reference_pages, type_of


def all_parsers(parser: argparse.ArgumentParser, prog: str = "vbench"):  # type: ignore[no-untyped-def]
    yield prog, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from all_parsers(sub, f"{prog} {name}")


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return reference_pages()


def test_every_command_and_flag_is_in_the_cli_page(pages: dict[str, str]) -> None:
    page = pages["reference/cli.md"]
    for prog, parser in all_parsers(build_parser()):
        if prog != "vbench":
            assert f"`{prog}`" in page, prog
        for action in parser._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}" in page, f"{prog} {option}"
    assert "`--max-connection-failures MAX_CONNECTION_FAILURES`" in page  # a client flag, made from the settings


def test_every_key_of_every_format_is_in_its_page(pages: dict[str, str]) -> None:
    from harness.corpus.schema import Case
    from harness.run.log import ResultRecord
    from harness.run.study import Study
    from harness.score.certificate_model import Certificate
    from harness.score.summary_model import Summary

    formats: dict[str, type[BaseModel]] = {
        "summary-json.md": Summary,
        "results-jsonl.md": ResultRecord,
        "certificate-json.md": Certificate,
        "study-file.md": Study,
        "case-format.md": Case,
    }
    for name, model in formats.items():
        page = pages[f"reference/{name}"]
        for key, field in model.model_fields.items():
            assert f"| `{field.alias or key}` |" in page, f"{name}: {key}"


def test_the_exit_codes_page(pages: dict[str, str]) -> None:
    page = pages["reference/exit-codes.md"]
    for code in EXIT_CODES:
        assert f"| `{code}` |" in page


def test_type_of_reads_refs_unions_and_arrays() -> None:
    assert type_of({"type": "array", "items": {"$ref": "#/$defs/Claim"}}) == "array of [Claim](#claim)"
    assert type_of({"anyOf": [{"type": "integer"}, {"type": "null"}]}) == "integer or null"
