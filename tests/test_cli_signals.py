"""How the Spark commands take SIGINT and SIGTERM (``sharp_cer.cli.signals``),
without starting Spark: the guard's three modes, the session started off
the main thread, the one line and exit codes, and a JVM launched with both
signals ignored. ``tests/test_spark_stops.py`` sends real signals to real
commands."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from sharp_cer.cli import main
from sharp_cer.cli.signals import CANCEL_EVERY, EXIT_TERMINATED, SignalGuard, Stopped, guarded


def _handlers() -> tuple[object, object]:
    return signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)


@pytest.mark.parametrize(("sent", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_outside_spark_calls_a_signal_stops_the_command_at_once(sent: signal.Signals, code: int) -> None:
    before = _handlers()
    err = io.StringIO()

    def command(guard: SignalGuard) -> int:
        os.kill(os.getpid(), sent)
        raise AssertionError("not stopped")  # pragma: no cover

    assert guarded(command, err, "before the run finished") == code
    how = "Ctrl-C (SIGINT)" if sent == signal.SIGINT else "SIGTERM"
    assert err.getvalue() == f"sharp-cer: stopped by {how} before the run finished\n"
    assert _handlers() == before


def test_inside_spark_calls_a_signal_cancels_the_jobs_from_another_thread_and_stops_after() -> None:
    cancelled: list[bool] = []
    job_failed = threading.Event()

    def cancel() -> None:
        cancelled.append(threading.current_thread() is threading.main_thread())
        job_failed.set()

    with SignalGuard() as guard, pytest.raises(Stopped) as stop, guard.spark_calls(cancel=cancel):
        in_jvm_call(lambda: os.kill(os.getpid(), signal.SIGINT))  # no exception there: the JVM's reply comes
        assert job_failed.wait(10)
        raise RuntimeError("Py4JJavaError: the job was cancelled")  # what the cancelled job raises
    assert stop.value.signal == "SIGINT" and cancelled[0] is False


def in_jvm_call(call: Callable[[], object]) -> object:
    """``call()`` from a frame of a py4j module, as a call into the JVM is
    (what the guard looks for on the interrupted stack)."""
    scope: dict[str, object] = {"__name__": "py4j.clientserver", "call": call}
    exec("def send_command():\n    return call()\n", scope)
    return scope["send_command"]()  # type: ignore[operator]


def test_jobs_started_after_a_stop_are_cancelled_too_until_the_calls_end() -> None:
    """A command runs several jobs in a row: one starting after the first
    cancel (its caller had not seen the failure yet) is cancelled too."""
    calls: list[float] = []

    with SignalGuard() as guard, pytest.raises(Stopped), guard.spark_calls(cancel=lambda: calls.append(0.0)):
        in_jvm_call(lambda: os.kill(os.getpid(), signal.SIGINT))
        for _ in range(200):  # 10 s at most
            if len(calls) >= 3:
                break
            threading.Event().wait(0.05)
        seen = len(calls)  # (an assertion in here would be turned into the stop, as a job's error is)
        raise RuntimeError("Py4JJavaError: the job was cancelled")
    assert seen >= 3
    after = len(calls)
    threading.Event().wait(3 * CANCEL_EVERY)
    assert len(calls) == after  # the cancels end with the calls


def test_a_signal_during_python_work_inside_spark_calls_stops_at_once() -> None:
    """Between Spark's jobs the driver runs Python (generating events,
    converting them to Arrow): no job to cancel would end it."""
    went_on: list[bool] = []
    with SignalGuard() as guard, pytest.raises(Stopped), guard.spark_calls(cancel=lambda: None):
        os.kill(os.getpid(), signal.SIGINT)
        went_on.append(True)  # pragma: no cover
    assert went_on == []


def test_a_job_that_ends_before_its_cancel_still_stops_after_the_calls() -> None:
    with SignalGuard() as guard, pytest.raises(Stopped):
        with guard.spark_calls(cancel=lambda: None):
            os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("not stopped after the calls")  # pragma: no cover


def test_without_cancel_the_caller_gets_the_request_and_stops_at_its_boundary() -> None:
    with SignalGuard() as guard:
        with guard.spark_calls() as asked:
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGINT)  # a second signal changes nothing: the first one names the stop
            assert asked.wait(5) and asked.signal == "SIGTERM"
        assert guard.asked.signal == "SIGTERM"  # nothing raised: the stream summarizes what it committed


def test_without_cancel_an_error_after_the_request_is_raised_as_it_is() -> None:
    """A stream's stop request cancels nothing: an error after it (a bug, a
    failed micro-batch) is not the stop's and must not read "stopped by
    Ctrl-C before the stream started" (issue 38)."""
    guard = SignalGuard()
    with guard, pytest.raises(RuntimeError, match="an internal error"), guard.spark_calls() as asked:
        os.kill(os.getpid(), signal.SIGINT)
        assert asked.wait(5)
        raise RuntimeError("an internal error")
    assert guard.asked.signal == "SIGINT"


def test_a_stream_command_shows_an_error_raised_after_its_stop_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through the command: a stream whose run fails after Ctrl-C says the
    failure and exits as an error, not as a stop "before the stream started"."""
    pytest.importorskip("pyspark")
    import sharp_cer.spark.session as session
    import sharp_cer.spark.stream as streaming
    from sharp_cer.errors import SurfaceError

    def failing_run(*args: object, stop: object = None, **kwargs: object) -> object:
        os.kill(os.getpid(), signal.SIGINT)
        assert stop is not None and stop.wait(5)  # type: ignore[attr-defined]
        raise SurfaceError("error: the stream failed: a worker's bug")

    monkeypatch.setattr(session, "spark_session", lambda *args, **kwargs: object())
    monkeypatch.setattr(streaming, "run_stream", failing_run)
    monkeypatch.chdir(tmp_path)
    _tiny_workload(tmp_path)
    assert main(["stream", "w.toml", "--source", "src", "--checkpoint", "ck", "--out", "o"]) == 2
    _, err = capsys.readouterr()
    assert err.splitlines()[1:] == ["error: the stream failed: a worker's bug"]


def test_the_session_starts_off_the_main_thread_and_a_signal_meanwhile_stops_at_once() -> None:
    started_on: list[bool] = []
    release, started_done = threading.Event(), threading.Event()

    def start() -> str:
        started_on.append(threading.current_thread() is threading.main_thread())
        os.kill(os.getpid(), signal.SIGINT)  # while the JVM starts (a loaded machine: tens of seconds)
        release.wait(10)
        started_done.set()
        return "session"

    with SignalGuard() as guard:
        with pytest.raises(Stopped):
            guard.start(start)
        # stopped without waiting for the start: it is left to its daemon thread
        assert not started_done.is_set()
        assert started_on == [False]  # so PySpark installs no SIGINT handler of its own
    release.set()
    with SignalGuard() as guard:
        assert guard.start(lambda: "session") == "session"


def test_an_error_while_the_session_starts_is_raised_as_it_was() -> None:
    def start() -> str:
        raise ValueError("no Java")

    with SignalGuard() as guard, pytest.raises(ValueError, match="no Java"):
        guard.start(start)


def test_sigterm_code_of_a_command_that_stops_gracefully() -> None:
    def command(guard: SignalGuard) -> int:
        os.kill(os.getpid(), signal.SIGTERM)
        return 99  # pragma: no cover

    assert guarded(command, io.StringIO(), "before the stream started", sigterm_code=0) == 0
    assert guarded(command, io.StringIO(), "before the run finished") == EXIT_TERMINATED


@pytest.mark.parametrize(("command", "sent", "code"), [("stream", signal.SIGTERM, 0), ("run", signal.SIGTERM, 143)])
def test_a_command_stopped_while_its_session_starts_prints_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    sent: signal.Signals,
    code: int,
) -> None:
    import sharp_cer.spark.session as session

    def spark_session(*args: object, **kwargs: object) -> object:
        os.kill(os.getpid(), sent)
        return object()  # never used: the command stops first

    monkeypatch.setattr(session, "spark_session", spark_session)
    monkeypatch.chdir(tmp_path)
    _tiny_workload(tmp_path)
    (tmp_path / "src" / "e.csv").write_text("A,1,1\n")
    if command == "stream":
        argv = ["stream", "w.toml", "--source", "src", "--checkpoint", "ck", "--out", "o"]
    else:
        argv = ["run", "w.toml", "--events", "src/e.csv", "--out", "o"]
    assert main(argv) == code
    out, err = capsys.readouterr()
    assert out == ""
    log = Path("o", "spark.log")
    assert err.splitlines() == [
        f"sharp-cer {command}: starting Spark on local[*] (its log: {log}); Ctrl-C stops",
        f"sharp-cer: stopped by SIGTERM before the {command} {'started' if command == 'stream' else 'finished'}",
    ]


def test_the_jvm_starts_with_sigint_and_sigterm_ignored() -> None:
    """What pyspark's launch_gateway calls (``java_gateway.Popen``), inside
    the session's start: a child whose ignored signals include both."""
    pytest.importorskip("pyspark")
    from pyspark import java_gateway

    from sharp_cer.spark.session import _jvm_ignores_signals

    with _jvm_ignores_signals():
        child = java_gateway.Popen(["grep", "SigIgn", "/proc/self/status"], stdout=subprocess.PIPE, text=True)  # type: ignore[attr-defined]
        text, _ = child.communicate()
    ignored = int(text.split()[1], 16)
    assert ignored & (1 << (signal.SIGINT - 1)) and ignored & (1 << (signal.SIGTERM - 1))
    assert java_gateway.Popen is subprocess.Popen  # type: ignore[attr-defined]  # put back


def _tiny_workload(folder: Path) -> None:
    """``w.toml`` (one query over one event type) and an empty ``src/`` in ``folder``."""
    (folder / "w.toml").write_text(
        '[workload]\nname = "w"\nschema = "CREATE STREAM S { EVENT A { x:int, t:primary_time } }"\n'
        '[[query]]\nname = "q"\ntext = "SELECT * WHERE A"\n'
    )
    (folder / "src").mkdir()
