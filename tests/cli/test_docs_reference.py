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


def rendered_text(page: str) -> str:
    """The page as a reader sees it: Markdown to HTML (as mkdocs renders it), then the text of the HTML."""
    import html.parser

    import markdown

    class Text(html.parser.HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.parts: list[str] = []

        def handle_data(self, data: str) -> None:
            self.parts.append(data)

    parser = Text()
    parser.feed(markdown.markdown(page, extensions=["tables", "fenced_code"]))
    return " ".join(" ".join(parser.parts).split())


def test_placeholders_in_angle_brackets_survive_rendering(pages: dict[str, str]) -> None:
    """`FOLDER/labels/<name>.jsonl` must not render as `FOLDER/labels/.jsonl`: every help text's words are in the
    rendered page, and no page leaves a bare `<word` outside code for Markdown to read as a tag."""
    import re

    text = rendered_text(pages["reference/cli.md"])
    helps = [a.help for _, p in all_parsers(build_parser()) for a in p._actions if a.help and "<" in a.help]
    assert any("labels/<name>.jsonl" in h for h in helps)
    for help_text in helps:
        for placeholder in re.findall(r"\S*<[^>\s]+>\S*", help_text):
            assert placeholder.strip("(),;'") in text, placeholder
    for name, page in pages.items():
        prose = re.sub(r"```.*?```|`[^`\n]*`|<!--.*?-->", "", page, flags=re.S)
        assert not re.search(r"<[A-Za-z/]", prose), (name, re.search(r".{30}<[A-Za-z/].{30}", prose))


def test_every_argument_says_what_it_does() -> None:
    """A flag or positional without a help text is a blank row in the reference."""
    blank = [
        f"{prog} {'/'.join(a.option_strings) or a.dest}"
        for prog, parser in all_parsers(build_parser())
        for a in parser._actions
        if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) and not a.help
    ]
    assert blank == []


def test_the_site_loads_no_web_fonts_and_its_serve_line_installs_mkdocs() -> None:
    """mkdocs-material fetches Google Fonts unless `theme.font` is false (a page offline waits on them); the
    README's way to browse the site names the extra that brings mkdocs."""
    import re
    import tomllib
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[2]
    site = yaml.safe_load((root / "mkdocs.yml").read_text(encoding="utf-8"))
    assert site["theme"]["font"] is False
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    readme = (root / "README.md").read_text(encoding="utf-8")
    serve_lines = re.findall(r"pip install[^`\n]*mkdocs serve", readme)
    assert serve_lines
    for line in serve_lines:
        (extra,) = re.findall(r"\.\[(\w+)\]", line)
        assert any(req.startswith("mkdocs") for req in extras[extra]), line
