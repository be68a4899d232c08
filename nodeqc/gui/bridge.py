"""The runner off the GUI thread.

The runner calls its emit callback from its own thread and from the telemetry sampler's thread. A Qt
signal with a queued connection carries each event to the GUI thread, in order, so widgets are only
ever touched there and the window keeps painting whatever the engine is doing. Each event carries its
run's number: a sampler still stuck in a dying GPU's driver call after its run ended cannot put its
readings into the next run.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from PySide6.QtCore import QObject, Qt, Signal

from nodeqc.core.errors import UsageError
from nodeqc.run.events import Notice
from nodeqc.run.runner import RunOutcome, Runner


class RunThread(QObject):
    event = Signal(object)  # every engine event of the current run, delivered on the GUI thread
    _numbered = Signal(int, object)  # (run number, event) from the engine's threads
    done = Signal(object)  # the RunOutcome, after the report is written
    failed = Signal(str)  # the run could not start (e.g. the report directory cannot be created)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.runner: Runner | None = None
        self.aborting = False
        self._thread: threading.Thread | None = None
        self.run_number = 0
        self._numbered.connect(self._relay, Qt.ConnectionType.QueuedConnection)

    def _relay(self, number: int, event: Any) -> None:
        if number == self.run_number:
            self.event.emit(event)

    def start(self, make_runner: Callable[[Callable[[Any], None]], Runner],
              after: Callable[[RunOutcome], None] = lambda outcome: None) -> None:
        """On a worker thread: `make_runner(emit)` builds the Runner around our emit, it runs, then
        `after(outcome)` does what follows the report."""
        self.runner, self.aborting = None, False
        self.run_number += 1
        number = self.run_number
        emit = lambda event: self._numbered.emit(number, event)  # noqa: E731
        self._thread = threading.Thread(target=self._work, args=(make_runner, after, emit), name="nodeqc-run",
                                        daemon=True)
        self._thread.start()

    def abort(self) -> None:
        self.aborting = True  # a runner still being built is aborted as soon as it exists
        if self.runner is not None:
            self.runner.abort()

    def wait(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _work(self, make_runner: Callable[[Callable[[Any], None]], Runner],
              after: Callable[[RunOutcome], None], emit: Callable[[Any], None]) -> None:
        try:
            self.runner = runner = make_runner(emit)
            if self.aborting:
                runner.abort()
            outcome = runner.run()
        except UsageError as e:
            self.failed.emit(str(e))
            return
        except Exception as e:  # noqa: BLE001 - the runner turns check errors into results; this is the rest
            self.failed.emit(f"internal error: {type(e).__name__}: {e}")
            return
        try:
            after(outcome)
        except Exception as e:  # noqa: BLE001 - the signed report stands; what follows it only says so
            emit(Notice("error", f"after the run: {e}"))
        self.done.emit(outcome)
