"""What Lustre says about the checkpoint path itself, captured only when ``--path`` is on Lustre.

``lfs getstripe -d PATH`` (the layout new checkpoint files get) and ``lfs quota -u UID PATH`` /
``lfs quota -g GID PATH`` (the quotas its files are charged to: the user and group running the
check; as root, whom quotas do not hold, the checkpoint directory's owner and group), and ``lfs
quota -p PROJID PATH`` where ``lfs project -d PATH`` names a project, are run by
readers, in the order a careful engineer would: ``findmnt -T PATH`` first (in a subprocess, like
the ``target`` probe: a hung mount hangs a killable child), and ``lfs`` only when the path's
filesystem is ``lustre`` and ``lfs`` is installed. Elsewhere the section is ``missing`` with the
reason ("/mnt/ckpt is on xfs, not Lustre"). Every command is read-only and runs through the
capture's runner (timeout, process-group kill, one copy at a time); none runs for another
machine's root.

Section ``lfs_getstripe``: the ``lfs_layout`` parser's shape (see lfs_layout.py). Section
``lfs_quota``: the ``fs_quota`` shape (``fs_targets.parse_quota``, the parser of a pasted ``lfs
quota``), one entry per ``Disk quotas for usr|grp`` table.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from gdsdoctor.capture.runner import run_command
from gdsdoctor.errors import SourceFailed, Unavailable
from gdsdoctor.model import ArtifactStatus, decode_text
from gdsdoctor.probes.base import Probe, Reader, Source
from gdsdoctor.probes.fs_targets import combine_quotas, parse_quota
from gdsdoctor.probes.lfs_layout import combine_layouts, parse_getstripe, recognise_getstripe

LFS_TIMEOUT_S = 20.0  # a hung Lustre client blocks lfs: the runner kills it at this


def filesystem_type(path: str) -> str:
    """The type of the filesystem holding ``path`` (findmnt resolves links and bind mounts)."""
    found = run_command("findmnt", ("findmnt", "-n", "-o", "FSTYPE", "-T", path), 10.0)
    if found.status is not ArtifactStatus.OK:
        raise Unavailable(f"findmnt -T {path}: {found.detail or found.status}")
    return decode_text(found.data).strip().split("\n")[0].strip()


class Run(Protocol):
    def __call__(self, argv: tuple[str, ...], *, keep: bool = True, optional: bool = False) -> bytes: ...


Steps = Callable[[str, Run], None]


def lustre_reader(path: str, steps: Steps) -> Reader:
    """A reader running the lfs commands of ``steps(path, run)`` when ``path`` is on Lustre: the
    outputs kept, one after the other; missing (with why) off Lustre or without lfs. A step may
    use an output to choose the next command (the project ID ``lfs project -d`` prints)."""

    def read(host_root: Path) -> bytes:
        del host_root  # the commands ask the kernel about this mount namespace (this_process)
        fstype = filesystem_type(path)
        if fstype != "lustre":
            raise Unavailable(f"{path} is on {fstype or 'an unknown filesystem'}, not Lustre: lfs not run")
        outputs: list[bytes] = []

        def run(argv: tuple[str, ...], *, keep: bool = True, optional: bool = False) -> bytes:
            result = run_command("lfs", argv, LFS_TIMEOUT_S)
            if result.status is ArtifactStatus.MISSING:
                raise Unavailable(result.detail)
            if optional and result.status is not ArtifactStatus.OK:
                return b""  # a feature this Lustre lacks (projects before 2.10) is no failure
            if result.status is ArtifactStatus.DENIED:
                raise PermissionError(f"{' '.join(argv)}: {result.detail}")
            if result.status is not ArtifactStatus.OK and not result.data.strip():
                raise SourceFailed(f"{' '.join(argv)}: {result.detail or result.status}")
            if keep:
                outputs.append(result.data)
            return result.data

        steps(path, run)
        return b"".join(outputs)

    return read


def _getstripe(path: str, run: Run) -> None:
    run(("lfs", "getstripe", "-d", path))


def quota_owners(path: str) -> tuple[int, int]:
    """Whose quotas the checkpoint files are charged to: the user and group running the check; as
    root (whom quotas do not hold) the owner and group of the checkpoint directory. Asked only
    after findmnt answered for the path, so the stat does not meet a hung mount first."""
    uid, gid = os.getuid(), os.getgid()
    if uid == 0:
        try:
            status = os.stat(path)
        except OSError:
            return uid, gid
        return status.st_uid, status.st_gid
    return uid, gid


def project_of(listing: bytes) -> int | None:
    """The project ID ``lfs project -d DIR`` prints (``200020 P /hpc/projects/x``); None for 0,
    a directory in no project."""
    words = decode_text(listing).split()
    return int(words[0]) if words and words[0].isdecimal() and int(words[0]) > 0 else None


def _quota(path: str, run: Run) -> None:
    """The user's, the group's and, where the directory is in a project, the project's quota: a
    project quota on a shared checkpoint directory is what fills first on many sites."""
    uid, gid = quota_owners(path)
    run(("lfs", "quota", "-u", str(uid), path))
    run(("lfs", "quota", "-g", str(gid), path))
    project = project_of(run(("lfs", "project", "-d", path), keep=False, optional=True))
    if project is not None:
        run(("lfs", "quota", "-p", str(project), path))


def _source(artifact: str, path: str, steps: Steps, how: str) -> Source:
    return Source(artifact, reader=lustre_reader(path, steps), how=how, timeout=LFS_TIMEOUT_S,
                  this_process=True, runs_how=True)  # fmt: skip


def probes_for(path: str) -> tuple[Probe, ...]:
    """The Lustre probes of one checkpoint path (argv, never a shell)."""
    getstripe = _source("cmd/lfs-getstripe-d.txt", path, _getstripe, f"lfs getstripe -d {path}")
    how = f"lfs quota -u UID {path}; lfs quota -g GID {path}; lfs quota -p PROJID {path}"
    quota = _source("cmd/lfs-quota.txt", path, _quota, how)
    return (
        Probe(
            section="lfs_getstripe",
            title="Lustre layout new checkpoint files get (lfs getstripe -d on --path)",
            sources=(getstripe,),
            parse=parse_getstripe,
            recognise=recognise_getstripe,
            combine=combine_layouts,
            paste_hint="`lfs getstripe -d CHECKPOINT_DIR` (or `lfs getstripe FILE`)",
            targeted=True,
            tags=("storage",),
        ),
        Probe(
            section="lfs_quota",
            title="Lustre user, group and project quotas of the checkpoint path (lfs quota on --path)",
            sources=(quota,),
            parse=parse_quota,  # a pasted lfs quota is recognised as fs_quota, read the same way
            combine=combine_quotas,
            paste_hint='`lfs quota -u "$USER" CHECKPOINT_DIR` and `lfs quota -g GROUP CHECKPOINT_DIR`',
            targeted=True,
            tags=("storage",),
        ),
    )


PROBES = probes_for("PATH")  # what an analysis and the recogniser know of them
