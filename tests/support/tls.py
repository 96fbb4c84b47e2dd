"""A self-signed certificate for 127.0.0.1, for TLS tests (wss, mqtts)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def self_signed_certificate(directory: Path) -> tuple[Path, Path]:
    """(certificate, private key) PEM files for CN and IP 127.0.0.1, valid for a day."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )
    return cert, key
