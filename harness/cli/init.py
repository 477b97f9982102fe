"""`vbench init DIR`: what a team needs to measure its own verifier, written so that `vbench run` runs as is.

A study file (`vbench.toml`, which `vbench run` reads when no --study is given), a copy of the baseline
prompt to edit (`prompts/verifier/`), a `cases/` folder with one policy and one quality case that
validate, and `.github/workflows/verifier.yml`, the prompt gate on pull requests. Nothing is overwritten.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness import UsageError, __version__
from harness.cli import EXIT_OK
from harness.system.prompts.variant import PARAMS_FILE, PROMPTS_DIR, TEMPLATE_FILES

STARTER = Path(__file__).resolve().parent / "starter"
PROMPT_DIR = "prompts/verifier"

FILES: dict[str, str] = {
    "vbench.toml": "vbench.toml",
    "cases/policy/example-policy.yaml": "cases/policy/example-policy.yaml",
    "cases/quality/example-quality.yaml": "cases/quality/example-quality.yaml",
    ".github/workflows/verifier.yml": "verifier.yml",
    ".gitignore": "gitignore",
}
"""Where each file goes in the new folder -> its source under `starter/`."""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    init = sub.add_parser(
        "init",
        help="start a repository for your verifier: study file, prompt copy, case templates, CI workflow",
        description="Writes vbench.toml, prompts/verifier/ (a copy of the baseline prompt), cases/ (one policy and "
        "one quality case), .github/workflows/verifier.yml (the prompt gate on pull requests) and .gitignore into "
        "DIR. Then `cd DIR && vbench run` runs offline. Existing files are never overwritten.",
    )
    init.add_argument("dir", type=Path, metavar="DIR", help="the folder to write (created when missing)")
    init.set_defaults(handler=cmd_init)


def starter_files() -> dict[str, str]:
    """Every file `init` writes (path in the new folder -> text)."""
    files = {target: (STARTER / source).read_text(encoding="utf-8") for target, source in FILES.items()}
    files[".github/workflows/verifier.yml"] = files[".github/workflows/verifier.yml"].replace(
        "@VBENCH_VERSION@", __version__
    )
    for name in (PARAMS_FILE, *TEMPLATE_FILES):  # the packaged baseline prompt, the one home of its text
        files[f"{PROMPT_DIR}/{name}"] = (PROMPTS_DIR / "baseline" / name).read_text(encoding="utf-8")
    return files


def cmd_init(args: argparse.Namespace) -> int:
    root: Path = args.dir
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root} exists and is not a folder")
    files = starter_files()
    clash = sorted(name for name in files if (root / name).exists())
    if clash:
        raise UsageError(f"{root} already has {', '.join(clash)}: nothing written (init never overwrites)")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    print(f"wrote {len(files)} files into {root}:")
    for name in sorted(files):
        print(f"  {name}")
    print(f"next: cd {root} && vbench run   (offline: the reference verifier on cases/)")
    return EXIT_OK
