"""`vbench sut serve` (the bundled system as a SUT) and `vbench certify` (the black-box conformance kit)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from pathlib import Path

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
    schema.add_argument("--out", type=Path, default=PROTOCOL_DIR)
    schema.set_defaults(handler=schema_command)
    sut.set_defaults(handler=lambda _args: _usage(sut))

    cert = sub.add_parser("certify", help="certify a SUT on every policy case, over the SUT protocol")
    cert.add_argument("--sut", required=True, help="the SUT's base URL, e.g. http://127.0.0.1:8080")
    cert.add_argument("--cases", type=Path, action="append", help="case folder (repeatable; default: cases)")
    cert.add_argument("--out", type=Path, required=True, help="folder for summary.json, certificate.json/.html, logs")
    cert.add_argument(
        "--filter", action="append", default=[], metavar="F", help="as vbench run: tag:T, scenario:S, id:GLOB, ..."
    )
    cert.add_argument("--timeout", type=float, default=30.0, help="seconds the SUT may take per case")
    cert.add_argument("--concurrency", type=int, default=4, help="cases in flight at once")
    cert.add_argument(
        "--model-base-url",
        help="a real OpenAI-compatible endpoint: quality cases go through the SUT with it (else they are skipped)",
    )
    cert.add_argument("--model", help="the model name at --model-base-url")
    cert.set_defaults(handler=certify_command)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return EXIT_USAGE


def schema_command(args: argparse.Namespace) -> int:
    import json

    from harness.system.protocol import protocol_schemas

    if not args.out.is_dir():
        print(f"error: --out {args.out} is not a folder", file=sys.stderr)
        return EXIT_USAGE
    for name, schema in protocol_schemas().items():
        (args.out / name).write_text(json.dumps(schema, indent=2) + "\n", encoding="utf-8")
        print(args.out / name)
    return EXIT_OK


def serve_command(args: argparse.Namespace) -> int:
    from harness.system.serve import SutServer, serve

    if args.port_file is not None and not args.port_file.parent.is_dir():
        print(f"error: --port-file {args.port_file}: its folder does not exist", file=sys.stderr)
        return EXIT_USAGE
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(SutServer(args.store), args.host, args.port, args.port_file))
    return EXIT_OK


def certify_command(args: argparse.Namespace) -> int:
    from harness.corpus.loader import CorpusError, load_cases
    from harness.kit.certify import CertifySettings, certify
    from harness.kit.sut import SutUnreachable
    from harness.run.folder import RESULTS_FILE
    from harness.run.select import FilterError, select_cases

    dirs = args.cases or [DEFAULT_CASES]
    if args.timeout <= 0 or args.concurrency < 1:
        print("error: --timeout must be > 0 and --concurrency >= 1", file=sys.stderr)
        return EXIT_USAGE
    if bool(args.model_base_url) != bool(args.model):
        print("error: --model-base-url and --model go together", file=sys.stderr)
        return EXIT_USAGE
    if (args.out / RESULTS_FILE).exists():
        print(f"error: {args.out} already holds a run; choose another --out", file=sys.stderr)
        return EXIT_USAGE
    try:
        corpus = load_cases(dirs)
        cases = select_cases(corpus, args.filter)
    except FilterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except CorpusError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_USAGE
    policy = [c for c in cases if c.kind == "policy"]
    quality = [c for c in cases if c.kind == "quality"]
    if not policy:
        print("error: no policy case matches the given folders and filters: nothing to certify", file=sys.stderr)
        return EXIT_USAGE
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
    )
    try:
        result = certify(policy, quality, settings)
    except SutUnreachable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    cert, conf = result.certificate, result.summary["conformance"]
    print(cert.headline)
    print(
        f"{conf['policy_passed']}/{conf['policy_cases']} policy cases agreed, "
        f"{conf['invariant_violations']} invariant violations, {result.summary['errors']} SUT errors; "
        f"{cert.skipped.quality_cases} quality cases skipped"
    )
    for variant in result.summary["variants"]:
        print(
            f"quality through the SUT ({variant['name']}): {variant['quality_cases']} cases, {variant['errors']} errors, "
            f"verdict accuracy {variant.get('verdict_accuracy')}, claim accuracy {variant.get('claim_accuracy')}"
        )
    print(f"kit {cert.kit.version} at {cert.kit.git_sha}")
    for failure in conf["failures"][:20]:
        print(
            f"  FAIL {failure['case_id']}: {'; '.join(failure['mismatches'] + failure['invariant_violations'])[:300]}"
        )
    print(f"certificate: {args.out / 'certificate.html'}")
    return EXIT_OK if result.passed else EXIT_GATE
