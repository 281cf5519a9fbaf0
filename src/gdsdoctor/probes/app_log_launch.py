"""What a job's launcher says when a rank, a task or a step ended badly (read by ``app_log``).

One reader for every launcher's account of an exit: the exit code or the signal, decoded the same
way whichever launcher printed it. Real lines (tests/data/app_log_launch/SOURCES.md)::

    [2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] [...] exits with return code = -9
    ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 3 (pid: 812917) …
    E0325 20:57:27.620000 2606 …/elastic/multiprocessing/api.py:869] failed (exitcode: -9) local_rank: 5 …
      exitcode  : -9 (pid: 14750)
      traceback : Signal 9 (SIGKILL) received by PID 14750
    srun: error: c002: task 0: Killed
    srun: error: gpu20-15: task 0: Out Of Memory
    slurmstepd-gpu20-15: error: Detected 1 oom-kill event(s) in StepId=9411285.0. Some of your processes …
    slurmstepd-gpu20-15: error: *** STEP 9411285.0 ON gpu20-15 CANCELLED AT 2022-05-17T17:58:10 ***

A launcher reports a child killed by signal N as the negative return code -N (Python's
``subprocess`` convention, which DeepSpeed and torchrun both follow) and a shell as 128 + N; an
exit code is the program's own. Kind ``launcher_exit`` with ``launch``: ``{launcher
("deepspeed"|"torchrun"|"slurm"|"python"|"shell"), code (int|None), signal (int|None), signal_name
(str|None), what ("signal"|"exit"|"oom"|"cancelled")}``; a shell's job-control line (``script: line
28:  8156 Killed   python3 main.py``) is launcher "shell". A rank's SIGKILL is also
``app_log_ckpt``'s ``oom_killed`` (the OOM killer's signal): that reader comes first.
"""

from __future__ import annotations

import signal as _signal
from typing import Any

from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import src

_DEEPSPEED = lazy_compile(r"\bexits with return code = (?P<code>-?\d{1,4})\b")
_TORCHRUN = lazy_compile(r"\bexitcode\s*:\s*(?P<code>-?\d{1,4})\b")
_TORCHRUN_SIGNAL = lazy_compile(
    r"\b[Ss]ignal (?P<signal>\d{1,2}) \((?P<name>SIG[A-Z0-9]{2,8})\) received by PID\b"
)
# a shell's job-control report of a child killed by a signal (bash, a batch script):
# "/var/spool/slurmd/job00191/slurm_script: line 28:  8156 Killed                  python3 main.py …"
_SHELL = lazy_compile(
    r": line \d{1,6}: +\d{1,10} (?P<state>Killed|Segmentation fault|Aborted|Terminated|Bus error)"
    r"(?: \(core dumped\))? {2,}\S"
)
_SRUN = lazy_compile(
    r"\bsrun: error: \S{1,100}: tasks? [\d,\[\]-]{1,60}: (?P<state>Killed|Out Of Memory|Segmentation fault"
    r"|Aborted|Terminated|Bus error|Exited with exit code (?P<code>\d{1,3}))"
)
_SLURMSTEPD = lazy_compile(
    r"\bslurmstepd(?:-\S{1,64})?: error: (?:Detected \d{1,6} (?P<oom>oom[-_]kill) event"
    r"|\*\*\* (?:STEP|JOB) \S{1,40} ON \S{1,64} (?P<cancelled>CANCELLED) AT \S{1,40}(?P<why>[^*]{0,60}))"
)
_PYTHON = lazy_compile(
    r"\bsubprocess\.CalledProcessError: Command .{0,2000}?(?:returned non-zero exit status (?P<code>\d{1,3})"
    r"|died with <Signals\.(?P<name>SIG[A-Z0-9]{2,8}): (?P<signal>\d{1,2})>)"
)
_SRUN_SIGNALS = {"Killed": 9, "Segmentation fault": 11, "Aborted": 6, "Terminated": 15, "Bus error": 7}
_HINTS = (
    "return code",
    "exitcode",
    "received by PID",
    "srun: error",
    "slurmstepd",
    "CalledProcessError",
    ": line ",
)


def signal_name(number: int | None) -> str | None:
    """``SIGKILL`` for 9: the names of this platform's signals (Linux's on a node)."""
    if number is None:
        return None
    try:
        return _signal.Signals(number).name
    except ValueError:
        return None


def _record(launcher: str, code: int | None, signal: int | None, what: str) -> dict[str, Any]:
    return {
        "launcher": launcher,
        "code": code,
        "signal": signal,
        "signal_name": signal_name(signal),
        "what": what,
    }


def _from_code(launcher: str, code: int) -> dict[str, Any] | None:
    """A return code as a launcher prints it: 0 is success, -N is signal N, else an exit."""
    if code == 0:
        return None
    return _record(launcher, code, -code, "signal") if code < 0 else _record(launcher, code, None, "exit")


def launch_record(line: str) -> dict[str, Any] | None:
    """The launcher's record of a bad exit the line reports, or None."""
    if not any(hint in line for hint in _HINTS):
        return None
    if m := _DEEPSPEED.search(line):
        return _from_code("deepspeed", int(m["code"]))
    if m := _TORCHRUN_SIGNAL.search(line):
        return _record("torchrun", None, int(m["signal"]), "signal")
    if m := _TORCHRUN.search(line):
        return _from_code("torchrun", int(m["code"]))
    if m := _SRUN.search(line):
        if m["code"]:
            return _record("slurm", int(m["code"]), None, "exit")
        if m["state"] == "Out Of Memory":
            return _record("slurm", None, None, "oom")
        return _record("slurm", None, _SRUN_SIGNALS[m["state"]], "signal")
    if m := _SLURMSTEPD.search(line):
        return _record("slurm", None, None, "oom" if m["oom"] else "cancelled")
    if m := _SHELL.search(line):
        return _record("shell", None, _SRUN_SIGNALS[m["state"]], "signal")
    if m := _PYTHON.search(line):
        if m["code"]:
            return _from_code("python", int(m["code"]))
        return _record("python", None, int(m["signal"]), "signal")
    return None


def launcher_error(line_no: int, line: str, artifact: str) -> dict[str, Any] | None:
    """The ``app_log.errors[]`` item of a launcher's bad-exit line, or None."""
    record = launch_record(line)
    if record is None:
        return None
    return {"code": None, "name": None, "kind": "launcher_exit", "api": None, "text": line.strip()[:500],
            "src": src(artifact, line_no, line), "source": "launcher", "ret": record["code"],
            "errno": None, "rdma": None, "ckpt": None, "launch": record}  # fmt: skip
