#!/usr/bin/env python3
"""The documented installs, run as written, in a throwaway prefix (not a test: it takes a minute
and needs a package index; scripts/benchmark.py runs it as its `install` section).

    python3 scripts/install_check.py              # exit 0 when every step did what the docs say

1. README's virtual-environment step, as an ordinary user when run as root (``nobody``, with
   setpriv): ``python3 -m venv .venv && . .venv/bin/activate`` must not need root.
2. The system-wide install (docs/install.md, the ``sh`` block under "System-wide install"), each line with
   ``sudo`` dropped and ``/opt/`` and ``/usr/local/`` moved under the prefix; then the linked
   ``gdsdoctor --version`` and its man page (``man -l``: every command has its section).
3. The shipped systemd unit's ``ExecStartPre`` and ``ExecStart`` (integrations/prometheus/
   gdsdoctor-textfile.service) as written, its program and output directory moved under the
   prefix, the output directory missing: it is made, the command exits with a code the unit
   accepts and writes the .prom file.
4. The node-problem-detector plugin's two rules (integrations/node-problem-detector), their
   program under the prefix and ``--host-root /host`` given this host's ``/``: exit 0, 1 or 2 and
   one line of at most 80 characters.
5. The offline install (docs/install.md, "Offline install"): the wheelhouse built as written
   for Python 3.10 (the floor; this interpreter when the machine has none) and this machine's
   architecture, then the node's lines, under a prefix, with the network cut (``unshare --net``,
   as root): the installed ``gdsdoctor --version`` must run.
"""

from __future__ import annotations

import glob
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
UNIT = REPO / "integrations/prometheus/gdsdoctor-textfile.service"
PLUGIN = REPO / "integrations/node-problem-detector/gdsdoctor-plugin.json"
HEADING = "## System-wide install"
OFFLINE = "## Offline install"
INSTALL_DOC = REPO / "docs" / "install.md"  # the README links to it


def readme_block(heading: str = HEADING) -> list[str]:
    """The command lines of the first ``sh`` block after ``heading`` in docs/install.md."""
    text = INSTALL_DOC.read_text()
    after = text[text.index(heading) :]
    block = re.search(r"```sh\n(.*?)```", after, re.S)
    if block is None:
        raise SystemExit(f"docs/install.md: no sh block under {heading!r}")
    return [line for line in block[1].splitlines() if line.strip() and not line.startswith("#")]


def sh_blocks(heading: str) -> list[list[str]]:
    """The command lines of each ``sh`` block of the docs/install.md section under ``heading``."""
    text = INSTALL_DOC.read_text()
    section = text[text.index(heading) :]
    following = section.find("\n## ", len(heading))
    section = section if following < 0 else section[:following]
    return [
        [line for line in block.splitlines() if line.strip() and not line.startswith("#")]
        for block in re.findall(r"```sh\n(.*?)```", section, re.S)
    ]


def venv_step() -> str:
    """README's virtual-environment command (the one a non-root user runs before the install)."""
    text = (REPO / "README.md").read_text()
    found = re.search(r"`(python3 -m venv [^`]+)`", text)
    if found is None:
        raise SystemExit("README.md: no `python3 -m venv ...` step")
    return found[1]


def under(prefix: Path, command: str) -> str:
    """A documented command moved under ``prefix``: no sudo, /opt and /usr/local inside it."""
    command = re.sub(r"(^|&&\s*)sudo\s+", r"\1", command)
    return re.sub(r"(?<![\w.])/(opt|usr/local|var/lib)/", lambda m: f"{prefix}/{m[1]}/", command)


def unit_command(prefix: Path) -> tuple[list[str], set[int], Path]:
    """The unit's ExecStart moved under the prefix, the exit codes it accepts, its output file."""
    text = UNIT.read_text()
    start = re.search(r"^ExecStart=(.+)$", text, re.M)
    success = re.search(r"^SuccessExitStatus=(.+)$", text, re.M)
    assert start, UNIT
    argv = shlex.split(under(prefix, start[1]))
    codes = {0} | {int(code) for code in (success[1].split() if success else [])}
    output = next(
        Path(a.split("=", 1)[1]) for a in argv if a.startswith(("prometheus=", "prometheus-fired="))
    )
    return argv, codes, output


def unit_pre_commands(prefix: Path) -> list[list[str]]:
    """The unit's ExecStartPre lines, in order, moved under the prefix."""
    return [
        shlex.split(under(prefix, line))
        for line in re.findall(r"^ExecStartPre=(.+)$", UNIT.read_text(), re.M)
    ]


def step(name: str, ok: bool, detail: str = "") -> bool:
    print(f"{'ok  ' if ok else 'FAIL'} {name}" + (f": {detail}" if detail else ""), flush=True)
    return ok


def as_nobody(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``command`` in bash as ``nobody`` (when this is root; else as this user) in ``cwd``."""
    prefix: list[str] = []
    if os.geteuid() == 0 and shutil.which("setpriv"):
        os.chmod(cwd, 0o777)
        prefix = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(cwd)}
    return subprocess.run([*prefix, "bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True)


def check_venv_as_user(work: Path) -> bool:
    home = work / "user"
    home.mkdir()
    work.chmod(0o755)  # a temporary directory is the creator's alone
    command = f"{venv_step()} && python -c 'import sys; print(sys.prefix)'"
    done = as_nobody(command, home)
    return step(
        "README venv step as an ordinary user",
        done.returncode == 0 and ".venv" in done.stdout,
        done.stderr.strip()[-300:],
    )


def check_system_install(prefix: Path) -> bool:
    started = time.monotonic()
    (prefix / "usr/local/bin").mkdir(parents=True)  # as on any system; the rest the lines make
    for line in readme_block():
        done = subprocess.run(["bash", "-c", under(prefix, line)], cwd=REPO, capture_output=True, text=True)
        if done.returncode != 0:
            return step(f"install: {line}", False, done.stderr.strip()[-500:])
    program = prefix / "usr/local/bin/gdsdoctor"
    version = subprocess.run([str(program), "--version"], capture_output=True, text=True)
    ok = step(
        f"install ({time.monotonic() - started:.0f} s), {program} --version",
        version.returncode == 0,
        version.stdout.strip() or version.stderr.strip(),
    )
    page = prefix / "usr/local/share/man/man1/gdsdoctor.1"
    if not page.exists():
        return step("man page linked", False, str(page)) and ok
    shown = subprocess.run(
        ["man", "-l", str(page)], env={**os.environ, "MANWIDTH": "100"}, capture_output=True, text=True
    )
    names = _command_names(program)
    missing = [n for n in names if f"   {n}\n" not in shown.stdout]
    good = shown.returncode == 0 and bool(names) and not missing
    return (
        step("man -l gdsdoctor.1: a section per command", good, f"{len(names)} commands, missing {missing}")
        and ok
    )


def _command_names(program: Path) -> list[str]:
    """The commands the installed program itself lists (its --help), subcommands included."""
    names = []
    for group in ("", "rules", "fleet"):
        shown = subprocess.run(
            [str(program), *([group] if group else []), "--help"],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "200"},
        )
        for match in re.finditer(r"^│ (\w[\w-]*) ", shown.stdout, re.M):
            if match[1] not in ("rules", "fleet"):
                names.append(" ".join(["gdsdoctor", *([group] if group else []), match[1]]))
    return names


def check_unit(prefix: Path) -> bool:
    argv, codes, output = unit_command(prefix)
    for pre in unit_pre_commands(prefix):  # the output directory is missing: the unit makes it
        if subprocess.run(pre, capture_output=True, timeout=60).returncode != 0:
            return step(f"unit ExecStartPre: {shlex.join(pre)}", False)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    text = output.read_text() if output.exists() else ""
    return step(
        f"unit ExecStart: {shlex.join(argv)}",
        done.returncode in codes and "gdsdoctor_status" in text,
        f"exit {done.returncode}, {output} {'written' if text else 'missing'}",
    )


def check_npd(prefix: Path) -> bool:
    ok = True
    for rule in json.loads(PLUGIN.read_text())["rules"]:
        program = under(prefix, rule["path"])
        args = ["/" if a == "/host" else a for a in rule["args"]]
        done = subprocess.run([program, *args], capture_output=True, text=True, timeout=300)
        lines = done.stdout.splitlines()
        good = done.returncode in (0, 1, 2) and len(lines) == 1 and len(lines[0]) <= 80
        said = f"exit {done.returncode}: {done.stdout.strip()!r}"
        ok = step(f"NPD rule {rule['reason']}", good, said) and ok
    return ok


def python_version(python: str) -> str | None:
    """``3.10`` for an interpreter that runs (a pyenv shim of a version not selected does not)."""
    try:
        done = subprocess.run([python, "-c", _VERSION], capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


_VERSION = "import sys; print('%d.%d' % sys.version_info[:2])"


def node_python() -> str:
    """The interpreter the offline install is made for: Python 3.10 (the floor; on PATH or
    pyenv's), else this one."""
    pyenv = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.10.*/bin/python3")), reverse=True)
    found = [p for p in [shutil.which("python3.10"), *pyenv] if p and python_version(p) == "3.10"]
    return found[0] if found else sys.executable


def for_the_node(line: str, version: str) -> str:
    """The build block's first line with the node's Python version and this machine's platform."""
    line = re.sub(r"\bNODE_PYTHON=\S+", f"NODE_PYTHON={version}", line)
    return re.sub(r"\bNODE_PLATFORM=\S+", f"NODE_PLATFORM=manylinux2014_{platform.machine()}", line)


def offline_lines(prefix: Path, python: str) -> list[str]:
    """The node's block moved under ``prefix``, its ``python3`` the node's interpreter."""
    _, install = sh_blocks(OFFLINE)[:2]
    return [re.sub(r"^python3 ", f"{python} ", under(prefix, line)) for line in install]


def check_offline(work: Path) -> bool:
    python = node_python()
    version = python_version(python) or ""
    build, _ = sh_blocks(OFFLINE)[:2]
    builder = work / "builder"  # its home: ~/wheelhouse lands there
    builder.mkdir()
    cache = os.environ.get("PIP_CACHE_DIR") or os.path.expanduser("~/.cache/pip")
    env = {**os.environ, "HOME": str(builder), "PIP_CACHE_DIR": cache}
    script = "\n".join([for_the_node(build[0], version), *build[1:]])
    done = subprocess.run(["bash", "-ec", script], cwd=REPO, env=env, capture_output=True, text=True)
    wheels = sorted(p.name for p in (builder / "wheelhouse").glob("*.whl"))
    if not step(f"offline: wheelhouse for Python {version}", done.returncode == 0, f"{len(wheels)} wheels"):
        print(done.stderr.strip()[-500:])
        return False
    node = work / "node"
    prefix = node / "prefix"
    (prefix / "usr/local/bin").mkdir(parents=True)
    shutil.copy(builder / "gdsdoctor-wheelhouse.tar.gz", node)
    cut = ["unshare", "--net", "--"] if os.geteuid() == 0 and shutil.which("unshare") else []
    script = "\n".join(offline_lines(prefix, python))
    done = subprocess.run([*cut, "bash", "-ec", script], cwd=node, capture_output=True, text=True)
    if not step(f"offline: install {'without network' if cut else 'with --no-index'}", done.returncode == 0):
        print(done.stderr.strip()[-500:])
        return False
    program = prefix / "usr/local/bin/gdsdoctor"
    shown = subprocess.run([str(program), "--version"], capture_output=True, text=True)
    return step(
        f"offline: {program} --version", shown.returncode == 0, shown.stdout.strip() or shown.stderr[-300:]
    )


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="gdsdoctor-install-") as tmp:
        work = Path(tmp)
        prefix = work / "prefix"
        results = [check_venv_as_user(work), check_system_install(prefix)]
        if results[-1]:
            results += [check_unit(prefix), check_npd(prefix)]
        results.append(check_offline(work))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
