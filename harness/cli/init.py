"""`vbench init DIR`: what a team needs to measure its own verifier, written so that `vbench run` runs as is.

A study file (`vbench.toml`, which `vbench run` reads when no --study is given), a copy of the baseline
prompt to edit (`prompts/verifier/`), a `cases/` folder with one policy and two quality cases (one whose
right verdict is PASS, one where a PASS is unsafe) that validate, and `.github/workflows/verifier.yml`, the prompt gate on pull requests. Nothing is overwritten.

The workflow installs verifier-bench from where this copy came from (PEP 610's `direct_url.json`: an index
version, a VCS commit, an archive URL). A copy from a local folder (an editable install, a checkout) cannot
be installed on a CI runner: `init` says so, and the workflow then asks for the repository variable
VBENCH_INSTALL instead of guessing a name no index has.
"""

from __future__ import annotations

import argparse
import json
from importlib import metadata
from pathlib import Path

from harness import UsageError
from harness.cli import EXIT_OK
from harness.system.prompts.variant import PARAMS_FILE, PROMPTS_DIR, TEMPLATE_FILES

DIST = "verifier-bench"
STARTER = Path(__file__).resolve().parent / "starter"
PROMPT_DIR = "prompts/verifier"

FILES: dict[str, str] = {
    "vbench.toml": "vbench.toml",
    "cases/policy/example-policy.yaml": "cases/policy/example-policy.yaml",
    "cases/quality/example-quality.yaml": "cases/quality/example-quality.yaml",
    "cases/quality/example-quality-contradicted.yaml": "cases/quality/example-quality-contradicted.yaml",
    ".github/workflows/verifier.yml": "verifier.yml",
    ".gitignore": "gitignore",
}
"""Where each file goes in the new folder -> its source under `starter/`."""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    init = sub.add_parser(
        "init",
        help="start a repository for your verifier: study file, prompt copy, case templates, CI workflow",
        description="Writes vbench.toml, prompts/verifier/ (a copy of the baseline prompt), cases/ (one policy and two "
        "quality cases), .github/workflows/verifier.yml (the prompt gate on pull requests) and .gitignore into "
        "DIR. Then `cd DIR && vbench run` runs offline. Existing files are never overwritten.",
    )
    init.add_argument("dir", type=Path, metavar="DIR", help="the folder to write (created when missing)")
    init.set_defaults(handler=cmd_init)


def install_requirement(direct_url: str | None, version: str) -> str | None:
    """The pip requirement a CI runner can install this copy from, or None when it came from a local folder.

    `direct_url` is the installed distribution's `direct_url.json` (PEP 610; None: installed from an index)."""
    if direct_url is None:
        return f"{DIST}=={version}"
    data = json.loads(direct_url)
    url = str(data.get("url", ""))
    if url.startswith("file:") or "dir_info" in data:
        return None  # a folder or a file on this machine: no runner has it
    if "vcs_info" in data:
        vcs = data["vcs_info"]
        return f"{DIST} @ {vcs['vcs']}+{url}@{vcs.get('commit_id') or vcs.get('requested_revision')}"
    return f"{DIST} @ {url}"  # an archive by URL


def this_install() -> str | None:
    """Where the running verifier-bench was installed from, as a requirement (`install_requirement`)."""
    try:
        dist = metadata.distribution(DIST)
    except metadata.PackageNotFoundError:
        return None  # run from a checkout on the path, not installed
    import harness

    installed = Path(str(dist.locate_file("harness/__init__.py")))
    if installed.resolve() != Path(harness.__file__).resolve() and dist.read_text("direct_url.json") is None:
        return None  # the code running is a checkout on the path, not the installed copy
    if (Path(str(dist.locate_file(""))) / "pyproject.toml").is_file():
        return None  # metadata found in a source checkout (an egg-info beside pyproject.toml): no index has it
    return install_requirement(dist.read_text("direct_url.json"), dist.version)


def starter_files(requirement: str | None = None) -> dict[str, str]:
    """Every file `init` writes (path in the new folder -> text); the workflow installs `requirement` unless the
    repository variable VBENCH_INSTALL says otherwise (None: the variable is required)."""
    files = {target: (STARTER / source).read_text(encoding="utf-8") for target, source in FILES.items()}
    files[".github/workflows/verifier.yml"] = files[".github/workflows/verifier.yml"].replace(
        "@VBENCH_REQUIREMENT@", (requirement or "").replace("'", "''")
    )
    for name in (PARAMS_FILE, *TEMPLATE_FILES):  # the packaged baseline prompt, the one home of its text
        files[f"{PROMPT_DIR}/{name}"] = (PROMPTS_DIR / "baseline" / name).read_text(encoding="utf-8")
    return files


def cmd_init(args: argparse.Namespace) -> int:
    root: Path = args.dir
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root} exists and is not a folder")
    requirement = this_install()
    files = starter_files(requirement)
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
    if requirement is None:
        print(
            "note: this verifier-bench was installed from a local folder (editable or a checkout), which a CI runner "
            "cannot install: set the repository variable VBENCH_INSTALL to a pip requirement "
            "(verifier-bench==VERSION, or git+https://HOST/OWNER/verifier-bench@REF) before the workflow runs"
        )
    else:
        print(f"the workflow installs {requirement} (the repository variable VBENCH_INSTALL overrides it)")
    print(f"next: cd {root} && vbench run   (offline: the reference verifier on cases/)")
    return EXIT_OK
