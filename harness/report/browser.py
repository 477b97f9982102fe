"""Headless Chromium for a picture of the report: find the binary, take a screenshot of a local file.

Debian's `chromium` package (`apt-get install -y chromium`); nothing is
downloaded. The flags keep Chromium off the network (this machine has none)
and out of the user's profile.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from harness import UsageError

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
APT_HINT = "apt-get install -y chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--hide-scrollbars",
    "--mute-audio",
)


class BrowserError(UsageError):
    """No browser, or the browser failed; the message says what to install or what it printed."""


def find_chromium(candidates: Sequence[str] = CANDIDATES) -> str | None:
    """The path of a Chromium-family binary on PATH, or None."""
    for name in candidates:
        path = shutil.which(name)
        if path:
            return path
    return None


def chromium_command(binary: str, user_data_dir: Path, *extra: str) -> list[str]:
    return [binary, *FLAGS, f"--user-data-dir={user_data_dir}", *extra]


def screenshot(
    page: Path, png: Path, width: int = 1400, height: int = 1000, binary: str | None = None, timeout: float = 120
) -> Path:
    """A PNG of the top of a local page (after its scripts ran), with a fresh profile."""
    binary = binary or find_chromium()
    if binary is None:
        raise BrowserError(f"no chromium binary on PATH; install one with `{APT_HINT}`")
    png = Path(png).resolve()
    png.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="vbench-chromium-", ignore_cleanup_errors=True) as profile:
        cmd = chromium_command(
            binary,
            Path(profile),
            f"--screenshot={png}",
            f"--window-size={width},{height}",
            "--virtual-time-budget=5000",
            Path(page).resolve().as_uri(),
        )
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise BrowserError(f"chromium took more than {timeout:.0f} s to take the screenshot") from exc
    if not png.exists() or png.stat().st_size == 0:
        tail = "\n".join((proc.stderr or "").strip().splitlines()[-5:])
        raise BrowserError(f"chromium wrote no screenshot (exit {proc.returncode}): {tail}")
    return png
