"""One measurement per process: `python -m bench.workers KIND --work DIR ...` prints one JSON object.

Each kind times only its own part (after imports and data loading): wall time
(perf_counter) and this process's CPU (process_time). The local server runs in
another process, so its CPU is never charged to the client measured here.

  raw          the raw `openai.AsyncOpenAI` client: chat.completions.create(...) per request   (a)
  raw-aiohttp  the same on openai's aiohttp transport (DefaultAioHttpClient), as the harness   (a*)
  lean         the harness's client path bare: client.post(..., cast_to=Response) on aiohttp   (a', reference)
  harness    `run_study` on the same cases (one model, one prompt, no cache unless --cache)  (b)
  peer       Inspect AI's OpenAI provider (chat completions) on the same requests             (d)
  promptfoo  promptfoo's OpenAI provider on the same requests, `promptfoo eval` timed whole    (p)
  reference  `run_study` with the offline reference verifier over a corpus folder             (e)
  score      `score_run` on a run folder                                                      (f)
  render     `harness.report.render.render_run` on a run folder                               (f)
  stages     harness CPU per case by stage, no network (render, gatekeeper, policy, store, log)
  suite      raw, raw-aiohttp, lean and harness interleaved `--reps` times in one process
  profile    one harness run under pyinstrument: self time by package
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CASES_JSONL, BODIES_JSON = "cases.jsonl", "bodies.json"
SUITE_KINDS = ("raw", "raw-aiohttp", "lean", "harness")


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def _timed(fn: Callable[[], Any]) -> tuple[Any, dict[str, float]]:
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}


def _load_bodies(work: Path, n: int | None) -> list[dict[str, Any]]:
    bodies = json.loads((work / BODIES_JSON).read_text(encoding="utf-8"))
    return bodies[:n] if n else bodies


async def _drain(items: list[Any], concurrency: int, send: Callable[[Any], Any]) -> int:
    """Send every item with `concurrency` workers on one queue (the runner's own scheme); count failures."""
    queue: asyncio.Queue[Any] = asyncio.Queue()
    for item in items:
        queue.put_nowait(item)
    failures = 0

    async def worker() -> None:
        nonlocal failures
        while not queue.empty():
            item = queue.get_nowait()
            try:
                await send(item)
            except Exception:
                failures += 1

    await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(items))))))
    return failures


def factory_for(study: Any) -> Callable[[Any, int], Any]:
    """The CLI's verifier factory (`harness.run.providers.study_factory`), without importing the whole CLI."""
    from harness.run.providers import study_factory

    return study_factory(study)


def _client(args: argparse.Namespace, transport: str) -> Any:
    """`openai.AsyncOpenAI` as a user builds it: the client's default transport, or openai's aiohttp one."""
    import openai

    http = {"http_client": openai.DefaultAioHttpClient()} if transport == "aiohttp" else {}
    return openai.AsyncOpenAI(base_url=args.url, api_key="no-key", max_retries=0, timeout=120.0, **http)


def _raw_on(transport: str) -> Callable[[argparse.Namespace], dict[str, Any]]:
    def raw(args: argparse.Namespace) -> dict[str, Any]:
        """(a) The raw client as a user writes it: one create() per request, typed response parsed."""
        bodies = _load_bodies(args.work, args.n)

        async def main() -> int:
            client = _client(args, transport)
            bad = 0

            async def send(body: dict[str, Any]) -> None:
                nonlocal bad
                completion = await client.chat.completions.create(**body["params"], extra_body=body["extra_body"])
                bad += not completion.choices[0].message.content

            failures = await _drain(bodies, args.concurrency, send)
            await client.close()
            return failures + bad

        failures, timing = _timed(lambda: asyncio.run(main()))
        return {"requests": len(bodies), "failures": failures, "transport": transport, **timing}

    return raw


raw, raw_aiohttp = _raw_on("httpx"), _raw_on("aiohttp")


def lean(args: argparse.Namespace) -> dict[str, Any]:
    """(a') The harness's own path with nothing around it: client.post(..., cast_to=Response) on aiohttp."""
    try:
        import httpx2 as http
    except ImportError:  # openai releases built on httpx
        import httpx as http  # type: ignore[no-redef]

    bodies = _load_bodies(args.work, args.n)

    async def main() -> int:
        client = _client(args, "aiohttp")
        bad = 0

        async def send(body: dict[str, Any]) -> None:
            nonlocal bad
            response = await client.post(
                "/chat/completions", body={**body["params"], **body["extra_body"]}, cast_to=http.Response
            )
            bad += not response.json()["choices"][0]["message"]["content"]

        failures = await _drain(bodies, args.concurrency, send)
        await client.close()
        return failures + bad

    failures, timing = _timed(lambda: asyncio.run(main()))
    return {"requests": len(bodies), "failures": failures, "transport": "aiohttp", **timing}


def harness(args: argparse.Namespace) -> dict[str, Any]:
    """(b) `run_study` as `vbench run` calls it: one openai: model, the baseline prompt, results to a folder."""
    from bench.data import MODEL, PROMPT, read_case_lines
    from harness.run.folder import read_results
    from harness.run.runner import run_study
    from harness.run.study import ModelSettings, Study

    cases = read_case_lines(args.work / CASES_JSONL)[: args.n or None]
    model = f"openai:{MODEL}"
    study = Study(
        cases=[args.work / "cases"],
        models=[model],
        prompts=[PROMPT],
        concurrency=args.concurrency,
        cache=args.cache,
        replay=not args.no_replay,
        model_settings={model: ModelSettings(base_url=args.url)},
        report=False,
    )
    if args.out.exists():
        shutil.rmtree(args.out)
    result, timing = _timed(lambda: run_study(study, cases, args.out, factory_for(study)))
    out: dict[str, Any] = {"requests": result.finished, **timing}
    records = read_results(args.out)
    cpu = sorted(r.harness_cpu_ms for r in records)
    out |= {
        "failures": sum(1 for r in records if r.error or r.reply_status != "valid"),
        "cached": sum(1 for r in records if r.cached),
        "replayed": sum(1 for r in records if r.replayed),
        "harness_cpu_ms_p50": statistics.median(cpu),
        "harness_cpu_ms_p95": cpu[int(0.95 * (len(cpu) - 1))],
        "harness_cpu_ms_mean": statistics.fmean(cpu),
    }
    if args.score:
        from harness.score.scoring import GateSettings, score_run

        summary, score_timing = _timed(lambda: score_run(args.out, GateSettings()))
        out |= {
            "score_wall_s": score_timing["wall_s"],
            "summary_harness_cpu_ms": summary.variants[0].harness_cpu_ms,
        }
    if not args.keep:
        shutil.rmtree(args.out, ignore_errors=True)
    return out


def peer(args: argparse.Namespace) -> dict[str, Any]:
    """(d) Inspect AI's OpenAI provider over chat completions on the same rendered requests."""
    try:
        import inspect_ai
        from inspect_ai import Task
        from inspect_ai import eval as inspect_eval
        from inspect_ai.dataset import Sample
        from inspect_ai.model import ChatMessageSystem, ChatMessageUser, ResponseSchema
        from inspect_ai.solver import generate
        from inspect_ai.util import JSONSchema
    except ImportError as exc:
        return {"error": f"inspect-ai is not installed here ({exc}); run the bench through `nox -s bench`"}
    from bench.data import MODEL

    requests = [b["request"] for b in _load_bodies(args.work, args.n)]
    first = requests[0]
    schema = ResponseSchema(
        name=first["schema_name"], json_schema=JSONSchema.model_validate(first["response_schema"]), strict=False
    )

    def messages(request: dict[str, Any]) -> list[Any]:
        kinds = {"system": ChatMessageSystem, "user": ChatMessageUser}
        return [kinds[m["role"]](content=m["content"]) for m in request["messages"]]

    task = Task(dataset=[Sample(input=messages(r), id=i) for i, r in enumerate(requests)], solver=generate())
    os.environ.setdefault("OPENAI_API_KEY", "no-key")
    logs, timing = _timed(
        lambda: inspect_eval(
            task,
            model=f"openai/{MODEL}",
            model_base_url=args.url,
            model_args={"responses_api": False},
            display="none",
            log_dir=str(args.out),
            max_connections=args.concurrency,
            max_retries=0,
            temperature=first["temperature"],
            seed=first["seed"],
            max_tokens=first["max_tokens"],
            response_schema=schema,
            score=False,
            log_realtime=False,
        )
    )
    log = logs[0]
    samples = log.samples or []
    failures = sum(1 for s in samples if s.error or not s.output.completion) + len(requests) - len(samples)
    shutil.rmtree(args.out, ignore_errors=True)
    return {
        "requests": len(requests),
        "failures": failures,
        "status": log.status,
        "inspect_ai": getattr(inspect_ai, "__version__", "?"),
        **timing,
    }


def promptfoo(args: argparse.Namespace) -> dict[str, Any]:
    """(p) promptfoo (bench.promptfoo) on the same request bodies, one whole `promptfoo eval` process."""
    from bench.promptfoo import installed_version, run_eval, write_config

    bodies = _load_bodies(args.work, args.n)
    params = {**bodies[0]["params"], **bodies[0]["extra_body"]}
    requests = [{**b["params"], **b["extra_body"]} for b in bodies]
    config = write_config(requests, params, args.url, args.out)
    result = run_eval(config, args.concurrency, args.out / "results.json")
    shutil.rmtree(args.out, ignore_errors=True)
    return {"requests": len(requests), "promptfoo": installed_version(), **result}


def reference(args: argparse.Namespace) -> dict[str, Any]:
    """(e) The offline reference verifier over a whole corpus folder, as `vbench run` does it."""
    from harness.corpus.loader import load_cases
    from harness.run.runner import run_study
    from harness.run.study import Study

    cases, load = _timed(lambda: load_cases([args.corpus]))
    study = Study(cases=[args.corpus], models=["reference"], concurrency=args.concurrency, cache=None, report=False)
    if args.out.exists():
        shutil.rmtree(args.out)
    result, timing = _timed(lambda: run_study(study, cases, args.out, factory_for(study)))
    shutil.rmtree(args.out, ignore_errors=True)
    return {"cases": len(cases), "tasks": result.finished, "load_wall_s": load["wall_s"], **timing}


def score(args: argparse.Namespace) -> dict[str, Any]:
    from harness.score.scoring import GateSettings, score_run

    _, timing = _timed(lambda: score_run(args.out, GateSettings()))
    return {**timing, "peak_rss_mib": _peak_rss_mib()}


def render(args: argparse.Namespace) -> dict[str, Any]:
    try:
        from harness.report.render import render_run
    except ImportError as exc:
        return {"error": f"harness.report.render is not in this checkout ({exc})"}
    base = _peak_rss_mib()
    report, timing = _timed(lambda: render_run([args.out], args.out))
    return {
        **timing,
        "peak_rss_mib": _peak_rss_mib(),
        "rss_before_mib": base,
        "html_mib": report.stat().st_size / 2**20,
    }


def profile(args: argparse.Namespace) -> dict[str, Any]:
    """One harness run under pyinstrument: self time of run_study by part, and the text profile."""
    try:
        from pyinstrument import Profiler
    except ImportError as exc:
        return {"error": f"pyinstrument is not installed here ({exc}); run the bench through `nox -s bench`"}
    profiler = Profiler(interval=0.001, async_mode="disabled")
    profiler.start()
    result = harness(args)
    profiler.stop()
    groups: dict[str, float] = {}

    def walk(frame: Any, parent: str) -> None:
        path = frame.file_path or ""
        # "[self]" and built-in frames have no file of their own: they count for their caller's part
        group = parent if not path or path.startswith("<") else _group(path, frame.function or "")
        own = frame.time - sum(child.time for child in frame.children)
        groups[group] = groups.get(group, 0.0) + max(0.0, own)
        for child in frame.children:
            walk(child, group)

    def find(frame: Any) -> Any:
        if frame.function == "run_study":
            return frame
        return next((hit for child in frame.children if (hit := find(child)) is not None), None)

    session = profiler.last_session
    root = session.root_frame() if session is not None else None
    run = find(root) if root is not None else None
    if run is not None:
        walk(run, "harness.run")  # only the run itself: not the imports, the case loading or the reading of results
    total = sum(groups.values()) or 1.0
    if args.profile_text:
        args.profile_text.write_text(profiler.output_text(unicode=False, color=False), encoding="utf-8")
    shares = {k: round(v / total, 4) for k, v in sorted(groups.items(), key=lambda kv: -kv[1])}
    return {**result, "sampled_s": total, "self_time_share": shares}


def _group(path: str, function: str) -> str:
    """Which part of the stack a frame belongs to, for the profile's self-time shares."""
    if "/harness/" in path:
        return "harness." + path.split("/harness/", 1)[1].split("/", 1)[0]
    if "site-packages/" in path:
        package = path.split("site-packages/", 1)[1].split("/", 1)[0]
        if package in ("openai", "httpx", "httpx2", "httpcore", "httpcore2", "h11", "anyio", "sniffio"):
            return "openai client (openai, httpx, httpcore, h11, anyio)"
        return package
    if "asyncio" in path or "selectors" in path or function in ("select", "poll"):
        return "asyncio event loop (incl. waiting in select)"
    return "other (stdlib, builtins)"


def suite(args: argparse.Namespace) -> dict[str, Any]:
    """(a), (a') and (b) `--reps` times each in this one process, interleaved, the order rotating per repetition.

    One process for all saves the imports per measurement (the 10-minute budget); before each run of the
    harness the process-wide state a fresh `vbench run` would not have is reset (remembered structured-output
    modes, the shared TLS context), and garbage is collected between runs so no run pays for another's.
    """
    import gc

    from harness.llm import modes
    from harness.llm.http import shared_ssl_context

    kinds = [k for k in args.kinds.split(",") if k]
    out: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
    for rep in range(args.reps):
        for kind in kinds[rep % len(kinds) :] + kinds[: rep % len(kinds)]:
            modes.reset()
            shared_ssl_context.cache_clear()
            gc.collect()
            before = _process_cpu(args.server_pid)
            try:
                result = KINDS[kind](args)
            except Exception as exc:  # recorded, so one broken kind does not lose the others
                result = {"error": f"{type(exc).__name__}: {exc}"[:500]}
            result["server_cpu_s"] = _process_cpu(args.server_pid) - before
            out[kind].append(result)
            brief = result.get("error") or f"{result['wall_s']:.2f} s wall, {result['cpu_s']:.2f} s cpu"
            print(f"  rep {rep + 1} {kind}: {brief}", file=sys.stderr, flush=True)
    return out


def _process_cpu(pid: int) -> float:
    """User + system CPU seconds of another process (Linux /proc; 0.0 when unknown)."""
    if not pid:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stages(args: argparse.Namespace) -> dict[str, Any]:
    from bench.stages import stage_breakdown

    return stage_breakdown(args.work / CASES_JSONL, args.n)


KINDS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "raw": raw,
    "raw-aiohttp": raw_aiohttp,
    "lean": lean,
    "harness": harness,
    "peer": peer,
    "promptfoo": promptfoo,
    "reference": reference,
    "score": score,
    "render": render,
    "stages": stages,
    "suite": suite,
    "profile": profile,
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("kind", choices=sorted(KINDS))
    parser.add_argument("--work", type=Path, default=Path("."))
    parser.add_argument("--url", default="")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--n", type=int, default=0, help="first N requests/cases only (0: all)")
    parser.add_argument("--out", type=Path, default=Path("bench-out"))
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--corpus", type=Path, default=Path("cases"))
    parser.add_argument("--score", action="store_true", help="harness: also time score_run")
    parser.add_argument("--keep", action="store_true", help="harness: keep the run folder")
    parser.add_argument("--kinds", default=",".join(SUITE_KINDS), help="suite: the kinds to interleave")
    parser.add_argument("--no-replay", action="store_true", help="harness: run the system on cached replies")
    parser.add_argument("--reps", type=int, default=1, help="suite: repetitions of each kind")
    parser.add_argument("--server-pid", type=int, default=0, help="suite: the server, to read its CPU time")
    parser.add_argument("--profile-text", type=Path, default=None, help="profile: write the text profile here")
    args = parser.parse_args(argv)
    result = KINDS[args.kind](args)
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
