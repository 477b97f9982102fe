"""Which session `vbench label serve` offers next, and the probability with which it was chosen.

- `file`: the folder's order (by file name); no probability.
- `random`: one session at a time, uniformly among those not yet drawn (each prefix is a simple random sample).
- `active`: one at a time with probability ∝ the estimated residual uncertainty of the session's cell, the
  production verdict × the judge's verdict (`harness.score.active`), refreshed from the labels at every draw.
- `disagreement`: the sessions where the production and the reference verifier disagree most first
  (`corpus.session_import.disagreement`); not a random draw, so it gives no probability and an estimate over
  such labels is biased (`vbench estimate` says so).

Each draw is appended and fsynced to `DIR/draws/<annotator>.jsonl` before the session is shown, so a restarted
server offers the same session again instead of drawing anew (a redraw would bias the sample); the label lines
of the session carry the draw (`corpus.labels.Drawn`) for `vbench estimate`.
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from harness.corpus.labels import Drawn
from harness.corpus.sessions import Imported
from harness.score import active
from harness.score.estimate import RATES, JudgeAnswer, session_values, truth_of
from harness.system.models import Verdict

Order = Literal["file", "random", "active", "disagreement"]
ORDERS: tuple[str, ...] = ("file", "random", "active", "disagreement")
DRAWS_DIR = "draws"
VERDICT_CELLS = (Verdict.PASS, Verdict.LOW_CONFID, Verdict.REJECT, None)


class DrawLine(BaseModel):
    model_config = ConfigDict(extra="forbid")
    case_id: str
    drawn: Drawn


def cell_of(production: Verdict | None, judge: Verdict | None) -> int:
    """The session's cell: production verdict × judge verdict (None, no verdict, is a fourth value)."""
    return VERDICT_CELLS.index(production) * len(VERDICT_CELLS) + VERDICT_CELLS.index(judge)


def open_cells() -> np.ndarray:
    """(rates, cells): where a rate's residual can be non-zero (unsafe PASS only where production said PASS)."""
    n = len(VERDICT_CELLS)
    out = np.ones((len(RATES), n * n), dtype=bool)
    out[RATES.index("unsafe_pass_rate")] = np.arange(n * n) // n == VERDICT_CELLS.index(Verdict.PASS)
    return out


def active_probabilities(
    cases: Sequence[Imported], judge: Mapping[str, JudgeAnswer], truth: Mapping[str, Mapping[str, list]],
    drawn: set[str], mean_claims: float,
) -> np.ndarray:  # fmt: skip
    """Each session's probability of being drawn next (0 for those already drawn); the residuals are those of
    the labelled sessions (`truth`), claims scaled by the mean number of claims per session."""
    cells = np.array([cell_of(c.production.verdict, judge[c.id].verdict) for c in cases])
    n_cells = len(VERDICT_CELLS) ** 2
    squares = np.zeros((len(RATES), n_cells))
    counts = np.zeros(n_cells)
    for i, case in enumerate(cases):
        if case.id not in truth:
            continue
        f, y, _ = session_values(case, judge[case.id], truth[case.id])
        residual = (y - f) * np.array([1.0, 1.0, 1.0 / mean_claims])  # type: ignore[operator]
        squares[:, cells[i]] += residual**2
        counts[cells[i]] += 1
    left = np.array([c.id not in drawn for c in cases])
    return active.session_probabilities(cells, left, open_cells(), squares, counts)


def draws_file(folder: Path, annotator: str) -> Path:
    return folder / DRAWS_DIR / f"{annotator}.jsonl"


def read_draws(path: Path) -> list[DrawLine]:
    """The draws in order; a torn last line (a crash mid-write) is dropped."""
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8").split("\n")
    out = []
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            out.append(DrawLine.model_validate_json(text))
        except ValueError as exc:
            if number == len(lines):
                continue
            raise ValueError(f"{path}:{number}: not a draw line: {str(exc).splitlines()[0]}") from None
    return out


def _append(path: Path, line: DrawLine) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(line.model_dump_json() + "\n")
        fh.flush()
        os.fsync(fh.fileno())


class Chooser:
    """The order of one annotator's labelling page over one folder."""

    def __init__(self, folder: Path, annotator: str, cases: Sequence[Imported], order: Order = "file",
                 judge: Mapping[str, JudgeAnswer] | None = None, seed: int = 0) -> None:  # fmt: skip
        if order == "active" and judge is None:
            raise ValueError("--order active needs a judge (its verdict on every session)")
        self.folder, self.order, self.cases, self.judge = folder, order, list(cases), judge
        self.path = draws_file(folder, annotator)
        self.draws = read_draws(self.path)
        self.rng = random.Random(f"{seed}:{annotator}:{len(self.draws)}")
        self.mean_claims = 1.0
        if order == "active":
            self.mean_claims = max(float(np.mean([len(c.prepared().claims) for c in self.cases] or [1])), 1.0)
        if order == "disagreement":
            from harness.corpus.session_import import disagreement

            scored = sorted(self.cases, key=lambda c: (-disagreement(c), c.id))
            self.fixed = [c.id for c in scored]
        else:
            self.fixed = [c.id for c in self.cases]

    @property
    def draws_order(self) -> bool:
        return self.order in ("random", "active")

    def sequence(self) -> list[str]:
        """The sessions in the order the page lists them: the drawn ones first, in draw order."""
        if not self.draws_order:
            return list(self.fixed)
        drawn = [d.case_id for d in self.draws]
        return drawn + [cid for cid in self.fixed if cid not in set(drawn)]

    def drawn_for(self, case_id: str) -> Drawn | None:
        """How the session was chosen, for its label lines."""
        if self.order == "disagreement":
            return Drawn(order="disagreement", draw=self.fixed.index(case_id) + 1)
        return next((d.drawn for d in self.draws if d.case_id == case_id), None)

    def next_open(self, is_open: Mapping[str, bool], after: str | None) -> str | None:
        """The next session with an open claim: for a fixed order the next one after `after` (wrapping); for a
        draw order the earliest drawn one still open (not `after`), else a new draw."""
        if not self.draws_order:
            seq = self.fixed
            start = seq.index(after) + 1 if after in seq else 0
            return next((cid for cid in seq[start:] + seq[:start] if cid != after and is_open[cid]), None)
        pending = next((d.case_id for d in self.draws if d.case_id != after and is_open[d.case_id]), None)
        return pending or self._draw(is_open)

    def _draw(self, is_open: Mapping[str, bool]) -> str | None:
        drawn = {d.case_id for d in self.draws}
        if self.order == "random":
            left = [c.id for c in self.cases if c.id not in drawn]
            if not left:
                return None
            case_id, probability = self.rng.choice(left), 1 / len(left)
        else:
            truth, _ = truth_of(self.folder, self.cases)
            probs = active_probabilities(self.cases, self.judge or {}, truth, drawn, self.mean_claims)
            if probs.sum() <= 0:
                return None
            i = self.rng.choices(range(len(self.cases)), weights=probs.tolist())[0]
            case_id, probability = self.cases[i].id, float(probs[i] / probs.sum())
        line = DrawLine(case_id=case_id, drawn=Drawn(order=self.order, draw=len(self.draws) + 1,
                                                     probability=min(probability, 1.0)))  # fmt: skip
        _append(self.path, line)
        self.draws.append(line)
        return case_id if is_open.get(case_id, True) else self.next_open(is_open, None)
