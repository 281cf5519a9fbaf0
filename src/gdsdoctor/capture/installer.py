"""Installer and provisioning logs: their line prefixes removed, so that what they carry is read.

An OS installer logs the kernel's messages and the output of the tools it runs behind a prefix of
its own: anaconda's ``H:M:S,ms LOGLEVEL facility:message`` (its /tmp/syslog, program.log,
storage.log: Fedora's "Anaconda Logging" page), Python logging's default ``LEVEL:name:message``
(anaconda's and blivet's loggers as the journal keeps them), Subiquity's and curtin's
``YYYY-MM-DD H:M:S,ms LEVEL module:lineno message``, cloud-init's ``YYYY-MM-DD H:M:S,ms -
file.py[LEVEL]: message``, and journald's console form an installer's serial console shows
(``[  65.349509] anaconda[1828]: message``: a program's line behind the kernel's clock, not a
kernel line). Behind such a prefix a kernel line is no kernel log line and a tool's
output no output, so a ticket with an installer's log read as nothing.

When a part's lines carry one such prefix (``MIN_LINES`` of them, ``MIN_SHARE`` of its lines
with text), the prefix goes as the syslog one does (unwrap): a kernel line becomes the undated
``- kernel: message`` the kernel-log reader reads, any other line its message alone (a
traceback's lines, a tool's stderr). unwrap then gives the kernel's lines and the rest as two
parts, each at the lines it holds, so that each reaches its own reader. Lines without the
prefix (a traceback's frames, a wrapped message's tail) stay as they are.
"""

from __future__ import annotations

from collections import Counter
from itertools import islice

from gdsdoctor.patterns import lazy_compile

_LEVELS = r"(?:DEBUG|DBG|INFO|INF|NOTICE|WARNING|WARN|WRN|ERROR|ERR|CRITICAL|CRIT|ALERT|EMERG)"
_IDENT = r"[A-Za-z_][\w.\-/]{0,80}?"
_DAY = r"\d{4}-\d\d-\d\d"
_CLOCK_MS = r"\d\d:\d\d:\d\d,\d{1,6}"
FORMS = {
    # anaconda: "15:52:20,316 ERR kernel:INFO: task …", "17:43:11,437 INF program: Running… udevadm"
    "anaconda": lazy_compile(
        rf"^{_CLOCK_MS} {{1,2}}{_LEVELS} {{1,2}}(?P<ident>{_IDENT})(?:\[\d{{1,9}}\])?:(?P<msg>.*)$"
    ),
    # Python logging's default format: "INFO:program:Running... udevadm settle", "ERROR:blivet:failed …"
    "python": lazy_compile(rf"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):(?P<ident>{_IDENT}):(?P<msg>.*)$"),
    # Subiquity, curtin: "2021-11-16 17:05:04,630 ERROR subiquity.server.server:393 top level error"
    "subiquity": lazy_compile(rf"^{_DAY} {_CLOCK_MS} {_LEVELS} (?P<ident>{_IDENT}):\d{{1,6}} (?P<msg>.*)$"),
    # cloud-init: "2024-05-01 11:22:10,488 - util.py[WARNING]: Failed during filesystem operation"
    "cloud-init": lazy_compile(
        rf"^{_DAY} {_CLOCK_MS} - (?P<ident>[\w.\-]{{1,80}})\[{_LEVELS}\]: ?(?P<msg>.*)$"
    ),
    # journald's console (ForwardToConsole=, an installer's serial console): a program's line behind
    # the kernel's clock, "[  65.349509] anaconda[1828]: Filesystem Size Used…": a program's, not
    # the kernel's (a kernel message names no process id)
    "console": lazy_compile(
        r"^\[\s{0,12}\d{1,8}\.\d{1,9}\] (?P<ident>[A-Za-z][\w.\-]{0,80})\[\d{1,9}\]: (?P<msg>.*)$"
    ),
}
MIN_LINES = 2
HEAD_LINES = 2000
# the share of a part's lines with text that must carry the prefix: an installer's timed prefix is
# its own (cloud-init's warnings hold a tool's whole stderr, unprefixed, under one prefixed line);
# Python's bare default is also a job's, and is taken only where it is most of the text
# and a real kernel log holds some programs' lines behind its clock (systemd's, written to /dev/kmsg):
# the console's form is taken only where programs wrote most of the text
MIN_SHARE = {"anaconda": 0.1, "subiquity": 0.1, "cloud-init": 0.1, "python": 0.5, "console": 0.6}
KERNEL = "- kernel: "  # the undated kernel line the kernel-log reader reads (unwrap's syslog form)
_CHEAP = lazy_compile(r"^(?:\d\d:\d\d:\d\d,|[A-Z]{4,8}:|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,|\[)")


def form_of(lines: list[str]) -> str | None:
    """The installer prefix most of ``lines`` carry, or None (see the module). Decided on the
    first ``HEAD_LINES`` lines with text: an installer prefixes its log from the first line, and a
    100,000-line kernel log (whose clock the console form shares) is not matched line by line."""
    filled = list(islice((line for line in lines if line.strip()), HEAD_LINES))
    candidates = [line for line in filled if _CHEAP.match(line)]  # one C test a line first
    if len(candidates) < MIN_LINES:
        return None
    counts = Counter(name for line in candidates for name, form in FORMS.items() if form.match(line))
    if not counts:
        return None
    name, count = counts.most_common(1)[0]
    return name if count >= MIN_LINES and count >= MIN_SHARE[name] * len(filled) else None


def kernel_lines(lines: list[str]) -> set[int]:
    """Which of the stripped lines are the kernel's."""
    return {index for index, line in enumerate(lines) if line.startswith(KERNEL)}


def strip(lines: list[str], removed: list[str]) -> list[str]:
    """The lines without their installer prefix (a kernel line as ``- kernel: message``), or the
    lines as they are when they carry none. A prefix inside the prefix goes too: anaconda's syslog
    carries its storage module's Python lines (``00:51:20,722 WARNING
    org.fedoraproject.Anaconda.Modules.Storage:INFO:blivet:executing action …``)."""
    for _ in range(2):
        lines, stripped = _strip_once(lines, removed)
        if not stripped:
            break
    return lines


def _strip_once(lines: list[str], removed: list[str]) -> tuple[list[str], bool]:
    name = form_of(lines)
    if name is None:
        return lines, False
    form = FORMS[name]
    out = []
    for line in lines:
        m = form.match(line)
        if m is None:
            out.append(line)
        elif m["ident"] == "kernel":
            out.append(KERNEL + m["msg"])  # the kernel's own indentation kept (a stack's frames)
        else:
            out.append(m["msg"].strip())
    removed.append(f"{name} log prefixes")
    return out, True
