"""How a Spark command (``run``, ``stream``, ``demo``) ends on SIGINT or
SIGTERM, whenever it comes: one line, no traceback, a defined exit code.

A ``SignalGuard`` owns both signals for the command's life. Outside Spark
calls a signal stops the command at once (``Stopped``, raised where the
Python code is). Inside them it only records the request, so no exception
is raised in the middle of a call into the JVM (whose broken connection
prints pages of traces), and either cancels Spark's jobs from another
thread (``run``, ``demo``: the running job fails, the command stops) or
lets the caller stop at its next boundary (``stream``: the running
micro-batch finishes). The session starts in a helper thread, so PySpark
installs no SIGINT handler of its own (it does in the main thread, and
that one raises ``KeyboardInterrupt`` wherever the driver is). The JVM is
started with SIGINT and SIGTERM ignored (``spark.session``), so a signal to
the whole process group (what ``timeout``, systemd and a container stop
send) leaves Spark running until the driver decides to stop.

Exit codes: SIGINT 130 (128 + 2); SIGTERM 143 (128 + 15), except for
``stream``, which stops at a micro-batch boundary on SIGTERM as asked and
exits 0.

>>> import os, signal
>>> with SignalGuard() as guard:
...     try:
...         os.kill(os.getpid(), signal.SIGTERM)
...     except Stopped as stop:
...         print(stop.signal, stop.exit_code)
SIGTERM 143
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from .exits import EXIT_INTERRUPTED

if TYPE_CHECKING:
    from ..spark.watch import StopRequest

#: the exit code of a command stopped by SIGTERM: 128 + SIGTERM, as a Unix tool's
EXIT_TERMINATED = 143
#: how often the jobs are cancelled again after a stop, until the command's Spark calls end (seconds)
CANCEL_EVERY = 0.25
_T = TypeVar("_T")


class Stopped(Exception):
    """The command was stopped by ``signal`` (``SIGINT`` or ``SIGTERM``)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.signal = name

    @property
    def exit_code(self) -> int:
        """130 for SIGINT, 143 for SIGTERM."""
        return EXIT_INTERRUPTED if self.signal == "SIGINT" else EXIT_TERMINATED

    def line(self, where: str) -> str:
        """The one line the command prints."""
        how = "Ctrl-C (SIGINT)" if self.signal == "SIGINT" else self.signal
        return f"sharp-cer: stopped by {how} {where}"


class SignalGuard:
    """SIGINT and SIGTERM handled for a Spark command, while inside ``with``
    (the handlers before are restored after). Outside the main thread,
    where handlers cannot be set, it only keeps the request."""

    def __init__(self) -> None:
        from ..spark.watch import StopRequest  # made once PySpark is known to be installed

        self.asked: StopRequest = StopRequest()
        self._mode = "raise"
        self._cancel: Callable[[], Any] | None = None
        #: set when the ``spark_calls`` block whose jobs are being cancelled ends
        self._left: threading.Event | None = None
        self._cancelling = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> SignalGuard:
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self._handle) for s in (signal.SIGINT, signal.SIGTERM)}
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous = {}

    def _handle(self, number: int, frame: Any) -> None:
        name = signal.Signals(number).name
        if not self.asked.is_set():
            self.asked.signal = name
            self.asked.set()
            _quiet_py4j()
        if self._mode == "raise":
            raise Stopped(self.asked.signal or name)
        if self._mode != "cancel" or self._cancel is None or self._left is None:
            return
        if not self._cancelling:
            # from another thread: this one may be inside a call into the JVM on its own connection
            self._cancelling = True
            worker = threading.Thread(target=_cancel_until, args=(self._cancel, self._left), daemon=True)
            worker.start()
        if not _in_jvm_call(frame):
            # Python work between Spark's jobs (generating events, converting them): no job to cancel
            # ends it, and no call into the JVM is cut by stopping now
            raise Stopped(self.asked.signal or name)

    def check(self) -> None:
        """Raise ``Stopped`` if a signal came."""
        if self.asked.is_set():
            raise Stopped(self.asked.signal or "SIGINT")

    @contextmanager
    def spark_calls(self, cancel: Callable[[], Any] | None = None) -> Iterator[StopRequest]:
        """While inside, a signal is recorded (and, with ``cancel``, Spark's
        jobs are cancelled); an error the stop caused (a cancelled job's)
        becomes ``Stopped``. Without ``cancel`` the caller stops at its next
        boundary (it gets the request) and nothing is raised after: nothing
        was cancelled, so an error raised inside is not the stop's and is
        raised as it is (turned into a stop it would hide a real failure)."""
        self.check()
        before = self._mode, self._cancel, self._left, self._cancelling
        left = threading.Event()
        self._mode, self._cancel, self._left = ("cancel" if cancel is not None else "wait"), cancel, left
        self._cancelling = False
        try:
            yield self.asked
        except Exception:
            if self.asked.is_set() and cancel is not None:
                raise Stopped(self.asked.signal or "SIGINT") from None
            raise
        finally:
            left.set()
            self._mode, self._cancel, self._left, self._cancelling = before
        if cancel is not None:
            self.check()

    def start(self, starter: Callable[[], _T]) -> _T:
        """``starter()`` (the Spark session's start) in a helper thread, this
        one waiting; ``Stopped`` as soon as a signal comes meanwhile: the
        start is left to the helper, a daemon thread (a JVM it launched ends
        with this process, whose end closes its stdin)."""
        self.check()
        result: list[_T] = []
        failure: list[BaseException] = []

        def run() -> None:
            try:
                result.append(starter())
            except BaseException as exc:
                failure.append(exc)

        helper = threading.Thread(target=run, name="sharp-cer-spark-start", daemon=True)
        before = self._mode
        self._mode = "wait"
        try:
            helper.start()
            while helper.is_alive():
                helper.join(0.05)
                self.check()
        finally:
            self._mode = before
        self.check()
        if failure:
            raise failure[0]
        return result[0]


def guarded(command: Callable[[SignalGuard], int], err: Any, where: str, *, sigterm_code: int | None = None) -> int:
    """Run ``command`` under a ``SignalGuard``; a stop prints its one line on
    ``err`` and gives its exit code (``sigterm_code`` for SIGTERM if given)."""
    with SignalGuard() as guard:
        try:
            return command(guard)
        except Stopped as stop:
            print(stop.line(where), file=err, flush=True)
            if stop.signal == "SIGTERM" and sigterm_code is not None:
                return sigterm_code
            return stop.exit_code


def starting(command: str, master: str | None, log: str, err: TextIO) -> None:
    """The line a Spark command says as it starts Spark (a JVM's start takes
    seconds, tens on a loaded machine): what starts, where its log goes and
    how to stop it."""
    from ..spark.session import DEFAULT_MASTER

    print(
        f"sharp-cer {command}: starting Spark on {master or DEFAULT_MASTER} (its log: {log}); Ctrl-C stops",
        file=err,
        flush=True,
    )


def _cancel_until(cancel: Callable[[], Any], left: threading.Event, every: float = CANCEL_EVERY) -> None:
    """``cancel()`` now and every ``every`` seconds until ``left`` is set: the
    calls go on until the block sees its job fail, and a job they start
    meanwhile (a command runs several in a row) is cancelled too."""
    while True:
        with contextlib.suppress(Exception):  # a session going down: the block ends anyway
            cancel()
        if left.wait(every):
            return


def _in_jvm_call(frame: Any) -> bool:
    """Whether the interrupted Python ``frame`` is inside a call into the JVM
    (py4j's), where raising would break the connection mid-reply (py4j then
    logs its network errors with their stacks)."""
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith("py4j"):
            return True
        frame = frame.f_back
    return False


def _quiet_py4j() -> None:
    """py4j logs (with stacks) the connections a stop breaks: not for the user."""
    logging.getLogger("py4j").setLevel(logging.CRITICAL + 1)
