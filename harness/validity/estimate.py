"""The estimate's validity study: PPI++ intervals against known truth, uniform and active choice of labels.

A population of N sessions with a true verdict and true claim classes, a production verifier whose verdict is
right 77% of the time and passes about 7% of all sessions wrongly (unsafe PASS), and a judge whose errors
partly repeat the production verifier's: where it is not right it copies the production answer half of the
time (a judge with independent errors flatters PPI). The judge's skill is set for a Cohen's kappa against the
truth (0.6, 0.79, 0.93 in the report). The population is fixed per judge; seeds vary which sessions are
labelled. Everything is vectorised over seeds (numpy), so the study runs in minutes on two cores.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from harness.score import ppi
from harness.score.active import cell_probabilities, cell_scores
from harness.score.classification import cohen_kappa, confusion

RATES = ("verdict_accuracy", "unsafe_pass_rate", "claim_accuracy")
PASS, VERDICTS, CLASSES = 0, 3, 6
TRUE_VERDICT = np.array([0.40, 0.30, 0.30])
PRODUCTION_GIVEN_TRUTH = np.array([[0.85, 0.10, 0.05], [0.12, 0.70, 0.18], [0.11, 0.14, 0.75]])
"""Rows: true PASS, LOW_CONFID, REJECT; columns: the production verdict. Unsafe PASS 0.3·0.12 + 0.3·0.11 = 6.9%."""
TRUE_CLASS = np.array([0.35, 0.25, 0.15, 0.10, 0.05, 0.10])
PRODUCTION_CLAIM_RIGHT = 0.78
COPY_SHARE = 0.5
"""Where the judge is not right, the share of sessions (claims) where it repeats the production answer."""


@dataclass(frozen=True)
class Population:
    """Per rate k: Y[k] the truth's value per session, F[k] the judge's, scale[k] the largest value."""

    y: np.ndarray
    f: np.ndarray
    scale: np.ndarray
    cells: np.ndarray
    open_: np.ndarray
    kappa: float
    claim_kappa: float

    @property
    def truth(self) -> np.ndarray:
        return self.y.mean(-1)

    @property
    def size(self) -> int:
        return self.y.shape[-1]


def _judge(truth: np.ndarray, production: np.ndarray, k: int, skill: float, u: np.ndarray) -> np.ndarray:
    """Right with probability `skill`; else the production answer (COPY_SHARE) or a uniform class."""
    other = np.minimum((u[2] * k).astype(int), k - 1)
    return np.where(u[0] < skill, truth, np.where(u[1] < COPY_SHARE, production, other))


def _kappa(a: np.ndarray, b: np.ndarray, k: int) -> float:
    labels = list(range(k))
    return float(cohen_kappa(confusion(list(a), list(b), labels)))


def population(target_kappa: float, size: int = 3000, seed: int = 0) -> Population:
    """The population whose judge has the given kappa against the true verdicts (skill found by bisection on a
    fixed random stream, so the kappa moves monotonically with it)."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(VERDICTS, size=size, p=TRUE_VERDICT)
    production = (rng.random(size)[:, None] > PRODUCTION_GIVEN_TRUTH[truth].cumsum(-1)).sum(-1)
    u_verdict = rng.random((3, size))
    claims = rng.integers(3, 6, size=size)
    slots = np.arange(5)[None, :] < claims[:, None]
    true_class = rng.choice(CLASSES, size=(size, 5), p=TRUE_CLASS)
    shift = rng.integers(1, CLASSES, size=(size, 5))
    prod_class = np.where(rng.random((size, 5)) < PRODUCTION_CLAIM_RIGHT, true_class, (true_class + shift) % CLASSES)
    u_claim = rng.random((3, size, 5))

    def judged(skill: float) -> tuple[np.ndarray, np.ndarray]:
        return (_judge(truth, production, VERDICTS, skill, u_verdict),
                _judge(true_class, prod_class, CLASSES, skill, u_claim))  # fmt: skip

    low, high = 0.0, 1.0
    for _ in range(30):
        mid = (low + high) / 2
        if _kappa(truth, judged(mid)[0], VERDICTS) < target_kappa:
            low = mid
        else:
            high = mid
    judge, judge_class = judged(high)
    mean_claims = claims.mean()
    y = np.stack([
        (production == truth).astype(float),
        ((production == PASS) & (truth != PASS)).astype(float),
        ((prod_class == true_class) & slots).sum(-1) / mean_claims,
    ])  # fmt: skip
    f = np.stack([
        (production == judge).astype(float),
        ((production == PASS) & (judge != PASS)).astype(float),
        ((prod_class == judge_class) & slots).sum(-1) / mean_claims,
    ])  # fmt: skip
    cells = production * VERDICTS + judge
    open_ = np.ones((len(RATES), VERDICTS * VERDICTS), dtype=bool)
    open_[1] = np.arange(VERDICTS * VERDICTS) // VERDICTS == PASS
    return Population(
        y=y,
        f=f,
        scale=np.array([1.0, 1.0, 5 / mean_claims]),
        cells=cells,
        open_=open_,
        kappa=_kappa(truth, judge, VERDICTS),
        claim_kappa=_kappa(true_class[slots], judge_class[slots], CLASSES),
    )


@dataclass
class Intervals:
    """Per rate, per labelled size: arrays over seeds of estimate, low, high."""

    estimate: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)
    low: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)
    high: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)

    def add(self, rate: str, n: int, m: ppi.MeanEstimate) -> None:
        self.estimate[(rate, n)], self.low[(rate, n)], self.high[(rate, n)] = m.estimate, m.low, m.high


def uniform_draws(pop: Population, seeds: int, n: int, seed: int) -> np.ndarray:
    """(seeds, n) session indices: the first n of a random order per seed (what `--order random` offers)."""
    rng = np.random.default_rng(seed)
    return np.argsort(rng.random((seeds, pop.size)), axis=-1)[:, :n]


def active_draws(
    pop: Population, seeds: int, n: int, seed: int, targets: tuple[str, ...] = RATES, update: int = 10
) -> tuple[np.ndarray, np.ndarray]:
    """(seeds, n) session indices drawn one at a time by `harness.score.active`, and the probability each
    draw had; the cell scores are refreshed from the labels every `update` draws (the app refreshes every draw)."""
    rng = np.random.default_rng(seed)
    n_cells = pop.open_.shape[-1]
    open_ = pop.open_ & np.array([r in targets for r in RATES])[:, None]
    priority = rng.random((seeds, pop.size)) + pop.cells[None, :]
    order = np.argsort(priority, axis=-1)  # by cell, then a random order within the cell
    sizes0 = np.bincount(pop.cells, minlength=n_cells).astype(float)
    offset = np.concatenate([[0], np.cumsum(sizes0)[:-1]]).astype(int)
    taken = np.zeros((seeds, n_cells), dtype=int)
    squares = np.zeros((seeds, len(RATES), n_cells))
    counts = np.zeros((seeds, n_cells))
    residual = (pop.y - pop.f) ** 2
    rows = np.arange(seeds)
    chosen = np.zeros((seeds, n), dtype=int)
    probability = np.zeros((seeds, n))
    scores = cell_scores(open_, squares, counts, sizes0)
    for j in range(n):
        if j % update == 0:
            scores = cell_scores(open_, squares, counts, sizes0)
        sizes = sizes0[None, :] - taken
        probs = cell_probabilities(sizes, scores)
        cell = (rng.random((seeds, 1)) > np.cumsum(probs, -1)).sum(-1)
        cell = np.minimum(cell, n_cells - 1)
        empty = sizes[rows, cell] <= 0  # rounding at the cumulative sum's end: the last non-empty cell
        if empty.any():
            cell[empty] = np.array([np.flatnonzero(sizes[r] > 0)[-1] for r in np.flatnonzero(empty)])
        session = order[rows, offset[cell] + taken[rows, cell]]
        chosen[:, j] = session
        probability[:, j] = probs[rows, cell] / sizes[rows, cell]
        taken[rows, cell] += 1
        counts[rows, cell] += 1
        squares[rows, :, cell] += residual[:, session].T
    return chosen, probability


def uniform_study(pop: Population, sizes: tuple[int, ...], seeds: int, seed: int) -> dict[str, Intervals]:
    """PPI++ (small-n interval), PPI++ Wald (the reference implementation's) and human-only, uniform labels."""
    draws = uniform_draws(pop, seeds, max(sizes), seed)
    out = {"ppi": Intervals(), "wald": Intervals(), "human": Intervals()}
    for k, rate in enumerate(RATES):
        y, f = pop.y[k][draws], pop.f[k][draws]
        for n in sizes:
            yn, fn = y[:, :n], f[:, :n]
            out["ppi"].add(rate, n, ppi.interval(yn, fn, pop.f[k], scale=pop.scale[k]))
            out["wald"].add(rate, n, ppi.wald_interval(yn, fn, pop.f[k]))
            out["human"].add(rate, n, ppi.interval(yn, fn, pop.f[k], lam=0.0, scale=pop.scale[k]))
    return out


def active_study(
    pop: Population, sizes: tuple[int, ...], seeds: int, seed: int, targets: tuple[str, ...] = RATES
) -> Intervals:
    """PPI++ over actively chosen labels (sequential terms weighted by the recorded probabilities)."""
    draws, q = active_draws(pop, seeds, max(sizes), seed, targets)
    out = Intervals()
    for k, rate in enumerate(RATES):
        y, f = pop.y[k][draws], pop.f[k][draws]
        for n in sizes:
            a = ppi.sequential_terms(y[:, :n], q[:, :n], pop.size)
            b = ppi.sequential_terms(f[:, :n], q[:, :n], pop.size)
            out.add(rate, n, ppi.interval(a, b, pop.f[k], scale=pop.scale[k]))
    return out


def summary(iv: Intervals, pop: Population, rate: str, n: int) -> dict[str, float]:
    """Coverage, mean half-width and bias of one (rate, size) over the seeds."""
    truth = pop.truth[RATES.index(rate)]
    low, high, est = iv.low[(rate, n)], iv.high[(rate, n)], iv.estimate[(rate, n)]
    return {
        "coverage": float(((low <= truth) & (truth <= high)).mean()),
        "half_width": float(((high - low) / 2).mean()),
        "bias": float(est.mean() - truth),
    }


KAPPAS = (0.6, 0.79, 0.93)
SIZES = (50, 100, 200, 400)
FEWER = 0.75
"""Active choice is measured at 75% of each size: the band asks for the uniform half-width with 25% fewer labels."""
DESIGNS = {"all rates": RATES, "unsafe PASS": ("unsafe_pass_rate",)}


def study(seeds: int = 1000, size: int = 3000, seed: int = 20261208) -> dict:
    """Every figure of the report, as plain data."""
    active_sizes = tuple(sorted({*SIZES, *(round(n * FEWER) for n in SIZES)}))
    rows = []
    for j, kappa in enumerate(KAPPAS):
        pop = population(kappa, size, seed + j)
        uni = uniform_study(pop, SIZES, seeds, seed + 100 + j)
        act = {name: active_study(pop, active_sizes, seeds, seed + 200 + j, t) for name, t in DESIGNS.items()}
        for rate in RATES:
            for n in SIZES:
                row = {"kappa": kappa, "judge_kappa": pop.kappa, "rate": rate, "n": n,
                       "truth": float(pop.truth[RATES.index(rate)])}  # fmt: skip
                for key, iv in (("ppi", uni["ppi"]), ("wald", uni["wald"]), ("human", uni["human"])):
                    row[key] = summary(iv, pop, rate, n)
                for name, iv in act.items():
                    row[f"active {name}"] = summary(iv, pop, rate, n)
                    row[f"active {name} fewer"] = summary(iv, pop, rate, round(n * FEWER))
                rows.append(row)
    return {"seeds": seeds, "population": size, "rows": rows}


def bands(data: dict) -> list[dict]:
    """Each band of the study with whether it holds and where it does not."""

    def check(name: str, failing: list[str]) -> dict:
        return {"band": name, "met": not failing, "failing": failing}

    rows = data["rows"]

    def where(r: dict) -> str:
        return f"{r['rate']} κ={r['kappa']} n={r['n']}"

    def ratio(r: dict, key: str, base: str = "ppi") -> float:
        return r[key]["half_width"] / r[base]["half_width"]

    out = [
        check("coverage ≥ 0.94 at 100, 200, 400 labels and ≥ 0.90 at 50 (PPI++, uniform)",
              [where(r) for r in rows if r["ppi"]["coverage"] < (0.90 if r["n"] == 50 else 0.94)]),
        check("never wider than the human-only interval (mean half-width)",
              [where(r) for r in rows if r["ppi"]["half_width"] > r["human"]["half_width"]]),
        check("≥ 30% narrower than human-only where the judge's κ ≥ 0.9",
              [where(r) for r in rows if r["kappa"] >= 0.9 and ratio(r, "ppi", "human") > 0.70]),
    ]  # fmt: skip
    for name in DESIGNS:
        key = f"active {name}"
        out.append(
            check(
                f"active ({name}): coverage ≥ 0.94 at 100, 200, 400 and ≥ 0.90 at 50",
                [where(r) for r in rows if r[key]["coverage"] < (0.90 if r["n"] == 50 else 0.94)],
            )
        )
        out.append(
            check(
                f"active ({name}): unsafe PASS at 75% of the labels no wider than uniform, coverage ≥ 0.94",
                [
                    where(r)
                    for r in rows
                    if r["rate"] == "unsafe_pass_rate"
                    and (ratio(r, key + " fewer") > 1 or r[key + " fewer"]["coverage"] < 0.94)
                ],
            )
        )
        out.append(check(
            f"active ({name}): other rates no wider than uniform at the same labels",
            [where(r) for r in rows if r["rate"] != "unsafe_pass_rate" and ratio(r, key) > 1]))  # fmt: skip
    return out


def markdown(data: dict, command: str, seconds: float) -> str:
    """The report: settings, bands, the table."""
    lines = [
        "# Validity of `vbench estimate`: PPI++ intervals and active choice of labels",
        "",
        f"Command: `{command}` ({seconds:.0f} s). {data['seeds']} seeds per row; a population of "
        f"{data['population']:,} sessions per judge, fixed; the seeds vary which sessions are labelled.",
        "",
        "- **Truth**: the production verifier's verdict is right for 77-79% of sessions; unsafe PASS (PASS where the",
        "  true verdict is not) about 6-7% of all sessions; claims 3-5 per session, production right on 78%.",
        "- **Judge**: right with a probability set for the κ against the true verdict shown; where it is not right it",
        "  repeats the production verifier's answer half of the time (correlated errors), else answers at random.",
        "- **PPI++**: the interval adds z²/4 pseudo-observations at each corner of (Y, f) (Agresti–Coull at",
        "  λ = 0; Agresti & Min 2005 for matched pairs at λ = 1) and tunes λ for its own variance, the",
        "  pseudo-observations included: `harness/score/ppi.py`. *Wald* is the reference implementation's interval",
        "  with its power-tuned λ (`ppi_py.ppi_mean_ci`), shown for comparison.",
        "- **Human-only**: the Agresti–Coull interval (Agresti & Coull 1998) of the labels alone.",
        "- **Active**: sessions drawn one at a time with probability ∝ the estimated residual uncertainty of their",
        "  (production verdict, judge verdict) cell (Zrnic & Candès 2024), 20% uniform; estimate from the recorded",
        "  probabilities (Des Raj 1956 sequential terms). *all rates*: the design `--order active` uses; *unsafe",
        "  PASS*: a design for that rate alone. *fewer*: measured at 75% of the row's labels.",
        "",
        "## Bands",
        "",
        "| band | met | where not |",
        "|---|---|---|",
    ]
    for b in bands(data):
        failing = ", ".join(b["failing"][:8]) + (f" (+{len(b['failing']) - 8} more)" if len(b["failing"]) > 8 else "")
        lines.append(f"| {b['band']} | {'yes' if b['met'] else '**no**'} | {failing or '-'} |")
    lines += [
        "",
        "Reading: the bands above are computed from the table below. One change was made after a first run of",
        "this study: λ was first the reference implementation's (tuned for the Wald variance) and is now tuned",
        "for the reported interval's variance, for a property, not a figure: no sample's interval is then more",
        "variable than its human-only one. It also cut the bias at 50 labels from 0.008 to 0.002 and moved unsafe",
        "PASS at κ 0.93 and 50 labels from 29% to 31% narrower than human-only. Where a band says **no**,",
        "the method does not meet it in this population. The small-n interval buys its coverage at 50 labels with",
        "width: with a strong judge it is conservative (coverage near 1), which is why it is less than 30% narrower",
        "than human-only at 50 labels there. One active design cannot serve every rate: weighting toward the",
        "sessions where the unsafe-PASS rectifier is uncertain (production PASS) widens the other rates' intervals,",
        "and the design over all rates hardly differs from uniform choice. Use `--order random` unless one rate is",
        "what you need; the estimate stays unbiased under either, because it weights by the recorded probabilities.",
        "",
        "## Table",
        "",
        "Coverage (cov) and mean half-width (hw) over the seeds; ratio = PPI++ hw / human-only hw.",
        "",
        "| rate | judge κ | n | PPI++ cov | PPI++ hw | Wald cov | human cov | human hw | ratio | active (all) cov"
        " | active (all) hw | active (unsafe) cov | active (unsafe) hw | active (unsafe) hw at 75% n |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in data["rows"]:
        a, t = r["active all rates"], r["active unsafe PASS"]
        lines.append(
            f"| {r['rate']} | {r['judge_kappa']:.2f} | {r['n']} | {r['ppi']['coverage']:.3f} | "
            f"{r['ppi']['half_width']:.4f} | {r['wald']['coverage']:.3f} | {r['human']['coverage']:.3f} | "
            f"{r['human']['half_width']:.4f} | {r['ppi']['half_width'] / r['human']['half_width']:.2f} | "
            f"{a['coverage']:.3f} | {a['half_width']:.4f} | {t['coverage']:.3f} | {t['half_width']:.4f} | "
            f"{r['active unsafe PASS fewer']['half_width']:.4f} |"
        )
    return "\n".join(lines) + "\n"
