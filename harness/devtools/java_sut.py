"""The Java implementation of the spec (`sut-java/`): build it, serve it on 127.0.0.1, certify it over the protocol.

The Java SUT is a second, independent implementation: the kit talks to it only over `sut_protocol_v1`, exactly as
it would to a team's own service. Built with the JDK alone (`sut-java/build.sh`: javac + jar) against Debian's
Gson and sqlite-jdbc jars. Usage:

    python -m harness.devtools.java_sut certify [--out reports/certify-java] [--install]
    python -m harness.devtools.java_sut certify --jackson defaults,indent     # the Jackson variant (sut-java/jackson/)
    python -m harness.devtools.java_sut build
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SUT_DIR = Path(__file__).resolve().parents[2] / "sut-java"
JAVA_LIB = Path(os.environ.get("VBENCH_JAVA_LIB", "/usr/share/java"))
JARS = ("gson.jar", "sqlite-jdbc.jar")
JACKSON_JARS = ("jackson-core.jar", "jackson-databind.jar", "jackson-annotations.jar")
TOOLS = ("javac", "jar", "java")
APT_PACKAGES = ("default-jdk-headless", "libgoogle-gson-java", "libxerial-sqlite-jdbc-java")
JACKSON_APT = "libjackson2-databind-java"
DEFAULT_OUT = Path("reports/certify-java")
POLICY_CASES = Path("cases/policy")
START_TIMEOUT_S = 60.0


class JavaSutError(RuntimeError):
    """The Java SUT could not be built or started; the message says why and what to install."""


def missing_prerequisites(jackson: bool = False) -> list[str]:
    """The JDK tools and Debian jars the build needs that this machine lacks (empty: it can build)."""
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    jars = (*JARS, *JACKSON_JARS) if jackson else JARS
    missing += [str(JAVA_LIB / jar) for jar in jars if not (JAVA_LIB / jar).is_file()]
    return missing


def install_prerequisites(jackson: bool = False) -> None:
    """Install the JDK and the jars with apt-get, as `.ci/run` does, when any is missing (root only)."""
    missing = missing_prerequisites(jackson)
    packages = (*APT_PACKAGES, JACKSON_APT) if jackson else APT_PACKAGES
    if not missing:
        return
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        raise JavaSutError(f"missing {', '.join(missing)}; install them with: apt-get install -y {' '.join(packages)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", *packages], check=True, env=env, stdout=subprocess.DEVNULL)


def build(sut_dir: Path = SUT_DIR, jackson: bool = False) -> Path:
    """Compile and package the Java SUT (`jackson`: its Jackson variant); the jar's path. A failed build raises
    with the compiler's output."""
    script = sut_dir / ("build-jackson.sh" if jackson else "build.sh")
    if not script.is_file():
        raise JavaSutError(f"{script} not found: the Java SUT lives in the repository's sut-java/ folder")
    proc = subprocess.run(
        ["bash", str(script)], capture_output=True, text=True, env={**os.environ, "VBENCH_JAVA_LIB": str(JAVA_LIB)}
    )
    if proc.returncode != 0:
        raise JavaSutError(f"building the Java SUT failed (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return sut_dir / "build" / ("vbench-sut-jackson.jar" if jackson else "vbench-sut.jar")


@contextlib.contextmanager
def serving(jar: Path, log: Path | None = None, extra: tuple[str, ...] = ()) -> Iterator[str]:
    """Run the built SUT on a free 127.0.0.1 port; its base URL. The process is always stopped on leaving."""
    with tempfile.TemporaryDirectory(prefix="vbench-java-sut-") as tmp:
        port_file = Path(tmp) / "port"
        log_path = log or Path(tmp) / "sut.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("w", encoding="utf-8") as out:
            cmd = ["java", "-jar", str(jar), "--host", "127.0.0.1", "--port", "0", "--port-file", str(port_file)]
            cmd += ["--store", str(Path(tmp) / "store.sqlite"), *extra]
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
            try:
                yield f"http://127.0.0.1:{_wait_for_port(proc, port_file, log_path)}"
            finally:
                stop_process(proc)


def _wait_for_port(proc: subprocess.Popen[bytes], port_file: Path, log: Path) -> int:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if port_file.is_file():
            text = port_file.read_text(encoding="utf-8").strip()
            if text.isdigit():
                return int(text)
        if proc.poll() is not None:
            raise JavaSutError(f"the Java SUT exited with {proc.returncode} before listening:\n{log.read_text()}")
        time.sleep(0.05)
    raise JavaSutError(f"the Java SUT wrote no port file within {START_TIMEOUT_S:g} s:\n{log.read_text()}")


def stop_process(proc: subprocess.Popen[Any]) -> None:
    """Stop a server this process started: terminate, wait, kill when it does not go within ten seconds."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def certify_command(url: str, out: Path, cases: Path = POLICY_CASES) -> list[str]:
    """`vbench certify` of the whole policy corpus against `url`: certification mode, no filter, `--out` replaced."""
    return [
        *(sys.executable, "-m", "harness.cli", "certify", "--sut", url, "--cases", str(cases)),
        *("--mode", "certification", "--out", str(out), "--force"),
    ]


def certificate_status(out: Path) -> tuple[str, str]:
    """(status, headline) of the certificate in `out`; ("missing", why) when there is none."""
    path = out / "certificate.json"
    if not path.is_file():
        return "missing", f"no certificate was written to {path}"
    cert = json.loads(path.read_text(encoding="utf-8"))
    return str(cert.get("status")), str(cert.get("headline"))


def certify_java(
    out: Path = DEFAULT_OUT, install: bool = False, cases: Path = POLICY_CASES, jackson: str | None = None
) -> int:
    """Build, serve and certify the Java SUT into `out`; 0 only when certificate.json says `certified`.
    `jackson`: the Jackson variant in that configuration (`defaults`, `indent`, `non-null`, `keep-last-duplicates`,
    comma-separated)."""
    if install:
        install_prerequisites(jackson is not None)
    missing = missing_prerequisites(jackson is not None)
    if missing:
        packages = [*APT_PACKAGES, *([JACKSON_APT] if jackson is not None else [])]
        raise JavaSutError(f"missing {', '.join(missing)}; install: apt-get install -y {' '.join(packages)}")
    jar = build(jackson=jackson is not None)
    out.mkdir(parents=True, exist_ok=True)
    extra = ("--jackson", jackson) if jackson is not None else ()
    with serving(jar, log=out.parent / f"{out.name}-sut.log", extra=extra) as url:
        start = time.perf_counter()
        proc = subprocess.run(certify_command(url, out, cases), check=False)
        wall = time.perf_counter() - start
    status, headline = certificate_status(out)
    print(f"Java SUT: {headline}")
    print(f"Java SUT: certificate.json says {status!r}; vbench certify exited {proc.returncode} after {wall:.1f} s")
    return 0 if status == "certified" else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.devtools.java_sut", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="compile and package sut-java/ (javac + jar)")
    cert = sub.add_parser("certify", help="build, serve on 127.0.0.1 and certify the Java SUT")
    cert.add_argument("--out", type=Path, default=DEFAULT_OUT)
    cert.add_argument("--cases", type=Path, default=POLICY_CASES, help="the policy corpus (default cases/policy)")
    cert.add_argument("--install", action="store_true", help="apt-get install the JDK and the jars when missing")
    cert.add_argument(
        "--jackson",
        metavar="CONFIG",
        help="certify the Jackson variant in this configuration: defaults, indent, non-null, keep-last-duplicates "
        "(comma-separated)",
    )
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            print(f"built {build()}")
            return 0
        return certify_java(args.out, args.install, args.cases, args.jackson)
    except JavaSutError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
