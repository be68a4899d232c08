"""Names are data, never options or paths.

A host name reaches argv (a launch prefix such as `ssh {host}`, srun's --nodelist, kubectl) and a
run's name reaches the file system (the report's file name). Either may come from a person's typo,
a host list file anyone could edit, or the output of scontrol and kubectl: a name that starts with
`-` is an option to the tool it is handed to (`-oProxyCommand=...` runs a command under ssh), and a
name with `/` or `..` is a path out of the output directory. So each is matched against a strict
pattern before it is used, and refused, by name, when it does not match: never quoted or repaired,
since a repaired name is no longer the node or the run the person meant.
"""

from __future__ import annotations

import re
from typing import Any

from nodeqc.core.errors import UsageError, shown
from nodeqc.core.na import is_na

# A DNS name is at most 253 characters; Slurm's and Kubernetes' node names are no longer. An IPv6
# address (its colons) is a host too, for a launcher such as `ip netns exec {host}` or ssh.
MAX_HOST = 253
_HOST = re.compile(r"[A-Za-z0-9._:][A-Za-z0-9._:-]*")
HOST_RULE = f"a host name is letters, digits, '.', '_', ':' and '-', not starting with '-', at most {MAX_HOST}"

# The file name a run's name becomes part of (fabric-NAME-20250101T000000Z-2.journal.jsonl) must
# stay under the file systems' 255 bytes.
MAX_NAME = 128
NAME_RULE = (f"a name is one file name: no '/', '\\' or '..', not starting with '-' or '.', no control "
             f"characters, at most {MAX_NAME}")

# A PCI function's address as sysfs spells it, domain:bus:device.function in lower-case hex.
PCI_ADDRESS = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")

# Slurm's host list syntax (gpu[01-04,07],login1) on top of a host name's characters.
_NODELIST = re.compile(r"[A-Za-z0-9._:\[\],][A-Za-z0-9._:\[\],-]*")


def host_problem(name: object) -> str | None:
    """Why `name` is not a host name nodeqc will hand to a tool, or None when it is one."""
    if not isinstance(name, str):
        return f"not a string ({type(name).__name__})"
    if not name:
        return "empty"
    if len(name) > MAX_HOST:
        return f"{len(name)} characters long"
    if _HOST.fullmatch(name) is None:
        return "starts with '-'" if name.startswith("-") else "not a host name"
    if not any(c.isalnum() for c in name):  # ".", "..", ":" and "::" matched the characters alone
        return "no letter or digit"
    return None


def check_host(name: object, where: str) -> str:
    """`name` itself when it is a host name; a usage error naming it (and `where` it came from)
    otherwise."""
    why = host_problem(name)
    if why is not None:
        raise UsageError(f"{where} {shown(str(name))[:MAX_HOST + 20]}: {why}: {HOST_RULE}")
    return name  # type: ignore[return-value]  # host_problem proved it a str


def check_nodelist(text: str, where: str) -> str:
    """A Slurm host list handed to scontrol as one argument: never an option of scontrol's."""
    if _NODELIST.fullmatch(text) is None or len(text) > 65536:
        raise UsageError(f"{where} {shown(text)[:300]}: not a Slurm host list (e.g. gpu[01-16],login1): "
                         f"{HOST_RULE}, with Slurm's '[', ']' and ','")
    return text


def substitute(words: list[str], host: str) -> list[str]:
    """The launch prefix's argv with {host} replaced inside each word: the prefix was split into
    words first (shlex), so the host is always one word, or part of one, and never re-split by a
    shell. A host that is not a host name is refused here too, whoever calls."""
    check_host(host, "host")
    return [w.replace("{host}", host) for w in words]


def check_name(name: str, where: str) -> str:
    """`name` itself when it can be one part of a file name in the output directory; a usage error
    naming it otherwise."""
    if not name:
        why = "empty"
    elif "/" in name or "\\" in name:
        why = "has a path separator"
    elif ".." in name:
        why = "has '..'"
    elif name[0] in "-.":
        why = f"starts with '{name[0]}'"
    elif not name.isprintable():
        why = "has control characters"
    elif len(name) > MAX_NAME:
        why = f"{len(name)} characters long"
    else:
        return name
    raise UsageError(f"{where} {shown(name)[:MAX_NAME + 20]}: {why}: {NAME_RULE}")


def host_name() -> str:
    """This host's name. One of other bytes than UTF-8 comes with surrogate escapes, which the
    report's signing and the archive's index cannot write (an internal error): U+FFFD in their place."""
    import os
    import socket

    return os.fsencode(socket.gethostname()).decode("utf-8", "replace")


def node_key(serial: Any, hostname: Any) -> str:
    """What identifies a node in the archive: its system serial, else its host name."""
    return str(hostname) if is_na(serial) or serial == "" else str(serial)


def host_label(name: str) -> str:
    """A host name's first label, without case: how a run's name for a node (Slurm's, Kubernetes')
    and the node's own host name (perhaps its FQDN) are the same host."""
    return name.split(".")[0].lower()
