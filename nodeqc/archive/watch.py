"""What `nodeqc watch` found on a node between qualifications, kept in the archive beside the node's
reports (NODE/watch-state.json), and what it does to the node's qualification.

A finding is one check result that failed or warned while the node was watched (a check, its
subject, its code). It is either:

- **sticky**: hardware that must be looked at and the node qualified again: a fatal XID (79, fallen
  off the bus, and the others the catalogue calls fatal), uncorrectable ECC, a failed or pending row
  remap, retired pages, a lost GPU, an NVLink down, uncorrected memory errors, link flaps. It stands
  until a qualification that passed (nodeqc.archive.verified.Entry.qualified; for a simulated node,
  a complete passing simulated run) finished after it was first seen; while it stands, the node's
  latest qualification is no longer valid: its `valid_until` effectively ends when the finding was
  first seen (`effective_valid_until`), and `nodeqc fleet` and `nodeqc history` say why.
- **clearing**: a state the node recovers from by itself: a thermal or power event, a burst of
  corrected ECC or PCIe errors, a non-fatal XID. It stands for CLEARING_WINDOW_S after it was last
  seen, then clears; it never ends a qualification's validity.

In a shared archive other nodes may write the file: one that removed a sticky finding, or moved the
readings on (a kernel-log cursor past every line, counters raised so nothing grows), would give
validity back. So:

- The state is signed by the node's own key, as its reports are (a DSSE envelope of type
  STATE_PAYLOAD_TYPE), and read only through that signature: the watch on the node believes its own
  key, and a key bound to this node by name (another user's watch of it: node_keys); `fleet`,
  `history` and the app believe a key they trust for that node (keys.Trusted, bound by its `.nodes`
  file), as `nodeqc verify` does for reports. A state they cannot believe (forged, altered, another
  node's, written unsigned by an older nodeqc) is said, never taken for a healthy node. A signature
  cannot show a state deleted or put back to an older signed one, as it cannot for the reports
  themselves.
- The watch on the node also keeps its own copy outside the archive (the user's config directory:
  `own_copy_root`) and reads the archive's through it (`load_watched`): its own sticky findings win
  (and its readings where the archive's state is gone), a state it cannot believe is replaced, and
  what it put back is said.

It is written whole through nodeqc.core.safefile (temporary file renamed), read once as a regular
file of bounded size, and a file that cannot be read (a FIFO, a directory) is refused in one line.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from nodeqc.archive.filing import node_dir
from nodeqc.core.codes import REMEDIATION
from nodeqc.core.errors import UsageError, shown
from nodeqc.core.safefile import NotAFile, OutputError, open_append, read_bounded, write_atomic
from nodeqc.core.schema import is_number
from nodeqc.report.envelope import VerificationError, open_signed, parse_envelope, sign_payload
from nodeqc.report.keys import Signer, Trusted, trusted_keys

STATE_NAME = "watch-state.json"  # beside the reports; the index reads *.report.json only
LOCK_NAME = ".watch-state.lock"
LOCK_WAIT_S = 5.0  # another watch holds the state only while it reads and writes it: milliseconds
STATE_VERSION = 1
STATE_PAYLOAD_TYPE = "application/vnd.nodeqc.watch-state+json"  # what the node's key signs (DSSE)
MAX_STATE_BYTES = 4 << 20  # a node's state is a few kB: its findings, its counters at the last pass
MAX_FINDINGS = 500  # more findings than any node's parts and checks make: a flood is not kept whole

# How long a clearing state stands after it was last seen: 30 minutes (nodeqc's choice, an
# estimate to calibrate on a fleet). Long enough to be seen: Slurm's health check runs every
# HealthCheckInterval (commonly 300 s), Prometheus scrapes node_exporter every 15-60 s, so the state
# is there for about six health checks and thirty scrapes; gpud's users reported states that cleared
# before anyone saw them. Short enough that a node drained for a thermal excursion or a burst of
# corrected errors comes back by itself within the hour, where a sticky state kept nodes drained
# for good (also reported of gpud).
CLEARING_WINDOW_S = 1800.0

# Codes that mean hardware to inspect and a qualification to pass again (see the module's docstring).
# XIDs are sticky when fatal (the finding says so: `fatal_xid`), clearing otherwise.
STICKY_CODES = frozenset({
    "GPU_LOST", "ECC_DBE", "SRAM_ECC_UNCORRECTABLE", "ROW_REMAP_FAILED", "ROW_REMAP_PENDING", "ROW_REMAP_COUNT",
    "RETIRED_PAGES", "RETIRED_PAGES_PENDING", "NVLINK_DOWN", "EDAC_UE", "AER_UNCORRECTABLE", "KERNEL_SXID",
    "KERNEL_MCE", "KERNEL_AER", "KERNEL_HW_ERROR", "NIC_LINK_FLAP", "IB_LINK_ERRORS", "NIC_LOST",
})
# Only a failing result is sticky: the kernel log's checks warn on the corrected kind of the same
# code (a corrected machine check, a corrected AER error, a firmware-first corrected error), which clears.
# health.xid's codes (one per action of NVIDIA's catalogue since nodeqc.core.xids; "XID" before it)
# and the kernel log's.
XID_CODES = frozenset({"XID", "KERNEL_XID"} | {code for code in REMEDIATION if code.startswith("XID_")})


@dataclass
class WatchFinding:
    check: str
    subject: str
    code: str
    verdict: str  # fail | warn
    message: str
    sticky: bool
    first_seen: float  # Unix time
    last_seen: float

    @property
    def key(self) -> str:
        return f"{self.check}|{self.subject}|{self.code}"

    def stands(self, now: float, qualified_at: float | None) -> bool:
        """Whether the finding still holds at `now`, given when the node last passed a qualification."""
        if self.sticky:
            return qualified_at is None or qualified_at <= self.first_seen
        return now < self.last_seen + CLEARING_WINDOW_S

    def clears_at(self) -> float | None:
        return None if self.sticky else self.last_seen + CLEARING_WINDOW_S

    def describe(self) -> str:
        return f"{self.check} {self.subject} {self.code}: {self.message}"


@dataclass
class WatchState:
    node: str
    hostname: str = ""
    simulated: bool = False
    updated_at: float = 0.0
    findings: list[WatchFinding] = field(default_factory=list)
    # What the last pass read, so the next judges growth from there: GPU counters by serial, the
    # host's EDAC/AER counters, each NIC's link counters by name, the GPUs seen (serial -> bus id),
    # and where the kernel log was read to (boot id, /dev/kmsg sequence number).
    readings: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        data = {"nodeqc_watch": STATE_VERSION, **asdict(self)}
        return json.dumps(data, indent=1, sort_keys=True, default=str) + "\n"

    def signed(self, signer: Signer) -> bytes:
        """The file's bytes: the state in a DSSE envelope signed by the node's key."""
        envelope = sign_payload(STATE_PAYLOAD_TYPE, self.to_json().encode("utf-8"), signer)
        return (json.dumps(envelope, indent=1) + "\n").encode("utf-8")


class NotVouched(UsageError):
    """The file is there and readable, but no watch state that a trusted key signed for this node:
    forged, altered, another node's, damaged, or written unsigned by nodeqc before states were signed."""


def own_key(signer: Signer) -> dict[str, Trusted]:
    """The key the watch on a node signs its state with, and believes it by."""
    return {signer.keyid: Trusted(signer.public, "this node's signing key")}


def node_keys(signer: Signer, node: str) -> dict[str, Trusted]:
    """The keys the watch on `node` believes its state by: its own, and a trusted key bound to this
    node by name (its `.nodes` file), where two users watch one node (root's Slurm health check, a
    user's timer) with keys of their own. A key trusted for every node (an operator's) is not one:
    no watch writes with it."""
    bound = {kid: t for kid, t in trusted_keys().items() if t.nodes is not None and node in t.nodes}
    return {**bound, **own_key(signer)}


def state_path(node: str, root: str | Path | None = None) -> Path:
    return node_dir(node, root) / STATE_NAME


def load_state(node: str, trusted: dict[str, Trusted], root: str | Path | None = None) -> WatchState | None:
    """The node's watch state, or None when it was never watched. NotVouched when the file is not a
    state signed for `node` by a key in `trusted`; UsageError when it cannot be read at all."""
    path = state_path(node, root)
    try:
        raw = read_bounded(path, MAX_STATE_BYTES)
    except FileNotFoundError:
        return None
    except NotAFile as e:
        raise UsageError(f"{path}: {e}") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot read the watch state: {e.strerror or e}") from None
    try:
        envelope = parse_envelope(raw, "watch state")
        if "nodeqc_watch" in envelope:
            raise VerificationError("written unsigned, by nodeqc before watch states were signed")
        state, _, _ = open_signed(envelope, STATE_PAYLOAD_TYPE, trusted, lambda p, bound: _vouched(p, bound, node),
                                  "the watch state")
    except VerificationError as e:
        raise NotVouched(f"{path}: not a watch state signed for node {shown(node)} by a trusted key: {e}") from None
    return state


def _vouched(payload: bytes, bound: frozenset[str] | None, node: str) -> tuple[WatchState, str | None]:
    """The signed state, and why it does not stand for `node` (keys bound to other nodes, or the
    state of another node copied over this one's), or None."""
    try:
        state = _state(json.loads(payload.decode("utf-8")))
    except (ValueError, TypeError, KeyError, UnicodeDecodeError, RecursionError) as e:
        raise VerificationError(f"signed, but not a nodeqc watch state ({type(e).__name__}: {e})") from None
    if state.node != node:
        return state, f"it is the state of node {shown(state.node)}"
    if bound is not None and node not in bound:
        return state, f"which is bound to node(s) {', '.join(sorted(bound)[:3])}, not {shown(node)}"
    return state, None


def _state(data: Any) -> WatchState:
    if not isinstance(data, dict) or data.get("nodeqc_watch") != STATE_VERSION:
        raise ValueError(f"expected nodeqc_watch: {STATE_VERSION}")
    findings = []
    for f in data.get("findings") or []:
        if not isinstance(f, dict):
            raise TypeError("a finding is not an object")
        findings.append(WatchFinding(str(f["check"]), str(f["subject"]), str(f["code"]), str(f["verdict"]),
                                str(f["message"])[:2000], bool(f["sticky"]), _time(f["first_seen"]),
                                _time(f["last_seen"])))
    readings = data.get("readings") or {}
    _check_readings(readings)
    return WatchState(str(data["node"]), str(data.get("hostname") or ""), bool(data.get("simulated")),
                      _time(data.get("updated_at") or 0.0), findings[:MAX_FINDINGS], readings)


# The kinds of the readings the watch writes (nodeqc.run.watch.readings), which the next pass does
# arithmetic on: GPU counters are numbers but for these flags and this name.
_FLAG_COUNTERS = frozenset({"remap_pending", "remap_failure", "retired_pending"})
_TEXT_COUNTERS = frozenset({"onchip_ecc_locations"})


def _check_readings(readings: Any) -> None:
    """The readings as the watch writes them, else TypeError naming the first field that is not: a
    state file edited by hand (it is not signed) once made every later pass an internal error."""
    def obj(value: Any, where: str) -> dict[str, Any]:
        if value is None:  # not read yet
            return {}
        if not isinstance(value, dict):
            raise TypeError(f"{where}: expected an object")
        return value

    def number(value: Any, where: str) -> None:
        # NaN compares false, so a NaN corrected-ECC count hid any growth (2026-11-28 audit); an
        # integer of 400 digits raised OverflowError in math.isfinite, past the state's check, and
        # every later pass could not judge (2026-11-29 fuzzing): is_number takes neither.
        if value is not None and not is_number(value):
            raise TypeError(f"{where}: expected a finite number")

    def count(value: Any, where: str) -> None:
        if not (is_number(value) and isinstance(value, int) and value >= 0):
            raise TypeError(f"{where}: expected a whole number, 0 or more")

    readings = obj(readings, "readings")
    for serial, gpu in obj(readings.get("gpus"), "readings.gpus").items():
        where = f"readings.gpus.{serial}"
        for key, value in obj(obj(gpu, where).get("counters"), f"{where}.counters").items():
            kind = bool if key in _FLAG_COUNTERS else str if key in _TEXT_COUNTERS else None
            if kind is None:
                number(value, f"{where}.counters.{key}")
            elif value is not None and not isinstance(value, kind):
                raise TypeError(f"{where}.counters.{key}: expected {'true or false' if kind is bool else 'text'}")
        number(gpu.get("t"), f"{where}.t")
    for name, nic in obj(readings.get("nics"), "readings.nics").items():
        number(obj(nic, f"readings.nics.{name}").get("carrier_changes"), f"readings.nics.{name}.carrier_changes")
        for port, counters in obj(nic.get("ports"), f"readings.nics.{name}.ports").items():
            for key, value in obj(counters, f"readings.nics.{name}.ports.{port}").items():
                number(value, f"readings.nics.{name}.ports.{port}.{key}")
    # The host's counters the next pass judges EDAC and AER growth from: a NaN, a word or 10^30 read
    # as "no start" or as more than now, and new memory errors passed unseen (2026-11-29 fuzzing).
    host = obj(readings.get("host"), "readings.host")
    for table in ("edac", "aer"):
        for part, counters in obj(host.get(table), f"readings.host.{table}").items():
            for key, value in obj(counters, f"readings.host.{table}.{part}").items():
                count(value, f"readings.host.{table}.{part}.{key}")
    for part, label in obj(host.get("edac_labels"), "readings.host.edac_labels").items():
        if not isinstance(label, str):
            raise TypeError(f"readings.host.edac_labels.{part}: expected text")
    cursor = obj(readings.get("kernel_log"), "readings.kernel_log")
    for key in ("seq", "t"):
        number(cursor.get(key), f"readings.kernel_log.{key}")


def _time(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1e11:
        raise ValueError(f"{value!r} is not a time")
    return float(value)


def own_copy_root() -> Path:
    """Where the watch on a node keeps its own copy of the node's state: beside its signing key, in
    the user's config directory on the node, which no other node writes."""
    from nodeqc.report.keys import config_dir

    return config_dir() / "watch"


def load_watched(node: str, signer: Signer, root: str | Path | None = None) -> tuple[WatchState | None, list[str], str]:
    """The node's watch state as the watch on the node reads it, believing its own key (`signer`'s)
    and those bound to this node (node_keys): the archive's, with this node's own copy's sticky
    findings put back over it (as it recorded them: a first_seen moved earlier would let an older
    qualification clear one), and its readings where the archive has no state it believes.

    Returns the state; what was put back, one line each (none where the two agree); and why the
    archive's copy was not believed ('' when it was, or there was none) and what stands in its
    place (this node's own copy; else nothing: the watch starts afresh). An own copy that cannot be
    read is passed over: the archive's stands alone, as before there was one."""
    trusted = node_keys(signer, node)
    refused = ""
    try:
        shared = load_state(node, trusted, root)
    except NotVouched as e:
        shared, refused = None, str(e)
    try:
        own = load_state(node, trusted, own_copy_root())
    except UsageError:
        own = None
    if refused:  # the archive's copy is worth nothing: this node's own stands whole, if it has one
        if own is None:
            return None, [], refused + "; this node keeps no copy of its own: the watch starts afresh"
        return own, [], refused + "; this node's own copy stands in its place"
    if own is None:
        return shared, [], ""
    state = shared or WatchState(node, own.hostname, own.simulated)
    by_key = {f.key: f for f in state.findings}
    restored = []
    for f in own.findings:
        if f.sticky and (by_key.get(f.key) is None or asdict(by_key[f.key]) != asdict(f)):
            restored.append(f"{f.check} {f.subject} {f.code} (first seen {stamp(f.first_seen)})")
            by_key[f.key] = f
    state.findings = list(by_key.values())[:MAX_FINDINGS]
    if shared is None and own.readings:
        # A believed copy's readings stand (another user's watch of this node wrote them): signed,
        # they can only have been put back to older ones, which show more growth and re-read the
        # kernel log, never less.
        restored.append("the readings the next pass judges growth from, and where the kernel log was read to")
        state.readings = own.readings
    return state, restored, ""


def save_watched(state: WatchState, signer: Signer, root: str | Path | None = None) -> Path:
    """The state signed and written to the archive and to this node's own copy (a copy that cannot be
    written leaves the archive's alone to stand, as before there was one)."""
    path = save_state(state, signer, root)
    try:
        save_state(state, signer, own_copy_root())
    except UsageError:
        pass
    return path


def save_state(state: WatchState, signer: Signer, root: str | Path | None = None) -> Path:
    path = state_path(state.node, root)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, state.signed(signer))
    except (OutputError, OSError) as e:
        raise UsageError(f"{path}: cannot write the watch state: {getattr(e, 'strerror', None) or e}") from None
    return path


@contextmanager
def state_lock(node: str, root: str | Path | None = None) -> Any:
    """Two watches of one node at once (a Slurm health check beside a systemd timer) take turns
    between reading the state and writing it whole, so neither drops what the other found."""
    path = node_dir(node, root) / LOCK_NAME
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = open_append(path)  # never through a link planted at its name
    except OSError as e:
        raise UsageError(f"{path}: cannot lock the watch state: {e.strerror or e}") from None
    try:
        waited = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > waited:
                    raise UsageError(f"{path}: another nodeqc watch has held the watch state for "
                                     f"{LOCK_WAIT_S:g} s") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)


def merge(state: WatchState, seen: list[WatchFinding], now: float, qualified_at: float | None) -> WatchState:
    """The state after a pass at `now` that saw `seen`: a finding seen again keeps when it was first
    seen (and becomes sticky if it now is); findings that no longer stand are dropped."""
    by_key = {f.key: f for f in state.findings}
    for f in seen:
        old = by_key.get(f.key)
        if old is not None and old.stands(now, qualified_at):
            old.last_seen, old.message, old.verdict = now, f.message, _worse(old.verdict, f.verdict)
            old.sticky = old.sticky or f.sticky
        else:
            by_key[f.key] = f
    state.findings = [f for f in by_key.values() if f.stands(now, qualified_at)][:MAX_FINDINGS]
    state.updated_at = now
    return state


def _worse(a: str, b: str) -> str:
    return "fail" if "fail" in (a, b) else a


def needs_requalification(state: WatchState | None, qualified_at: float | None, now: float) -> list[WatchFinding]:
    """The sticky findings that stand: each ends the node's latest qualification."""
    if state is None:
        return []
    return [f for f in state.findings if f.sticky and f.stands(now, qualified_at)]


def effective_valid_until(valid_until: str | None, finished_at: str | None, state: WatchState | None,
                          now: float | None = None) -> tuple[str | None, list[WatchFinding]]:
    """A report's valid_until as the watch leaves it: ended when a sticky finding that stands was
    first seen (never later than the report's own), with those findings. The report's finished_at
    is when it qualified the node: a finding first seen before it was there for the report to judge."""
    now = time.time() if now is None else now
    done = parse_stamp(finished_at)
    standing = needs_requalification(state, done, now)
    if not standing:
        return valid_until, []
    ended = min(f.first_seen for f in standing)
    ended_stamp = stamp(ended)
    if valid_until and valid_until <= ended_stamp:
        return valid_until, standing
    return ended_stamp, standing


def stamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def parse_stamp(text: str | None) -> float | None:
    import calendar

    if not text:
        return None
    try:
        return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")))
    except (ValueError, TypeError):
        return None


def why(findings: list[WatchFinding], most: int = 2) -> str:
    """'watch: health.xid gpu3 XID since 2026-11-27T02:00:00Z (+1 more)': the reason a row shows."""
    if not findings:
        return ""
    first = sorted(findings, key=lambda f: f.first_seen)
    shown = ", ".join(f"{f.check} {f.subject} {f.code} since {stamp(f.first_seen)}" for f in first[:most])
    more = f" (+{len(first) - most} more)" if len(first) > most else ""
    return f"needs re-qualification (watch: {shown}{more})"


def clears(entry: Any) -> bool:
    """Whether an archived report (nodeqc.archive.verified.Entry) clears the sticky findings before
    it: a qualification that passed; for a simulated node, a complete passing simulated run (the
    only qualification such a node has; a real node's never is)."""
    return bool(entry.qualified or (entry.simulated and entry.verdict == "PASS" and entry.status == "complete"
                                    and not entry.partial and not entry.fabric))


def last_cleared(entries: list[Any]) -> dict[str, str]:
    """Each node's newest report that clears (see clears), by node: its finished_at."""
    out: dict[str, str] = {}
    for e in entries:
        if clears(e) and (e.node not in out or e.finished_at > out[e.node]):
            out[e.node] = e.finished_at
    return out


def validity(node: str, root: str | Path | None, valid_until: str | None, finished_at: str | None,
             trusted: dict[str, Trusted], now: float | None = None) -> tuple[str | None, str]:
    """A node's valid_until as the watch leaves it, and why ('' when the watch has nothing to say),
    for `nodeqc fleet` and `nodeqc history`; finished_at: when the node's newest qualification
    (see clears) finished; trusted: the keys the reader trusts (keys.trusted_keys). A state file that
    cannot be read or believed is said, never taken for a healthy node."""
    try:
        state = load_state(node, trusted, root)
    except NotVouched as e:
        return valid_until, f"watch state not believed: {e}"
    except UsageError as e:
        return valid_until, f"watch state unreadable: {e}"
    until, standing = effective_valid_until(valid_until, finished_at, state, now)
    return until, why(standing)
