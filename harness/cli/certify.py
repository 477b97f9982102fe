"""`vbench sut serve` (the bundled system as a SUT) and `vbench certify` (the black-box conformance kit)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from pathlib import Path

from harness import UsageError
from harness.cli import EXIT_GATE, EXIT_OK, EXIT_USAGE

DEFAULT_CASES = Path("cases")
PROTOCOL_DIR = Path("docs/sut-protocol")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    sut = sub.add_parser("sut", help="the bundled system as a system under test (SUT protocol over HTTP)")
    sut_sub = sut.add_subparsers(dest="sut_command", metavar="SUBCOMMAND")
    serve = sut_sub.add_parser("serve", help="serve POST /verify and GET /info")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    serve.add_argument("--port-file", type=Path, help="write the bare port number here once requests are accepted")
    serve.add_argument(
        "--store", help="SQLAlchemy URL of a shared store (default: a fresh in-memory store per request)"
    )
    serve.set_defaults(handler=serve_command)
    schema = sut_sub.add_parser("schema", help="write the protocol's JSON Schemas (docs/sut-protocol/ is generated so)")
    schema.add_argument("--out", type=Path, default=PROTOCOL_DIR, help="folder to write the schemas into")
    schema.set_defaults(handler=schema_command)
    sut.set_defaults(handler=lambda _args: _usage(sut))

    cert = sub.add_parser("certify", help="certify a SUT on every policy case, over the SUT protocol")
    cert.add_argument("--sut", help="the SUT's base URL, e.g. http://127.0.0.1:8080 (with --replay: the certified one)")
    cert.add_argument("--cases", type=Path, action="append", help="case folder (repeatable; default: cases)")
    cert.add_argument(
        "--out", type=Path, required=True, help="folder for summary.json, certificate.json/.html, logs (--replay: read)"
    )
    cert.add_argument(
        "--filter", action="append", default=[], metavar="F", help="as vbench run: tag:T, scenario:S, id:GLOB, ..."
    )
    cert.add_argument("--timeout", type=float, default=30.0, help="seconds the SUT may wait for its model per case")
    cert.add_argument("--concurrency", type=int, default=4, help="cases in flight at once")
    cert.add_argument(
        "--model-base-url",
        help="a real OpenAI-compatible endpoint: quality cases go through the SUT with it (else they are skipped)",
    )
    cert.add_argument("--model", help="the model name at --model-base-url")
    cert.add_argument(
        "--mode",
        choices=["default", "certification"],
        default="default",
        help="certification: refuse --filter and any skipped case, so only a whole-corpus certificate can result",
    )
    cert.add_argument(
        "--spec",
        type=Path,
        metavar="DIR",
        help="count scenario coverage against this OpenSpec tree (a repository holding openspec/, or openspec/ "
        "itself) instead of the package's copy; new scenarios without a case make the certificate partial",
    )
    cert.add_argument("--force", action="store_true", help="replace an earlier certify run in --out")
    cert.add_argument(
        "--replay", metavar="CASE", help="send CASE's recorded exchange from the run in --out to the SUT again"
    )
    cert.add_argument("--sign-key", type=Path, help="an Ed25519 private key (PEM): sign certificate.json")
    cert.add_argument(
        "action", nargs="?", choices=["verify"], help="verify: check --out's certificate.json.sig with --public-key"
    )
    cert.add_argument("--public-key", type=Path, help="with verify: the Ed25519 public key (PEM)")
    cert.set_defaults(handler=certify_command)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return EXIT_USAGE


def schema_command(args: argparse.Namespace) -> int:
    import json

    from harness.system.protocol import protocol_schemas

    if not args.out.is_dir():
        raise UsageError(f"--out {args.out} is not a folder")
    for name, schema in protocol_schemas().items():
        (args.out / name).write_text(json.dumps(schema, indent=2) + "\n", encoding="utf-8")
        print(args.out / name)
    return EXIT_OK


def serve_command(args: argparse.Namespace) -> int:
    from harness.system.serve import SutServer, serve

    if args.port_file is not None and not args.port_file.parent.is_dir():
        raise UsageError(f"--port-file {args.port_file}: its folder does not exist")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(SutServer(args.store), args.host, args.port, args.port_file))
    return EXIT_OK


CERTIFY_FILES = (
    "results.jsonl",
    "cases.jsonl",
    "sut-log.jsonl",
    "summary.json",
    "certificate.json",
    "certificate.html",
)
"""What a certify run writes into --out (what --force replaces)."""


def url_problem(flag: str, url: str) -> str | None:
    """Why `url` cannot be a SUT's base URL (None: it can)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return f"{flag} {url!r} is not an http:// or https:// URL (e.g. http://127.0.0.1:8080)"
    return None


def out_problem(out: Path, force: bool) -> str | None:
    """Why a certify run cannot write into `out` (None: it can; with `force` an earlier run's files are removed)."""
    if out.exists() and not out.is_dir():
        return f"--out {out} is a file, not a folder"
    held = [name for name in CERTIFY_FILES if (out / name).exists()]
    if not held:
        return None
    if force:
        for name in held:
            (out / name).unlink()
        return None
    finished = "certificate.json" in held
    what = "a finished certify run" if finished else "an unfinished certify run (it stopped before its certificate)"
    return f"{out} already holds {what}; pass --force to replace it, or choose another --out"


def certify_command(args: argparse.Namespace) -> int:
    if args.action == "verify":
        return verify_command(args)
    if args.replay:
        return replay_command(args)
    from harness.corpus.loader import load_cases
    from harness.kit.certify import CertifySettings, certify
    from harness.kit.sut import SutUnreachable
    from harness.run.select import select_cases

    dirs = args.cases or [DEFAULT_CASES]
    if not args.sut:
        raise UsageError("--sut URL is required (the base URL of the system under test)")
    checks = [
        url_problem("--sut", args.sut),
        url_problem("--model-base-url", args.model_base_url) if args.model_base_url else None,
        *(f"--cases {d}: no such folder" for d in dirs if not d.is_dir()),
        "--timeout must be > 0 and --concurrency >= 1" if args.timeout <= 0 or args.concurrency < 1 else None,
        "--model-base-url and --model go together" if bool(args.model_base_url) != bool(args.model) else None,
        "--mode certification refuses --filter: it certifies the whole corpus given"
        if args.mode == "certification" and args.filter
        else None,
    ]
    if problem := next((c for c in checks if c), None):
        raise UsageError(problem)
    corpus = load_cases(dirs)  # a broken case file or filter is a UsageError: `main` says so and exits 2
    cases = select_cases(corpus, args.filter)
    policy = [c for c in cases if c.kind == "policy"]
    quality = [c for c in cases if c.kind == "quality"]
    if not policy:
        raise UsageError("no policy case matches the given folders and filters: nothing to certify")
    if args.mode == "certification" and quality and not args.model:
        raise UsageError(
            f"--mode certification refuses to skip the {len(quality)} quality cases in the folders given: name a "
            "model with --model-base-url and --model, or give only policy case folders (e.g. --cases cases/policy)"
        )
    if problem := out_problem(args.out, args.force):
        raise UsageError(problem)
    from harness.corpus.catalogue import DEFAULT_SPEC_DIR
    from harness.kit.spec_drift import SpecDirError, drift_lines, resolve_spec_dir, spec_drift

    try:
        spec_dir = resolve_spec_dir(args.spec) if args.spec is not None else DEFAULT_SPEC_DIR
    except SpecDirError as exc:
        raise UsageError(str(exc)) from None
    settings = CertifySettings(
        sut_url=args.sut,
        out=args.out,
        case_dirs=dirs,
        filters=args.filter,
        timeout_s=args.timeout,
        concurrency=args.concurrency,
        model_base_url=args.model_base_url,
        model=args.model,
        corpus_policy_cases=sum(1 for c in corpus if c.kind == "policy"),
        mode=args.mode,
        spec_dir=spec_dir,
    )
    try:
        result = certify(policy, quality, settings)
    except SutUnreachable as exc:
        raise UsageError(f"{exc} (nothing was written to {args.out})") from exc
    from harness.score.certificate import policy_tally

    cert, conf = result.certificate, result.summary.conformance
    print(cert.headline)
    print(
        f"{policy_tally(conf.policy_passed, conf.policy_cases)}{' agreed' if conf.policy_cases else ''}, "
        f"{conf.invariant_violations} invariant violations, {result.summary.errors} SUT errors; "
        f"{cert.skipped.quality_cases} quality cases skipped"
    )
    for variant in result.summary.variants:
        print(
            f"quality through the SUT ({variant.name}): {variant.quality_cases} cases, {variant.errors} errors, "
            f"verdict accuracy {variant.figure('verdict_accuracy')}, claim accuracy {variant.figure('claim_accuracy')}"
        )
    print(f"kit {cert.kit.version} at {cert.kit.git_sha}, source sha256 {cert.kit.source_sha256}")
    if args.spec is not None:
        for line in drift_lines(spec_drift(spec_dir, corpus)) or [f"{spec_dir}: scenarios and quotes as the package's"]:
            print(f"  SPEC {line}")
    for problem in cert.protocol_problems:
        print(f"  PROTOCOL {problem}")
    for failure in conf.failures[:20]:
        print(f"  FAIL {failure.case_id}: {'; '.join(failure.mismatches + failure.invariant_violations)[:300]}")
    if args.sign_key:
        from harness.kit.signing import SigningError, sign_certificate

        try:
            print(f"signed: {sign_certificate(args.out, args.sign_key)}")
        except SigningError as exc:
            raise UsageError(f"{exc} (the certificate was written unsigned)") from exc
    print(f"certificate: {args.out / 'certificate.html'}")
    return EXIT_OK if cert.status == "certified" else EXIT_GATE


def verify_command(args: argparse.Namespace) -> int:
    """Exit 0 when --out's certificate.json carries a valid signature by --public-key, 1 when it does not."""
    from harness.kit.signing import SigningError, verify_certificate

    if args.public_key is None:
        raise UsageError("vbench certify verify needs --public-key PEM")
    try:
        good = verify_certificate(args.out, args.public_key)
    except (SigningError, FileNotFoundError) as exc:
        raise UsageError(str(exc)) from exc
    print(
        f"{args.out / 'certificate.json'}: "
        + ("signature valid" if good else "signature INVALID (changed or another key)")
    )
    return EXIT_OK if good else EXIT_GATE


def replay_command(args: argparse.Namespace) -> int:
    """Send one case's recorded exchange again; exit 0 when it passes now, 1 when it still fails."""
    from harness.corpus.loader import CorpusError
    from harness.kit.replay import ReplayError, replay
    from harness.run.folder import RunFileError

    if args.sut and (problem := url_problem("--sut", args.sut)):
        raise UsageError(problem)
    try:
        result = replay(args.out, args.replay, args.sut)
    except (ReplayError, RunFileError, FileNotFoundError, CorpusError) as exc:
        raise UsageError(str(exc)) from exc
    print(f"replayed {result.case_id} against {result.sut_url}: HTTP {result.reply.status}")
    if result.reply.error:
        print(f"  ERROR {result.reply.error}")
    for problem in result.problems:
        print(f"  FAIL {problem}")
    print("passes" if result.passed else "fails")
    return EXIT_OK if result.passed else EXIT_GATE
