"""The documentation site's reference pages, generated from the code so that they cannot go stale.

Every command and flag comes from the argparse parser `vbench` itself builds; the file formats
(summary.json, results.jsonl, certificate.json, the study file, the case format) from the pydantic models
that write and read them; the exit codes from `harness.cli.EXIT_CODES`. `mkdocs build` writes these pages
at build time (`docs_build/gen_reference.py`, the gen-files plugin); nothing here is kept by hand.
"""

from __future__ import annotations

import argparse
import html
import json
from typing import Any

from pydantic import BaseModel

from harness.cli import EXIT_CODES, build_parser

PAGES_DIR = "reference"


def reference_pages() -> dict[str, str]:
    """Path under the docs folder -> Markdown."""
    from harness.corpus.schema import Case
    from harness.run.log import Manifest, ResultRecord
    from harness.run.providers import OpenAIProviderSettings
    from harness.run.study import Study
    from harness.score.certificate_model import Certificate
    from harness.score.summary_model import Summary

    formats: dict[str, tuple[str, str, list[type[BaseModel]]]] = {
        "summary-json.md": ("summary.json", "The scored run: conformance, figures per variant, decisions and gates. "
                            "Keys are only ever added.", [Summary]),
        "results-jsonl.md": ("results.jsonl", "One line per case × variant × epoch, appended the moment it finishes "
                             "(`--resume` reads it back). The manifest.json of the run folder is below it.",
                             [ResultRecord, Manifest]),
        "certificate-json.md": ("certificate.json", "What was certified, by which code, against which spec, and how "
                                "far.", [Certificate]),
        "study-file.md": ("The study file", "A TOML or YAML file with the keys below (`vbench run --study FILE`, or "
                          "`vbench.toml` in the current folder); every key is also a flag, and flags win. "
                          '`model_settings."openai:<model>"` takes the client settings of the second table.',
                          [Study, OpenAIProviderSettings]),
        "case-format.md": ("The case format", "One YAML file per case (`vbench cases validate` checks it strictly: "
                           "every error names the file and the key path). Unknown keys are errors.", [Case]),
    }  # fmt: skip
    pages = {f"{PAGES_DIR}/cli.md": cli_page(), f"{PAGES_DIR}/exit-codes.md": exit_codes_page()}
    for name, (title, intro, models) in formats.items():
        pages[f"{PAGES_DIR}/{name}"] = schema_page(title, intro, models)
    return pages


GENERATED = "<!-- generated from the code by harness/cli/docs_reference.py at build time: do not edit -->\n"


# --- the command line -------------------------------------------------------------------------


def cli_page() -> str:
    """Every command, subcommand and flag of `vbench`, from its parser."""
    parser = build_parser()
    lines = [GENERATED, "# Command line", "", "Every command and flag of `vbench`, read from its parser.", ""]
    lines += _parser_section(parser, "vbench", level=2)
    return "\n".join(lines) + "\n"


def _subparsers(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser, str]]:
    out: list[tuple[str, argparse.ArgumentParser, str]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                out.append((name, sub, helps.get(name, "")))
    return out


def _parser_section(parser: argparse.ArgumentParser, prog: str, level: int) -> list[str]:
    lines: list[str] = []
    usage = parser.format_usage().removeprefix("usage: ").strip()
    lines += ["```text", usage, "```", ""]
    if parser.description:
        lines += [_text(parser.description), ""]
    rows = _flag_rows(parser)
    if rows:
        lines += ["| argument | what it does |", "|---|---|", *rows, ""]
    for name, sub, help_text in _subparsers(parser):
        lines += [f"{'#' * level} `{prog} {name}`", ""]
        if help_text:
            lines += [_text(help_text[0].upper() + help_text[1:]) + ".", ""]
        lines += _parser_section(sub, f"{prog} {name}", min(level + 1, 6))
    return lines


def _flag_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if action.option_strings:
            metavar = action.metavar or (action.dest.upper() if action.nargs != 0 else None)
            if action.choices and not action.metavar:
                metavar = "{" + ",".join(map(str, action.choices)) + "}"
            names = ", ".join(f"`{o}{' ' + str(metavar) if metavar else ''}`" for o in action.option_strings)
        else:
            names = f"`{action.metavar or action.dest}`"
        help_text = (action.help or "").replace("%%", "%")
        if action.choices and action.option_strings and action.metavar:
            help_text += f" (one of: {', '.join(map(str, action.choices))})"
        if isinstance(action, argparse._AppendAction):
            help_text += " (repeatable)" if "repeatable" not in help_text else ""
        rows.append(f"| {names} | {_cell(help_text)} |")
    return rows


# --- exit codes ---------------------------------------------------------------------------------


def exit_codes_page() -> str:
    lines = [GENERATED, "# Exit codes", "", "Every `vbench` command exits with one of these codes.", ""]
    lines += ["| code | meaning |", "|---|---|"]
    lines += [f"| `{code}` | {_cell(meaning)} |" for code, meaning in sorted(EXIT_CODES.items())]
    return "\n".join(lines) + "\n"


# --- file formats from the pydantic models ----------------------------------------------------------


def schema_page(title: str, intro: str, models: list[type[BaseModel]]) -> str:
    lines = [GENERATED, f"# {title}", "", intro, ""]
    for model in models:
        schema = model.model_json_schema(by_alias=True, mode="serialization")
        lines += [f"## `{model.__name__}`", ""]
        if model.__doc__:
            lines += [_text(model.__doc__), ""]
        lines += _properties_table(schema, schema)
        for name, sub in sorted(schema.get("$defs", {}).items()):
            lines += [f"### `{name}` {{ #{name.lower()} }}", ""]
            if sub.get("description"):
                lines += [_text(sub["description"]), ""]
            if "properties" in sub:
                lines += _properties_table(sub, schema)
            else:
                lines += [_cell(type_of(sub)), ""]
        lines += [
            f'??? note "The JSON Schema of `{model.__name__}`"',
            "",
            "    ```json",
            *("    " + line for line in json.dumps(schema, indent=2, ensure_ascii=False).splitlines()),
            "    ```",
            "",
        ]
    return "\n".join(lines) + "\n"


def _properties_table(schema: dict[str, Any], root: dict[str, Any]) -> list[str]:
    required = set(schema.get("required", []))
    rows = ["| key | type | required | default | description |", "|---|---|---|---|---|"]
    for key, prop in schema.get("properties", {}).items():
        default = json.dumps(prop["default"], ensure_ascii=False) if "default" in prop else ""
        rows.append(
            f"| `{key}` | {_cell(type_of(prop))} | {'yes' if key in required else ''} | "
            f"{_cell(f'`{default}`') if default else ''} | {_cell(prop.get('description', ''))} |"
        )
    extra = schema.get("additionalProperties")
    note = ["", "Unknown keys are errors." if extra is False else ""]
    return [*rows, *note, ""]


def type_of(prop: dict[str, Any]) -> str:
    """A JSON Schema property's type in a few words: `string`, `array of Claim`, `integer or null`."""
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    if "anyOf" in prop or "oneOf" in prop:
        return " or ".join(dict.fromkeys(type_of(p) for p in prop.get("anyOf", prop.get("oneOf", []))))
    if "const" in prop:
        return f'"{prop["const"]}"'
    if "enum" in prop:
        return "one of " + ", ".join(json.dumps(v) for v in prop["enum"])
    kind = prop.get("type", "any")
    if kind == "array":
        return f"array of {type_of(prop.get('items', {}))}"
    if kind == "object" and isinstance(prop.get("additionalProperties"), dict):
        return f"map of {type_of(prop['additionalProperties'])}"
    return str(kind)


def _text(text: str) -> str:
    """Prose on one line, its angle brackets escaped outside code spans: Markdown would read `<name>` as a tag
    and drop it (`FOLDER/labels/<name>.jsonl` would render as `FOLDER/labels/.jsonl`)."""
    parts = " ".join(text.split()).split("`")
    return "`".join(part if i % 2 else html.escape(part, quote=False) for i, part in enumerate(parts))


def _cell(text: str) -> str:
    return _text(text).replace("|", "\\|")
