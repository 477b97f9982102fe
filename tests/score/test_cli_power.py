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


def test_power_says_what_an_equivalent_candidate_can_ship_within(capsys: pytest.CaptureFixture[str]) -> None:
    """The ship decision's interval, inverted: with no discordance z²/(n + z²) <= m needs n >= z² (1 - m) / m,
    72.99 at 5 points, so 73; five cases rule out no loss under 43.4 points."""
    assert main(["power", "--diff", "5"]) == 0
    assert "\n73 paired cases let an equivalent candidate ship within a 5 pp margin" in capsys.readouterr().out
    assert main(["power", "--cases", "5"]) == 0
    assert "on 5 paired cases ships only within a margin of 43.4 pp or more" in capsys.readouterr().out
