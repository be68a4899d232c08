"""Signing keys: Ed25519, stored as PKCS#8 PEM.

Without --key, nodeqc makes a per-user key on first use (mode 0600, in a directory of mode 0700)
with its public key beside it; several processes making it at once end with one key. A private key
that other users can read or replace is refused: anyone who can read it can forge reports.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import platformdirs
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from nodeqc.core.errors import UsageError, shown
from nodeqc.core.safefile import READ_FLAGS, NotAFile, OutputError, link_new, read_bounded, write_atomic


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
    """The key given with --key, or the per-user key (created on first use, in a directory made 0700).

    Refused with a line that says what to do: a key that others can read or write, a key or key
    directory owned by someone else, a key directory others can write to, a key reached through a
    link (another user could have planted it and would hold the signing key)."""
    if path is None:
        key_path = default_key_path()
        _ensure_key_dir(key_path.parent)
        if not os.path.lexists(key_path):
            return create_key(key_path)
    else:
        key_path = Path(path)
        if not os.path.lexists(key_path):
            raise UsageError(f"{key_path}: signing key not found")
    _check_key_dir(key_path.parent)
    try:
        # Non-blocking, and looked at before it is read: a FIFO given as the key hung the run, and a
        # directory ended in an internal error (IsADirectoryError).
        fd = os.open(key_path, READ_FLAGS | os.O_NOFOLLOW)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UsageError(f"{key_path}: the signing key is a symbolic link; nodeqc reads only a key file "
                             f"itself (put the key there, or give its real path with --key)") from None
        raise UsageError(f"{key_path}: cannot read signing key: {e.strerror}") from None
    try:
        # Its mode before its content: a key others could read may already be theirs, whatever it holds.
        _check_key_file(key_path, os.fstat(fd))
        os.set_blocking(fd, True)
        data = os.read(fd, MAX_KEY_BYTES)
    finally:
        os.close(fd)
    return Signer(_parse_private(key_path, data), key_path)


MAX_KEY_BYTES = 64 * 1024  # a PEM Ed25519 key is 119 bytes; anything far larger is not a key


def _parse_private(key_path: Path, data: bytes) -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError:
        raise UsageError(f"{key_path}: encrypted private keys are not supported; give an unencrypted "
                         "PKCS#8 key readable only by its owner") from None
    except (ValueError, UnsupportedAlgorithm) as e:
        raise UsageError(f"{key_path}: not a PEM private key ({str(e).splitlines()[0]})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise UsageError(f"{key_path}: not an Ed25519 key ({type(key).__name__}); nodeqc signs with Ed25519")
    return key


def _trusted_owner(uid: int) -> bool:
    """The user, or root (who can read any key anyway)."""
    return uid in (os.geteuid(), 0)


def _check_key_file(key_path: Path, st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"{key_path}: not a regular file; give an Ed25519 private key file")
    if st.st_uid != os.geteuid():
        raise UsageError(f"{key_path}: the signing key belongs to user id {st.st_uid}, not to you "
                         f"({os.geteuid()}): whoever owns it can sign as you; use a key of your own "
                         f"(chown it to yourself, or make a new one)")
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        who = "all users" if mode & 0o006 else "its group"
        what = "readable" if mode & 0o044 else "writable"
        raise UsageError(f"{key_path}: private key is {what} by {who} (mode {mode:04o}); run chmod 600 "
                         f"{key_path} (anyone who can read it can sign reports)")


def _check_key_dir(directory: Path) -> None:
    try:
        st = os.lstat(directory)
    except OSError as e:
        raise UsageError(f"{directory}: cannot read the key directory: {e.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise UsageError(f"{directory}: the key directory is a symbolic link; another user could have "
                         f"planted the key behind it (use the real directory: {directory.resolve()})")
    if not _trusted_owner(st.st_uid):
        raise UsageError(f"{directory}: the key directory belongs to user id {st.st_uid}, not to you: "
                         f"they could replace the key; keep keys in a directory of your own")
    mode = stat.S_IMODE(st.st_mode)
    # In a sticky directory (/tmp) others cannot replace a file of ours, and the key must be ours.
    if mode & 0o022 and not mode & stat.S_ISVTX:
        raise UsageError(f"{directory}: the key directory is writable by other users (mode {mode:04o}): "
                         f"they could replace the key; run chmod 700 {directory}")


def _ensure_key_dir(directory: Path) -> None:
    """The per-user key directory: made 0700 whatever the umask (mkdir's mode is masked by it)."""
    if not os.path.lexists(directory):
        directory.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(directory, 0o700)
            os.chmod(directory, 0o700)
        except FileExistsError:
            pass  # another nodeqc made it just now; it is checked like any other
        except OSError as e:
            raise UsageError(f"{directory}: cannot create the key directory: {e.strerror}") from None
    _check_key_dir(directory)


def create_key(key_path: Path) -> Signer:
    """A new Ed25519 key at key_path, unless one appears there first: then that one.

    Several nodeqc starting at once on nodes that share a home directory must end with one key. The
    key is written whole to a private temporary file, then linked to its name: link() never replaces
    an existing file, so the first to link wins and every other process reads the winner's key (a
    whole file, never one half written). Only the winner writes the public key."""
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    try:
        if not link_new(key_path, pem, 0o600):
            return load_signer(key_path)  # another process was first: its key is the one
    except OutputError as e:
        raise UsageError(f"{key_path}: cannot write the signing key: {e}") from None
    try:
        write_atomic(public_path(key_path), public_pem(key.public_key()))
    except OutputError as e:
        raise UsageError(f"{public_path(key_path)}: cannot write the public key: {e}") from None
    return Signer(key, key_path)


def public_path(key_path: Path) -> Path:
    return key_path.with_name(key_path.name.removesuffix(".pem") + ".pub.pem")


def load_public(path: str | Path) -> Ed25519PublicKey:
    """A public key from a PEM file (a private key file gives its public half)."""
    p = Path(path)
    try:
        data = read_bounded(p, MAX_KEY_BYTES)  # /dev/zero filled the memory, a FIFO hung
    except NotAFile as e:
        raise UsageError(f"{p}: not a public key file: {e}") from None
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


class Trusted(NamedTuple):
    """A key the report tools trust: the key, where it came from, and the nodes it vouches for. None:
    any node's report and fabric runs (the operator's or the fleet's key); a set: only the reports
    of those nodes, by their node key (system serial, else host name), and no fabric run. A key that
    a node under test holds is bound to that node, so a compromised node cannot sign for another."""

    key: Ed25519PublicKey
    source: str
    nodes: frozenset[str] | None = None


MAX_BINDING_BYTES = 1 << 20


def binding_path(pem: Path) -> Path:
    """Where the nodes a trusted key is bound to are listed: beside it, `.nodes` for `.pem`."""
    return pem.with_name(pem.name.removesuffix(".pem") + ".nodes")


def bound_nodes(pem: Path) -> frozenset[str] | None:
    """The nodes a trusted key file is bound to (binding_path: one node key a line, `#` comments),
    or None where it has no such file."""
    path = binding_path(pem)
    try:
        text = read_bounded(path, MAX_BINDING_BYTES).decode("utf-8")
    except FileNotFoundError:
        return None
    except (NotAFile, OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{path}: cannot read the nodes its key is bound to: "
                         f"{getattr(e, 'strerror', None) or e}") from None
    names = set()
    for n, line in enumerate(text.split("\n"), 1):
        name = line.split("#", 1)[0].strip()
        if name and not name.isprintable():
            raise UsageError(f"{path}:{n}: {shown(name)}: not a node key (a system serial or host name, one a line)")
        if name:
            names.add(name)
    if not names:
        raise UsageError(f"{path}: lists no node: name the nodes its key vouches for, one a line, or remove "
                         "the file to trust the key for every node")
    return frozenset(names)


def trusted_keys(extra: list[str] | None = None) -> dict[str, Trusted]:
    """keyid -> Trusted: --pubkey files if given, else this user's own key and the keys in the
    trusted-keys directory, each bound to the nodes its `.nodes` file lists, if it has one."""
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
        keys[keyid(key)] = Trusted(key, str(src), bound_nodes(src))
    return keys
