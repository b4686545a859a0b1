"""A class archive for the driver JVM (class data sharing, JDK's AppCDS).

Most of the CPU of a short Spark job is the JVM loading Spark's classes:
looking each one up in some 250 jars, parsing and verifying it, every run
(``benchmarks/bench_spark_floor.py``). A JVM started with
``-XX:ArchiveClassesAtExit=FILE`` writes every class it loaded to FILE as
it exits; one started with ``-XX:SharedArchiveFile=FILE`` maps them from
there instead (measured here: the floor of a job with a Python worker,
14.1-14.7 CPU s without, 8.0-9.3 with; README: Spark's start-up).

The archive lives in the user's private cache folder (``_user_cache``), one
per pyspark, Java and JVM options (a JVM checks that the class path matches
and, if not, runs without it: never wrong, only slower). The first driver
JVM without one writes it as it exits, under a name of its own
(``NAME.PID.part``, with the JVM's process id beside it once the session is
up): the dump costs that JVM some 20 CPU s after the job is done (the
driver has returned by then). A later start adopts the file once that JVM
is gone. ``SHARP_CER_SPARK_CLASS_ARCHIVE=0`` turns it all off; a
``spark.driver.extraJavaOptions`` of the caller's replaces ours whole
(``session.session_settings``), archive included.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import shutil
import time
from typing import Any

from sharp_cer._user_cache import private_folder

#: the environment variable that turns the archive off ("0")
SWITCH = "SHARP_CER_SPARK_CLASS_ARCHIVE"
#: the JVM says nothing of classes it cannot archive (signed jars, old class files): hundreds of lines
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def _java() -> str:
    """The java that spark-class runs: ``$JAVA_HOME/bin/java``, else the one on the path."""
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(found) if found else ""


def archive_name(options: str) -> str:
    """The archive's name for this pyspark, this Java and the JVM ``options``
    (a different one of any of them is a different archive)."""
    import pyspark

    java = _java()
    stamp = os.stat(java).st_mtime_ns if java else 0
    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    text = "\n".join([pyspark.__version__, jars, java, str(stamp), options])
    return "spark-classes-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def archive_option(options: str) -> str:
    """The option that gives a driver JVM started with ``options`` the
    archive: use it if made, else write it at exit (unless another JVM is
    writing it); '' when turned off or there is no private folder."""
    if os.environ.get(SWITCH, "1") == "0":
        return ""
    folder = private_folder()
    if folder is None:
        return ""
    base = os.path.join(folder, archive_name(options))
    _adopt(base)
    if os.path.exists(base + ".jsa"):
        return f"-XX:SharedArchiveFile={base}.jsa {QUIET}"
    if glob.glob(base + ".*.part*"):
        return ""  # another JVM is writing it (or its driver died before saying which JVM: left, see _adopt)
    return f"-XX:ArchiveClassesAtExit={base}.{os.getpid()}.part {QUIET}"


def note_jvm(options: str, session: Any) -> None:
    """Beside the archive this process's JVM writes at exit, that JVM's process id (``_adopt`` reads it)."""
    marker = _writing(options)
    if marker is None:
        return
    try:
        pid = int(session.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
        with open(marker, "w") as out:
            out.write(str(pid))
    except Exception:  # no marker: the part is never adopted, only slower starts
        return


def _writing(options: str) -> str | None:
    """The marker file of the part this process's JVM writes, if it writes one."""
    for word in options.split():
        if word.startswith("-XX:ArchiveClassesAtExit="):
            return word.split("=", 1)[1] + ".pid"
    return None


def _adopt(base: str) -> None:
    """Make a finished part the archive: one whose JVM has exited (a JVM
    killed in the middle of writing it leaves a file the next JVM cannot
    map, and so runs without it)."""
    for marker in glob.glob(base + ".*.part.pid"):
        part = marker[: -len(".pid")]
        try:
            with open(marker) as given:
                pid = int(given.read().strip() or 0)
        except (OSError, ValueError):
            continue
        if pid and _alive(pid):
            continue  # still writing (or running)
        with contextlib.suppress(OSError):
            if os.path.getsize(part) > 0 and not os.path.exists(base + ".jsa"):
                os.replace(part, base + ".jsa")
            else:
                os.remove(part)
        with contextlib.suppress(OSError):
            os.remove(marker)
    for part in glob.glob(base + ".*.part"):
        with contextlib.suppress(OSError):  # its driver died before saying which JVM writes it: an hour, then gone
            if not os.path.exists(part + ".pid") and time.time() - os.path.getmtime(part) > 3600:
                os.remove(part)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's
    return True
