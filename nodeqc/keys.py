"""Signing keys: Ed25519, stored as PKCS#8 PEM.

Without --key, nodeqc makes a per-user key on first use (mode 0600) with its public key beside it.
A private key that other users can read is refused: anyone who can read it can forge reports.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

import platformdirs
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from nodeqc.errors import UsageError


def config_dir() -> Path:
    return platformdirs.user_config_path("nodeqc")


def default_key_path() -> Path:
    return config_dir() / "signing-key.pem"


def trusted_keys_dir() -> Path:
    return config_dir() / "trusted-keys"


def keyid(public: Ed25519PublicKey) -> str:
    """sha256 of the raw 32-byte public key, hex."""
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def public_pem(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


@dataclass
class Signer:
    private: Ed25519PrivateKey
    path: Path

    @property
    def public(self) -> Ed25519PublicKey:
        return self.private.public_key()

    @property
    def keyid(self) -> str:
        return keyid(self.public)

    def sign(self, message: bytes) -> bytes:
        return self.private.sign(message)


def load_signer(path: str | Path | None) -> Signer:
    """The key given with --key, or the per-user key (created on first use)."""
    if path is None:
        key_path = default_key_path()
        if not key_path.exists():
            return create_key(key_path)
    else:
        key_path = Path(path)
        if not key_path.is_file():
            raise UsageError(f"{key_path}: signing key not found")
    mode = stat.S_IMODE(key_path.stat().st_mode)
    if mode & 0o004:
        raise UsageError(f"{key_path}: private key is readable by all users (mode {mode:04o}); "
                         f"run chmod 600 {key_path}")
    try:
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    except TypeError:
        raise UsageError(f"{key_path}: encrypted private keys are not supported; give an unencrypted "
                         "PKCS#8 key readable only by its owner") from None
    except (ValueError, UnsupportedAlgorithm) as e:
        raise UsageError(f"{key_path}: not a PEM private key ({str(e).splitlines()[0]})") from None
    except OSError as e:
        raise UsageError(f"{key_path}: cannot read signing key: {e.strerror}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise UsageError(f"{key_path}: not an Ed25519 key ({type(key).__name__}); nodeqc signs with Ed25519")
    return Signer(key, key_path)


def create_key(key_path: Path) -> Signer:
    key_path.parent.mkdir(parents=True, exist_ok=True)
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    public_path(key_path).write_bytes(public_pem(key.public_key()))
    return Signer(key, key_path)


def public_path(key_path: Path) -> Path:
    return key_path.with_name(key_path.name.removesuffix(".pem") + ".pub.pem")


def load_public(path: str | Path) -> Ed25519PublicKey:
    """A public key from a PEM file (a private key file gives its public half)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise UsageError(f"{p}: cannot read public key: {e.strerror}") from None
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm):
        try:
            key = serialization.load_pem_private_key(data, password=None).public_key()
        except (ValueError, TypeError, UnsupportedAlgorithm):
            raise UsageError(f"{p}: not a PEM public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise UsageError(f"{p}: not an Ed25519 public key")
    return key


def trusted_keys(extra: list[str] | None = None) -> dict[str, tuple[Ed25519PublicKey, str]]:
    """keyid -> (key, where it came from): --pubkey files if given, else this user's own key and
    the keys in the trusted-keys directory."""
    sources: list[Path] = [Path(p) for p in extra] if extra else []
    if not extra:
        own = public_path(default_key_path())
        if own.is_file():
            sources.append(own)
        if trusted_keys_dir().is_dir():
            sources += sorted(trusted_keys_dir().glob("*.pem"))
    keys = {}
    for src in sources:
        key = load_public(src)
        keys[keyid(key)] = (key, str(src))
    return keys
