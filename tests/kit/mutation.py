"""The mutation suite of the kit itself: every seeded fault must fail `vbench certify`, every correct variant pass.

Each seed runs as its own SUT process (tests/kit/faulty_sut.py; an encoding variant as the plain SUT behind
tests/kit/reencode.py's proxy) and is certified on a corpus. The score is kept per requirement id
(harness/kit/requirements.py): caught/total faults, certified/total variants.

    python -m tests.kit.mutation [--cases DIR] [--only NAME ...]     # what `nox -s mutation` runs
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from harness.cli import main as vbench
from tests.kit.faulty_sut import ORIGINAL
from tests.kit.helpers import ROOT, serve_args, sut_process
from tests.kit.java_faults import FAULTS as JAVA
from tests.kit.java_faults import VARIANTS as JAVA_VARIANTS
from tests.kit.more_faults import FAULTS as MORE
from tests.kit.reencode import ReencodingProxy
from tests.kit.rule_faults import FAULTS as RULES
from tests.kit.seeds import Seed
from tests.kit.variants import VARIANTS as PLAIN_VARIANTS

FAULTS: list[Seed] = [*ORIGINAL, *MORE, *RULES, *JAVA]
VARIANTS: list[Seed] = [*PLAIN_VARIANTS, *JAVA_VARIANTS]
POLICY = ROOT / "cases" / "policy"
Kind = Literal["fault", "variant"]


@dataclass(frozen=True)
class Outcome:
    seed: Seed
    kind: Kind
    code: int
    status: str
    sut: str
    failed: int
    cases: int
    first: str
    """The first failure (case and what the kit saw), empty when none failed."""

    @property
    def as_intended(self) -> bool:
        """A fault is caught when the certificate fails; a variant holds when no case failed (certified on the
        whole corpus; on a part of it the certificate can only be partial)."""
        if self.kind == "fault":
            return self.code == 1 and self.status == "failed"
        return self.failed == 0 and self.status != "failed"


@contextlib.contextmanager
def sut_for(seed: Seed, tmp: Path) -> Iterator[str]:
    """The base URL of the SUT this seed makes: a patched process, or the plain SUT behind a proxy."""
    port_file = tmp / f"{seed.name}.port"
    if seed.apply is not None:
        args = [sys.executable, "-m", "tests.kit.faulty_sut", "--fault", seed.name, "--port-file", str(port_file)]
        with sut_process(args, port_file) as url:
            yield url
        return
    with sut_process(serve_args(port_file), port_file) as url, ReencodingProxy(url, seed.encoding) as proxy:
        yield proxy


def certify_seed(seed: Seed, kind: Kind, tmp: Path, cases: Path = POLICY) -> Outcome:
    """Certify the SUT `seed` makes on `cases`; its certificate read back from the files the kit wrote."""
    out = tmp / seed.name
    with sut_for(seed, tmp) as url, contextlib.redirect_stdout(io.StringIO()):
        code = vbench(["certify", "--sut", url, "--cases", str(cases), "--out", str(out), "--force"])
    summary = json.loads((out / "summary.json").read_text())
    cert = json.loads((out / "certificate.json").read_text())
    failures = summary["conformance"]["failures"]
    return Outcome(
        seed=seed,
        kind=kind,
        code=code,
        status=cert["status"],
        sut=(cert.get("sut") or {}).get("name", ""),
        failed=len(failures),
        cases=summary["conformance"]["policy_cases"],
        first=_first(failures[0]) if failures else "; ".join(cert.get("protocol_problems") or [])[:200],
    )


def _first(failure: dict[str, Any]) -> str:
    seen = failure.get("mismatches", []) + failure.get("invariant_violations", []) + [failure.get("error") or ""]
    return f"{failure.get('case_id', '')}: " + "; ".join(s for s in seen if s)[:160]


def scores(outcomes: Sequence[Outcome]) -> dict[str, tuple[int, int]]:
    """Per requirement id: (faults caught, faults seeded)."""
    out: dict[str, tuple[int, int]] = {}
    for o in outcomes:
        if o.kind == "fault":
            caught, total = out.get(o.seed.requirement, (0, 0))
            out[o.seed.requirement] = (caught + o.as_intended, total + 1)
    return dict(sorted(out.items()))


def report(outcomes: Sequence[Outcome]) -> str:
    """The mutation table: score per requirement, the variants, and every seed that did not do as intended."""
    faults = [o for o in outcomes if o.kind == "fault"]
    variants = [o for o in outcomes if o.kind == "variant"]
    lines = ["Mutation score per requirement (faults caught/seeded):"]
    lines += [f"  {rid:34} {c}/{t}" for rid, (c, t) in scores(outcomes).items()]
    lines.append(f"  {'all':34} {sum(o.as_intended for o in faults)}/{len(faults)}")
    lines.append(f"Correct variants certified: {sum(o.as_intended for o in variants)}/{len(variants)}")
    lines += [f"  {o.seed.name:34} {o.status} ({o.failed}/{o.cases} failed)" for o in variants]
    gaps = [o for o in outcomes if not o.as_intended and o.seed.kit_gap]
    if gaps:
        lines.append("Known kit gaps (faults the kit cannot catch yet):")
        lines += [f"  {o.seed.name} [{o.seed.requirement}]: {o.seed.kit_gap}" for o in gaps]
    missed = [o for o in outcomes if not o.as_intended and not o.seed.kit_gap]
    if missed:
        lines.append("Not as intended:")
        lines += [
            f"  {o.kind} {o.seed.name} [{o.seed.requirement}]: {o.seed.what}; {o.status}; {o.first}" for o in missed
        ]
    return "\n".join(lines)


def selected(names: Sequence[str]) -> list[tuple[Seed, Kind]]:
    """The seeds to run: all, or those named (an unknown name is an error naming the known ones)."""
    every: list[tuple[Seed, Kind]] = [(s, "fault") for s in FAULTS] + [(s, "variant") for s in VARIANTS]
    if not names:
        return every
    known = {s.name: (s, k) for s, k in every}
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise SystemExit(f"unknown seed(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return [known[n] for n in names]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=Path, default=POLICY, help="the corpus to certify each seed on")
    parser.add_argument("--only", nargs="*", default=[], help="run only these seeds")
    args = parser.parse_args(argv)
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="vbench-mutation-") as tmp:
        for seed, kind in selected(args.only):
            try:
                outcome = certify_seed(seed, kind, Path(tmp), args.cases)
            except (RuntimeError, TimeoutError, OSError, ValueError) as exc:  # a SUT that did not start, say
                outcome = Outcome(seed, kind, 2, "error", "", 0, 0, f"{type(exc).__name__}: {exc}"[:300])
            print(
                f"{kind:7} {seed.name:40} {'ok' if outcome.as_intended else 'KIT GAP' if seed.kit_gap else 'NOT AS INTENDED'}",
                flush=True,
            )
            outcomes.append(outcome)
    print(report(outcomes))
    return 0 if all(o.as_intended or o.seed.kit_gap for o in outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
