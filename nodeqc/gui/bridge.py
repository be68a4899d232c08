"""The runner off the GUI thread.

The runner calls its emit callback from its own thread and from the telemetry sampler's thread. A Qt
signal with a queued connection carries each event to the GUI thread, in order, so widgets are only
ever touched there and the window keeps painting whatever the engine is doing.
"""

from __future__ import annotations

import threading
from typing import Any

from PySide6.QtCore import QObject, Signal

from nodeqc.errors import UsageError
from nodeqc.runner import Runner


class RunThread(QObject):
    event = Signal(object)  # every engine event, delivered on the GUI thread
    done = Signal(object)  # the RunOutcome, after the report is written
    failed = Signal(str)  # the run could not start (e.g. the report directory cannot be created)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.runner: Runner | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, make_runner: Any) -> None:
        """`make_runner(emit)` builds the Runner around our emit; it runs on a worker thread."""
        self.runner = make_runner(self.event.emit)
        self._thread = threading.Thread(target=self._work, args=(self.runner,), name="nodeqc-run", daemon=True)
        self._thread.start()

    def abort(self) -> None:
        if self.runner is not None:
            self.runner.abort()

    def wait(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _work(self, runner: Runner) -> None:
        try:
            outcome = runner.run()
        except UsageError as e:
            self.failed.emit(str(e))
            return
        except Exception as e:  # noqa: BLE001 - the runner turns check errors into results; this is the rest
            self.failed.emit(f"internal error: {type(e).__name__}: {e}")
            return
        self.done.emit(outcome)
