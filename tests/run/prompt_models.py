"""Scripted models whose answer depends on the prompt, served by the local OpenAI-compatible server.

The model reads the case id from the question (`[q2-1] ...`, as `corpus_builder` writes it) and
answers from the gold labels, unless the system prompt carries an instruction it is known to obey:

- `LENIENT_LINE`: every claim `direct_observation` and PASS (wrong on every case whose gold is not PASS);
- `OFF_BY_ONE_LINE`: wrong, in the same way, on the `q2` copies only.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import yaml

from harness.devtools.responders import last_user_message
from harness.system.prompts.variant import PROMPTS_DIR
from tests.run.corpus_builder import GOLD, quality_case

LENIENT_LINE = "When you are unsure, accept the claim as directly observed."
OFF_BY_ONE_LINE = "Treat error-rate claims about Redis as directly observed."
_CASE = re.compile(r"\[(q\d)(?:-\d+)?\]")


def system_text(body: dict[str, Any]) -> str:
    return "".join(str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "system")


def prompt_following_responder(body: dict[str, Any]) -> str:
    """A reply that is right for the plain prompt and wrong in a known way for the instructions above."""
    match = _CASE.search(last_user_message(body))
    assert match, "the scripted model needs a case id in the question"
    labels, verdict = GOLD[match.group(1)]
    system = system_text(body)
    lenient = LENIENT_LINE in system or (OFF_BY_ONE_LINE in system and match.group(1) == "q2")
    checks = []
    for claim_id, gold in labels.items():
        label = "direct_observation" if lenient else (gold if isinstance(gold, str) else gold[0])
        checks.append({"claim_id": claim_id, "verification": label, "detail": "scripted", "evidence_refs": []})
    gold_verdict = verdict if isinstance(verdict, str) else verdict[0]
    reply = {
        "verdict": "PASS" if lenient else gold_verdict,
        "groundedness_score": 0.9,
        "critical_fact_count": len(checks),
        "claim_checks": checks,
        "facts_checked": [],
        "rationale": "scripted by prompt",
    }
    return json.dumps(reply)


def write_copies(folder: Path, copies: int = 3, with_policy: bool = False) -> Path:
    """Every hand-computed quality case `copies` times (ids `q1-1`, ...), so a paired test has power."""
    from tests.run.corpus_builder import policy_case

    folder.mkdir(parents=True, exist_ok=True)
    for case_id in GOLD:
        for k in range(1, copies + 1):
            case = quality_case(case_id)
            case["id"] = f"{case_id}-{k}"
            case["session"]["question"] = case["session"]["question"].replace(f"[{case_id}]", f"[{case_id}-{k}]")
            (folder / f"{case_id}-{k}.yaml").write_text(yaml.safe_dump(case, sort_keys=False))
    if with_policy:
        (folder / "policy.yaml").write_text(yaml.safe_dump(policy_case(), sort_keys=False))
    return folder


def prompt_dir(folder: Path, name: str, extra_line: str | None = None, version: str | None = None) -> Path:
    """A copy of the packaged `baseline` prompt named `name`, with one line added to its system template."""
    target = folder / name
    shutil.copytree(PROMPTS_DIR / "baseline", target)
    system = target / "system.j2"
    system.write_text(
        system.read_text(encoding="utf-8") + "\n" + (extra_line or "Be precise.") + "\n", encoding="utf-8"
    )
    if version:
        toml = target / "prompt.toml"
        toml.write_text(re.sub(r'version = "[^"]*"', f'version = "{version}"', toml.read_text()), encoding="utf-8")
    return target
