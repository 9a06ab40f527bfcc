"""The tool's RSA keys: files in KEYS_DIR (mode 0600), the newest signs, all are published in the JWKS.

Files rather than database rows so the private key never sits in a database dump; for several machines,
share the directory. `keys rotate` adds a key; the previous one stays in the JWKS (platforms may still
hold tokens or cached keys for it) until `keys remove` deletes it.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwcrypto.jwk import JWK


@dataclass(frozen=True)
class ToolKey:
    kid: str
    private_pem: bytes

    @cached_property
    def signer(self) -> rsa.RSAPrivateKey:
        """The parsed key, for jwt.encode: given the PEM, PyJWT parses and checks it on every call (about
        40 ms of CPU for RSA 2048, a hundred times the signature itself)."""
        return serialization.load_pem_private_key(self.private_pem, password=None)

    @cached_property
    def public_jwk(self) -> dict:
        jwk = json.loads(JWK.from_pem(self.private_pem).export_public())
        return {**jwk, "kid": self.kid, "alg": "RS256", "use": "sig"}


class KeyStore:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._loaded: dict[Path, ToolKey] = {}

    def keys(self) -> list[ToolKey]:
        """Every key, oldest first (files are read once; `keys rotate` in another process shows up here)."""
        paths = sorted(self.directory.glob("*.pem")) if self.directory.exists() else []
        self._loaded = {p: self._loaded.get(p) or ToolKey(p.stem.split("_", 1)[1], p.read_bytes()) for p in paths}
        return list(self._loaded.values())

    def signing_key(self) -> ToolKey:
        """The newest key, created on first use."""
        keys = self.keys()
        return keys[-1] if keys else self.rotate()

    def rotate(self) -> ToolKey:
        """Create a new RSA 2048 key; it signs from now on."""
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        kid = uuid.uuid4().hex
        path = self.directory / f"{time.time_ns():020d}_{kid}.pem"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        return ToolKey(kid, pem)

    def remove(self, kid: str) -> None:
        """Delete a key (never the only one: something must sign)."""
        matches = [p for p in self.directory.glob(f"*_{kid}.pem")]
        if not matches:
            raise KeyError(kid)
        if len(self.keys()) == 1:
            raise ValueError("cannot remove the only key; rotate first")
        for path in matches:
            path.unlink()

    def jwks(self) -> dict:
        return {"keys": [key.public_jwk for key in self.keys()]}
