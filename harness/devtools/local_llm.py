"""`python -m harness.devtools.local_llm`: install llama.cpp's server, fetch the packaged model, run a command against it.

Why: `nox -s local-llm` and CI need one offline path to a real model on this machine. The steps are cached
(the built wheel and the extracted model live under the cache dir), and the server is always stopped,
also when the command fails or this process is interrupted or terminated.

    python -m harness.devtools.local_llm install            # build (once, cached) and pip-install llama-cpp-python[server]
    python -m harness.devtools.local_llm model              # print the path of the extracted GGUF
    python -m harness.devtools.local_llm serve -- CMD ...   # run CMD with OPENAI_BASE_URL pointing at the server
    python -m harness.devtools.local_llm note RUN_DIR  # closing note (harness.report.local_note) into the run folder
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

from harness.devtools.llamacpp import (
    LLAMA_CPP_VERSION,
    SMOLLM2_135M,
    LlamaCppError,
    LlamaCppServer,
    cmake_args,
    cpu_flags,
    default_cache_dir,
    fetch_model,
    free_port,
    server_command,
    wheel_dir,
)
from harness.report.local_note import closing_note
from harness.run.folder import LLAMA_LOG, SUMMARY_FILE, read_text
from harness.score.summary_model import read_summary_file

# A placeholder key: the local server checks none, and a real key must never be sent to it.
DUMMY_API_KEY = "sk-local-no-key"


def say(message: str) -> None:
    print(f"[local-llm] {message}", file=sys.stderr, flush=True)


def server_installed(python: str = sys.executable) -> bool:
    """llama_cpp imports at the pinned version, with its server extras, in `python`'s environment."""
    probe = (
        "import llama_cpp, llama_cpp.server.app, sys; "
        f"sys.exit(0 if llama_cpp.__version__ == {LLAMA_CPP_VERSION!r} else 3)"
    )
    return subprocess.run([python, "-c", probe], capture_output=True).returncode == 0


def build_wheel(cache_dir: Path) -> Path:
    """Build llama-cpp-python from source with portable flags, once; the wheel is kept under the cache dir."""
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    cmake = cmake_args(cpu_flags(cpuinfo))
    target = wheel_dir(cache_dir, LLAMA_CPP_VERSION, cmake)
    wheels = sorted(target.glob("llama_cpp_python-*.whl"))
    if wheels:
        say(f"reusing built wheel {wheels[0]}")
        return target
    say(f"building llama-cpp-python=={LLAMA_CPP_VERSION} (takes minutes) with CMAKE_ARGS={cmake!r}")
    env = {
        **os.environ,
        "CMAKE_ARGS": cmake,
        "FORCE_CMAKE": "1",
        "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 1),
    }
    started = time.monotonic()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".build-"))
    try:
        # --no-cache-dir: pip's own wheel cache is keyed by the sdist, not by CMAKE_ARGS
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "--no-cache-dir",
                "-w",
                str(tmp),
                f"llama-cpp-python=={LLAMA_CPP_VERSION}",
            ],
            check=True,
            env=env,
        )
        tmp.joinpath("CMAKE_ARGS").write_text(cmake + "\n")
        shutil.rmtree(target, ignore_errors=True)
        tmp.rename(target)  # only a finished build becomes the cache entry
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    say(f"built in {time.monotonic() - started:.0f}s into {target}")
    return target


def install(cache_dir: Path) -> None:
    """Install llama-cpp-python[server] into this interpreter's environment from the cached wheel."""
    if server_installed():
        say(f"llama-cpp-python=={LLAMA_CPP_VERSION} already installed")
        return
    target = build_wheel(cache_dir)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--find-links",
            str(target),
            "--only-binary=llama-cpp-python",
            f"llama-cpp-python[server]=={LLAMA_CPP_VERSION}",
        ],
        check=True,
    )
    if not server_installed():
        raise LlamaCppError("llama-cpp-python installed but `import llama_cpp.server.app` fails")
    say(f"installed llama-cpp-python[server]=={LLAMA_CPP_VERSION}")


class Terminated(Exception):
    """SIGTERM arrived: unwind so that the server and the command are stopped."""


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated(f"signal {signum}")


def run_command(command: Sequence[str], env: dict[str, str]) -> int:
    """Run the command to its end; on interrupt or SIGTERM stop it too, then re-raise."""
    child = subprocess.Popen(list(command), env=env)
    try:
        return child.wait()
    except BaseException:
        child.terminate()
        try:
            child.wait(15)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        raise


def serve(args: argparse.Namespace) -> int:
    cache_dir = Path(args.cache_dir)
    started = time.monotonic()
    model = Path(args.model_file) if args.model_file else fetch_model(SMOLLM2_135M, cache_dir)
    if not model.is_file():
        raise LlamaCppError(f"model file {model} does not exist")
    size_mb = model.stat().st_size / 1e6
    say(f"model {model} ({size_mb:.1f} MB) ready in {time.monotonic() - started:.1f}s")
    port = args.port or free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    log_path = Path(args.log) if args.log else cache_dir / "logs" / f"llama-server-{stamp}.log"
    command = server_command(model, port, alias=args.alias, n_ctx=args.n_ctx, extra=shlex.split(args.server_args))
    server = LlamaCppServer(command, base_url, log_path, startup_timeout=args.startup_timeout)
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        with server:
            say(f"server up at {base_url} (model openai:{args.alias}, n_ctx {args.n_ctx}); log {log_path}")
            env = {**os.environ, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": DUMMY_API_KEY}
            env.pop("OPENAI_ORG_ID", None)
            if not args.command:
                say("no command given; serving until Ctrl-C")
                while True:
                    time.sleep(3600)
            say("running: " + " ".join(args.command))
            code = run_command(args.command, env)
            say(f"command exited with {code}")
            return code
    except (KeyboardInterrupt, Terminated) as exc:
        say(f"stopped ({type(exc).__name__})")
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
        say("server stopped")


def note(run_dir: Path) -> str:
    """Write `closing-note.md` into the run folder from its summary.json and server log; return the text."""
    try:
        summary = read_summary_file(run_dir)
    except (OSError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        raise LlamaCppError(f"{run_dir / SUMMARY_FILE}: cannot read the run summary ({exc})") from exc
    log_text = read_text(run_dir, LLAMA_LOG, errors="replace") if (run_dir / LLAMA_LOG).exists() else ""
    text = closing_note(summary, log_text)
    (run_dir / "closing-note.md").write_text(text, encoding="utf-8")
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness.devtools.local_llm", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cache-dir", default=str(default_cache_dir()), help="built wheel, model and logs (default: %(default)s)"
    )
    sub = parser.add_subparsers(dest="step", required=True)
    sub.add_parser("install", help=f"build (cached) and install llama-cpp-python[server]=={LLAMA_CPP_VERSION}")
    sub.add_parser("model", help="download and extract the GGUF (cached); print its path")
    serve_p = sub.add_parser("serve", help="start the server, run the command after `--`, always stop the server")
    serve_p.add_argument("--port", type=int, default=0, help="default: a free port on 127.0.0.1")
    serve_p.add_argument("--model-file", default="", help="serve this GGUF instead of the packaged SmolLM2-135M")
    serve_p.add_argument("--alias", default=SMOLLM2_135M.alias, help="model name to request: openai:<alias>")
    serve_p.add_argument("--n-ctx", type=int, default=SMOLLM2_135M.n_ctx)
    serve_p.add_argument("--log", default="", help="server log file (default: under the cache dir)")
    serve_p.add_argument(
        "--server-args", default="", help="more llama_cpp.server flags, e.g. '--n_threads 2 --flash_attn true'"
    )
    serve_p.add_argument("--startup-timeout", type=float, default=180.0)
    serve_p.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
    note_p = sub.add_parser("note", help="write closing-note.md into a finished run folder and print it")
    note_p.add_argument("run_dir", type=Path)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "command", None) and args.command[0] == "--":
        args.command = args.command[1:]
    try:
        if args.step == "install":
            install(Path(args.cache_dir))
            return 0
        if args.step == "model":
            print(fetch_model(SMOLLM2_135M, Path(args.cache_dir)))
            return 0
        if args.step == "note":
            print(note(args.run_dir))
            return 0
        return serve(args)
    except (LlamaCppError, subprocess.CalledProcessError) as exc:
        say(f"error: {exc}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
