"""Shards and merge: `vbench run --shard I/N` over real HTTP, then `vbench merge` gives the single run's figures.

Two scripted models behind the local OpenAI-compatible server (the biased one of the perturbation tests, so
figures differ between variants), two prompts, two epochs and a perturbation: 7 quality cases × 4 variants × 2
epochs, twice (as written and under claim-order), and a policy case.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.devtools.local_server import LocalOpenAIServer
from harness.run.folder import read_manifest, read_results
from harness.run.merge import without_timings
from harness.run.shard import Shard, parse_shard, shard_of
from tests.run.corpus_builder import write_corpus
from tests.run.test_perturb_run import BIASED, UNBIASED, scripted


def args(server: LocalOpenAIServer, corpus: Path, out: Path, *extra: str) -> list[str]:
    return [
        *("run", "--cases", str(corpus), "--model", BIASED, "--model", UNBIASED),
        *("--prompt", "baseline", "--prompt", "strict-evidence", "--epochs", "2", "--perturb", "claim-order"),
        *("--base-url", server.base_url, "--out", str(out), "--no-cache", "--no-report", "--concurrency", "4"),
        *extra,
    ]


@pytest.fixture
def server(openai_server: LocalOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> LocalOpenAIServer:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-shards")
    openai_server.responder = scripted
    return openai_server


@pytest.fixture
def sharded(tmp_path: Path, server: LocalOpenAIServer) -> dict[str, Path]:
    """The corpus run whole and as 3 shards (each folder by name)."""
    corpus = write_corpus(tmp_path / "corpus")
    runs = {"whole": tmp_path / "whole"}
    assert main(args(server, corpus, runs["whole"])) == 0
    for i in (1, 2, 3):
        runs[f"s{i}"] = tmp_path / f"shard-{i}"
        assert main(args(server, corpus, runs[f"s{i}"], "--shard", f"{i}/3")) == 0
    runs["corpus"] = corpus
    return runs


def test_shards_partition_by_key_not_position() -> None:
    keys = [(f"case-{i}", f"h{i}", v, e) for i in range(300) for v in ("a", "b@p") for e in (1, 2)]
    for count in (1, 2, 3, 7):
        owners = [[i for i in range(1, count + 1) if Shard(index=i, count=count).holds(k)] for k in keys]
        assert all(len(o) == 1 for o in owners)  # every unit in exactly one shard
        sizes = [sum(o == [i] for o in owners) for i in range(1, count + 1)]
        assert min(sizes) > len(keys) / count * 0.8  # the hash spreads units evenly
    assert [shard_of(k, 3) for k in keys] == [shard_of(k, 3) for k in reversed(keys)][::-1]  # order plays no part
    assert shard_of(("case-1", "h1", "a", 1), 3) != shard_of(("case-1", "h1", "a", 2), 3) or shard_of(
        ("case-1", "h1", "a", 3), 3
    ) != shard_of(("case-1", "h1", "a", 1), 3)  # the epoch is part of the key


@pytest.mark.parametrize("bad", ["0/3", "4/3", "3", "a/b", "1/0", "-1/2", "2/3/4"])
def test_bad_shard_exits_2(bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    assert main(["run", "--cases", str(corpus), "--out", str(tmp_path / "o"), "--shard", bad, "--no-report"]) == 2
    assert "shard" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    with pytest.raises(ValueError):
        parse_shard(bad)


def test_three_shards_cover_every_unit_once_and_merge_to_the_single_run(
    tmp_path: Path, sharded: dict[str, Path]
) -> None:
    whole = read_results(sharded["whole"])
    parts = [read_results(sharded[f"s{i}"]) for i in (1, 2, 3)]
    assert len(whole) == 1 + 7 * 4 * 2 * 2  # the policy case, quality and perturbed units per variant × epoch
    assert all(parts)  # no empty shard in this plan
    keys = [r.key for part in parts for r in part]
    assert sorted(keys) == sorted(r.key for r in whole)  # exactly once each
    assert any(r.perturbation for part in parts for r in part)
    for i in (1, 2, 3):
        shard = read_manifest(sharded[f"s{i}"]).settings.shard
        assert shard is not None and (shard.shard, shard.units, shard.plan_units) == (
            f"{i}/3",
            len(parts[i - 1]),
            len(whole),
        )

    merged = tmp_path / "merged"
    assert main(["merge", *(str(sharded[f"s{i}"]) for i in (1, 2, 3)), "--out", str(merged), "--no-report"]) == 0
    single = json.loads((sharded["whole"] / "summary.json").read_text())
    joined = json.loads((merged / "summary.json").read_text())
    assert without_timings(joined) == without_timings(single)
    assert joined["variants"][0]["robustness"]  # the perturbed units merged too
    assert joined["run"]["results"] == single["run"]["results"]
    manifest = read_manifest(merged)
    assert "shard" not in manifest.settings and len(manifest.settings["merged_from"]) == 3
    # a merged folder is a normal run folder: report renders it, and it is a baseline for another run
    assert main(["report", str(merged)]) == 0
    assert (merged / "report.html").exists()


def test_merged_run_is_a_baseline(tmp_path: Path, sharded: dict[str, Path], server: LocalOpenAIServer) -> None:
    merged = tmp_path / "merged"
    assert main(["merge", *(str(sharded[f"s{i}"]) for i in (1, 2, 3)), "--out", str(merged), "--no-report"]) == 0
    again = tmp_path / "again"
    assert main(
        args(server, sharded["corpus"], again, "--baseline", str(merged), "--control", f"{UNBIASED}@baseline")
    ) in (0, 1)
    summary = json.loads((again / "summary.json").read_text())
    assert summary["baseline"]["path"] == str(merged) and summary["decisions"]


def test_merge_refuses_what_is_not_one_whole_run(
    tmp_path: Path, sharded: dict[str, Path], server: LocalOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    s1, s2, s3 = (str(sharded[f"s{i}"]) for i in (1, 2, 3))

    def refused(*runs: str) -> str:
        out = tmp_path / f"m{len(list(tmp_path.iterdir()))}"
        assert main(["merge", *runs, "--out", str(out), "--no-report"]) == 2
        assert not (out / "manifest.json").exists()
        return capsys.readouterr().err

    assert "missing units" in refused(s1, s2)
    assert "overlapping units" in refused(s1, s2, s2, s3)
    assert "not a shard" in refused(s1, s2, str(sharded["whole"]))
    # another setting: shard 3 run with --epochs 1
    other = tmp_path / "other-3"
    assert main(args(server, sharded["corpus"], other, "--shard", "3/3", "--epochs", "1")) == 0
    assert "different runs" in refused(s1, s2, str(other))
    # another corpus: one case changed
    changed = shutil.copytree(sharded["corpus"], tmp_path / "corpus2")
    (changed / "q7.yaml").write_text((changed / "q7.yaml").read_text().replace("Carts", "Baskets"))
    moved = tmp_path / "moved-3"
    assert main(args(server, changed, moved, "--shard", "3/3")) == 0
    assert "corpus_hash" in refused(s1, s2, str(moved))
    # another code fingerprint
    fake = shutil.copytree(sharded["s3"], tmp_path / "fingerprint-3")
    manifest = json.loads((fake / "manifest.json").read_text())
    manifest["settings"]["code_fingerprint"] = "0" * 16
    (fake / "manifest.json").write_text(json.dumps(manifest))
    assert "code fingerprint" in refused(s1, s2, str(fake))
    # an unfinished shard: its last result lost
    cut = shutil.copytree(sharded["s3"], tmp_path / "cut-3")
    lines = (cut / "results.jsonl").read_text().splitlines(keepends=True)
    (cut / "results.jsonl").write_text("".join(lines[:-1]))
    assert "unfinished shard" in refused(s1, s2, str(cut))


def test_resume_finishes_a_shard(tmp_path: Path, sharded: dict[str, Path], server: LocalOpenAIServer) -> None:
    cut = shutil.copytree(sharded["s2"], tmp_path / "cut-2")
    lines = (cut / "results.jsonl").read_text().splitlines(keepends=True)
    (cut / "results.jsonl").write_text("".join(lines[: len(lines) // 2]))
    lost = [json.loads(line) for line in lines[len(lines) // 2 :]]
    before = server.request_count
    assert main(args(server, sharded["corpus"], cut, "--shard", "1/3", "--resume")) == 2  # another shard's folder
    assert main(args(server, sharded["corpus"], cut, "--shard", "2/3", "--resume")) == 0
    assert server.request_count - before == sum(r["kind"] == "quality" for r in lost)  # only the lost units ran
    assert sorted(r.key for r in read_results(cut)) == sorted(r.key for r in read_results(sharded["s2"]))
    merged = tmp_path / "merged"
    assert main(["merge", str(sharded["s1"]), str(cut), str(sharded["s3"]), "--out", str(merged), "--no-report"]) == 0
    single = json.loads((sharded["whole"] / "summary.json").read_text())
    assert without_timings(json.loads((merged / "summary.json").read_text())) == without_timings(single)


def test_study_key_shard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`shard` in a study file is the same as the flag; a bad one names the key and exits 2."""
    corpus = write_corpus(tmp_path / "corpus")
    good, bad = tmp_path / "good.toml", tmp_path / "bad.toml"
    good.write_text(f'cases = ["{corpus}"]\nshard = "2/2"\ncache = "{tmp_path / "cache"}"\n')
    bad.write_text(f'cases = ["{corpus}"]\nshard = "3/2"\n')
    assert main(["run", "--study", str(good), "--out", str(tmp_path / "o"), "--no-report"]) in (0, 1)
    shard = read_manifest(tmp_path / "o").settings.shard
    assert shard is not None and shard.shard == "2/2"
    assert main(["run", "--study", str(bad), "--out", str(tmp_path / "p"), "--no-report"]) == 2
    err = capsys.readouterr().err
    assert "shard" in err and "bad.toml" in err
