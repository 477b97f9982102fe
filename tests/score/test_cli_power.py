"""`vbench power`: the sample-size question answered from the same formula the decisions' MDE uses."""

from __future__ import annotations

import pytest

from harness.cli import main
from harness.score.stats import cases_needed, mde_paired_binary


def test_power_answers_both_ways(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["power", "--diff", "5"]) == 0
    assert capsys.readouterr().out.startswith(f"{cases_needed(0.05, 0.0)} paired cases detect a 5 pp difference")
    assert main(["power", "--cases", "136", "--discordance", "20"]) == 0
    assert f"{mde_paired_binary(136, 27) * 100:.1f} pp or more" in capsys.readouterr().out
    assert main(["power", "--diff", "0"]) == 2 and "--diff must lie" in capsys.readouterr().err
    assert main(["power"]) == 2  # one of --diff or --cases is required
