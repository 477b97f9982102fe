"""An Ed25519 signature of certificate.json: who certified can be checked by anyone holding the public key.

`certificate.json.sig` holds the base64 signature of certificate.json's exact bytes. Keys are PEM files
(`openssl genpkey -algorithm ed25519 -out key.pem`; `openssl pkey -in key.pem -pubout -out key.pub`).
Needs the optional `cryptography` package (`pip install verifier-bench[sign]`).
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path

from harness.run.folder import CERTIFICATE_JSON

SIGNATURE_FILE = CERTIFICATE_JSON + ".sig"


class SigningError(ValueError):
    """A key or signature that cannot be used, named with its file."""


def _crypto():  # type: ignore[no-untyped-def]
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError as exc:
        raise SigningError("signing needs the cryptography package: pip install 'verifier-bench[sign]'") from exc
    return serialization, ed25519


def sign_certificate(run_dir: Path, private_key: Path) -> Path:
    """Write `certificate.json.sig` beside the certificate; return its path."""
    serialization, ed25519 = _crypto()
    try:
        key = serialization.load_pem_private_key(private_key.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise SigningError(f"{private_key}: not a readable unencrypted PEM private key ({exc})") from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise SigningError(f"{private_key}: not an Ed25519 key")
    signature = key.sign((run_dir / CERTIFICATE_JSON).read_bytes())
    path = run_dir / SIGNATURE_FILE
    path.write_text(base64.b64encode(signature).decode("ascii") + "\n", encoding="ascii")
    return path


def verify_certificate(run_dir: Path, public_key: Path) -> bool:
    """True when `certificate.json.sig` is the key's signature of certificate.json as it is now."""
    serialization, ed25519 = _crypto()
    from cryptography.exceptions import InvalidSignature

    try:
        key = serialization.load_pem_public_key(public_key.read_bytes())
    except (OSError, ValueError) as exc:
        raise SigningError(f"{public_key}: not a readable PEM public key ({exc})") from None
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise SigningError(f"{public_key}: not an Ed25519 public key")
    sig_path = run_dir / SIGNATURE_FILE
    try:
        signature = base64.b64decode(sig_path.read_text(encoding="ascii").strip(), validate=True)
    except FileNotFoundError:
        raise SigningError(f"{sig_path}: no such file (the certificate was not signed)") from None
    except (binascii.Error, UnicodeDecodeError):
        raise SigningError(f"{sig_path}: not a base64 signature") from None
    try:
        key.verify(signature, (run_dir / CERTIFICATE_JSON).read_bytes())
    except InvalidSignature:
        return False
    return True
