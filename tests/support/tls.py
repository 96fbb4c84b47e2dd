"""A self-signed certificate for 127.0.0.1, for TLS tests (wss, mqtts); a CA for client
certificates and client certificates signed by it (owner ids, access control uids)."""

from __future__ import annotations

import ssl
import subprocess
from pathlib import Path
from typing import Any


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


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def certificate_authority(directory: Path) -> tuple[Path, Path]:
    """(certificate, private key) of a CA for client certificates, valid for a day."""
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "ca.pem", directory / "ca.key"
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-days", "1", "-keyout", str(key), "-out", str(cert),
             "-subj", "/CN=test client CA",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    return cert, key


def client_certificate(ca: tuple[Path, Path], directory: Path, subject: str
                       ) -> tuple[Path, Path]:
    """(certificate, private key) for ``subject`` (e.g. ``/CN=owner``), signed by ``ca``."""
    directory.mkdir(parents=True, exist_ok=True)
    cert, key, csr = directory / "client.pem", directory / "client.key", directory / "c.csr"
    extensions = directory / "ext.cnf"
    extensions.write_text("extendedKeyUsage=clientAuth\n")
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", str(key), "-out", str(csr), "-subj", subject)
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(ca[0]), "-CAkey", str(ca[1]),
             "-CAcreateserial", "-days", "1", "-out", str(cert), "-extfile", str(extensions))
    return cert, key


class Tls:
    """A server certificate and a client CA with a client certificate for ``OWNER``."""

    OWNER = "owner-alice"

    def __init__(self, directory: Path) -> None:
        self.server_cert, self.server_key = self_signed_certificate(
            _made(directory / "server"))
        self.ca = certificate_authority(directory / "ca")
        self.client_cert, self.client_key = client_certificate(
            self.ca, directory / "alice", f"/CN={self.OWNER}")
        self.directory = directory

    def client_context(self, certificate: tuple[Path, Path] | None = None) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.server_cert))
        if certificate is not None:
            context.load_cert_chain(str(certificate[0]), str(certificate[1]))
        return context

    @property
    def client_certificate(self) -> tuple[Path, Path]:
        return self.client_cert, self.client_key

    def cc_overrides(self, **more: Any) -> dict[str, Any]:
        return {"websocket__tls_certificate": self.server_cert,
                "websocket__tls_private_key": self.server_key,
                "websocket__tls_client_ca_file": self.ca[0], **more}


def _made(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    return directory
