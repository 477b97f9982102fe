"""The benchmark's inputs: N quality cases copied from the corpus, the exact request bodies, a synthetic run folder.

Everything is written once into a work folder and read by the measuring
subprocesses, so each measurement pays for no setup it does not own.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import yaml

from harness.corpus.loader import case_files, load_cases, read_yaml
from harness.corpus.schema import Case
from harness.llm.openai_model import OpenAISettings, request_params
from harness.run.folder import CASES_FILE, MANIFEST_FILE, RESULTS_FILE
from harness.run.log import Manifest, ResultRecord, VariantInfo
from harness.system.pipeline import prepare
from harness.system.prompts import load_prompt
from harness.system.verifiers.llm import LLMVerifier

MODEL = "local-model"
PROMPT = "baseline"
_Dumper: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def synth_cases(source: Path, n: int, out: Path) -> list[Path]:
    """`n` quality cases as YAML files: the corpus's quality cases in turn, each with a new id and question.

    The question carries the copy number, so every request body (and cache key) is distinct.
    """
    originals = [read_yaml(p) for p in case_files([source])]
    originals = [d for d in originals if isinstance(d, dict) and "verifier_response" not in d]
    if not originals:
        raise ValueError(f"no quality case under {source}")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for i in range(n):
        data = dict(originals[i % len(originals)])
        data["id"] = f"bench-{i:05d}-{data['id']}"
        session = dict(data["session"])
        session["question"] = f"{session['question']} (bench copy {i})"
        data["session"] = session
        path = out / f"{data['id']}.yaml"
        path.write_text(yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True), encoding="utf-8")
        written.append(path)
    return written


def write_case_lines(cases_dir: Path, out: Path) -> list[Case]:
    """Load the YAML cases once (checked by the real loader) and keep them as JSON lines for fast reloading."""
    cases = load_cases([cases_dir])
    with out.open("w", encoding="utf-8") as fh:
        for case in cases:
            fh.write(case.model_dump_json(by_alias=True) + "\n")
    return cases


def read_case_lines(path: Path) -> list[Case]:
    with path.open(encoding="utf-8") as fh:
        return [Case.model_validate_json(line) for line in fh if line.strip()]


def request_bodies(cases: list[Case], base_url: str = "http://127.0.0.1:9/v1") -> list[dict[str, Any]]:
    """For each case, the chat request the harness sends: rendered by its prompt, built by `request_params`.

    Each item is {"params": ..., "extra_body": ..., "request": ChatRequest as JSON} (the last for the peer).
    """
    verifier = LLMVerifier(_NoModel(), load_prompt(PROMPT))
    settings = OpenAISettings()
    out = []
    for case in cases:
        prepared = prepare(
            case.session.question,
            case.executor.emission(),
            case.session.tool_invocations,
            case.session.tool_trace_summary,
        )
        request = verifier.request_for(prepared.inputs)
        params, extra_body = request_params(MODEL, request, settings.structured_mode, settings)
        out.append({"params": params, "extra_body": extra_body, "request": request.model_dump(mode="json")})
    return out


class _NoModel:
    """Stands where a chat model goes: the bench only renders requests here, it never sends through it."""

    name = "openai:" + MODEL

    async def generate(self, request: Any) -> Any:  # pragma: no cover - never called
        raise RuntimeError("rendering only")

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


# --- a synthetic run folder for the report -------------------------------------------------------


def synth_run(template_dir: Path, out: Path, n_results: int, models: int = 5, prompts: int = 2, seed: int = 7) -> int:
    """A run folder of `n_results` records built from a real run's records (`template_dir`).

    Variants are models × prompts; epochs fill up to `n_results`. Verdicts and claim labels are
    perturbed deterministically so the metrics are not all alike. Each line is validated and written as the
    harness writes it (compact `model_dump_json`), like a real run folder. Returns the number written.
    """
    templates = [json.loads(line) for line in (template_dir / RESULTS_FILE).read_text(encoding="utf-8").splitlines()]
    templates = [t for t in templates if t["kind"] == "quality"]
    manifest = Manifest.model_validate_json((template_dir / MANIFEST_FILE).read_text(encoding="utf-8"))
    variants = [
        VariantInfo(name=f"openai:model-{m}@prompt-{p}", model=f"openai:model-{m}", prompt=f"prompt-{p}")
        for m in range(models)
        for p in range(prompts)
    ]
    per_epoch = len(templates) * len(variants)
    epochs = max(1, -(-n_results // per_epoch))
    out.mkdir(parents=True, exist_ok=True)
    manifest = manifest.model_copy(update={"run_id": out.name, "variants": variants, "epochs": epochs})
    (out / MANIFEST_FILE).write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    (out / CASES_FILE).write_bytes((template_dir / CASES_FILE).read_bytes())
    rng = random.Random(seed)
    verdicts = ["PASS", "LOW_CONFID", "REJECT"]
    labels = ["direct_observation", "reasonable_inference", "unsupported", "contradicted", "overstated"]
    written = 0
    with (out / RESULTS_FILE).open("w", encoding="utf-8") as fh:
        for epoch in range(1, epochs + 1):
            for v_index, variant in enumerate(variants):
                skill = 0.5 + 0.04 * v_index  # each variant right this often
                for template in templates:
                    if written >= n_results:
                        return written
                    record = dict(template, variant=variant.name, epoch=epoch)
                    if rng.random() > skill:
                        record["verdict"] = rng.choice(verdicts)
                        record["claims"] = {cid: rng.choice(labels) for cid in template["claims"]}
                    # each line as the harness writes it (`ResultWriter`: compact `model_dump_json`), so readers
                    # take the same paths as on a real run folder (the unit key read from the line's head)
                    fh.write(ResultRecord.model_validate(record).model_dump_json() + "\n")
                    written += 1
    return written
