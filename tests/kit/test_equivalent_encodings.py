"""No false reds: a SUT that encodes the same meaning differently gets the very same certificate.

A re-encoding proxy (tests/kit/reencode.py) sits on 127.0.0.1 between the kit and the bundled SUT and changes
only what a correct implementation may change: escaping (ensure_ascii, Gson's HTML-safe, PHP's `\\/`), key
order, whitespace, number spelling and the order of lists the spec sets no order in, in the request, the answer
and the prompt text. Hypothesis draws the encodings; each is certified on the whole policy corpus over HTTP.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from tests.kit.helpers import ROOT, serve_args, sut_process
from tests.kit.reencode import Encoding, ReencodingProxy

POLICY_DIR = str(ROOT / "cases" / "policy")

encodings = st.builds(
    Encoding,
    escape=st.sampled_from(["python", "ascii", "gson", "php"]),
    key_order=st.sampled_from(["as-is", "reversed", "sorted"]),
    indent=st.sampled_from([None, 2]),
    numbers=st.sampled_from(["as-is", "float", "exp"]),
    shuffle_seed=st.one_of(st.none(), st.integers(0, 1000)),
)


@pytest.fixture(scope="module")
def sut_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port_file = tmp_path_factory.mktemp("sut") / "port"
    with sut_process(serve_args(port_file), port_file) as url:
        yield url


def judged(out: Path) -> dict[str, Any]:
    """What a certificate says about the SUT (not when or where it ran)."""
    cert = json.loads((out / "certificate.json").read_text())
    keep = (
        "status",
        "policy_cases",
        "policy_passed",
        "invariant_violations",
        "errors",
        "scenarios",
        "failures",
        "failed_cases",
        "protocol_problems",
    )
    return {k: cert[k] for k in keep}


@pytest.fixture(scope="module")
def plain(sut_url: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("plain") / "out"
    assert main(["certify", "--sut", sut_url, "--cases", POLICY_DIR, "--out", str(out)]) == 0
    return judged(out)


def certify_through(sut_url: str, encoding: Encoding, out: Path) -> tuple[int, dict[str, Any]]:
    with ReencodingProxy(sut_url, encoding) as proxy:
        code = main(["certify", "--sut", proxy, "--cases", POLICY_DIR, "--out", str(out), "--force"])
    return code, judged(out)


@pytest.mark.parametrize(
    "encoding",
    [
        Encoding(escape="gson"),
        Encoding(escape="php"),
        Encoding(shuffle_seed=7),
        Encoding(escape="ascii", key_order="reversed", indent=2, numbers="exp"),
    ],
    ids=["gson-html-safe", "php-slashes", "lists-shuffled", "ascii-reversed-indented-1e0"],
)
def test_named_equivalent_encodings_certify_alike(
    sut_url: str, plain: dict[str, Any], encoding: Encoding, tmp_path: Path
) -> None:
    code, got = certify_through(sut_url, encoding, tmp_path / "out")
    assert (code, got) == (0, plain)


@pytest.mark.slow
@settings(max_examples=4, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(encoding=encodings)
def test_any_equivalent_encoding_leaves_the_certificate_unchanged(
    sut_url: str, plain: dict[str, Any], encoding: Encoding, tmp_path_factory: pytest.TempPathFactory
) -> None:
    code, got = certify_through(sut_url, encoding, tmp_path_factory.mktemp("enc") / "out")
    assert (code, got) == (0, plain), encoding
