"""`python -m harness.cli.estimate_validity` (`nox -s estimate-validity`): the estimate's validity study, written
to reports/estimate/validity-<date>.md and .json. Exit 1 when a band is not met (the report says which)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from harness.validity.estimate import bands, markdown, study


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.cli.estimate_validity", description=__doc__)
    parser.add_argument("--seeds", type=int, default=1000, help="samples per row (default 1000)")
    parser.add_argument("--out", type=Path, default=Path("reports/estimate"), help="folder for the report")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    started = time.perf_counter()
    data = study(seeds=args.seeds)
    seconds = time.perf_counter() - started
    command = "python -m harness.cli.estimate_validity" + (f" --seeds {args.seeds}" if args.seeds != 1000 else "")
    stamp = datetime.now(UTC).strftime("%Y-%m-%d")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"validity-{stamp}.md").write_text(markdown(data, command, seconds), encoding="utf-8")
    (args.out / f"validity-{stamp}.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    unmet = [b for b in bands(data) if not b["met"]]
    for b in bands(data):
        print(f"{'met    ' if b['met'] else 'NOT MET'} {b['band']}")
    print(f"wrote {args.out / f'validity-{stamp}.md'} ({seconds:.0f} s)")
    return 1 if unmet else 0


if __name__ == "__main__":
    sys.exit(main())
