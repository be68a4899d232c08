"""How long a run waits for its workers: a policy of the run, not of the hardware or the workers."""

from __future__ import annotations

from nodeqc.backends import Hardware
from nodeqc.spec.profile import Profile
from nodeqc.work.workers import Watchdog


def watchdog_for(hw: Hardware, profile: Profile) -> Watchdog:
    """Real GPUs: the profile's startup and stall limits (a cold CUDA context and kernel compile take
    tens of seconds). The simulated node: its work steps take milliseconds and its workers start in a
    second or two, so a few silent seconds is a hang; its clock's scale stretches both."""
    if hw.simulated:
        return Watchdog(startup_s=20, stall_s=5, time_scale=hw.clock.scale)
    return Watchdog(startup_s=profile.get("run", "startup_timeout_s"),
                    stall_s=profile.get("run", "stall_timeout_s"), time_scale=1.0)
