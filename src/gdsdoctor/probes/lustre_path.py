"""What Lustre says about the checkpoint path itself, captured only when ``--path`` is on Lustre.

``lfs getstripe -d PATH`` (the layout new checkpoint files get) is run by a reader, in the
order a careful engineer would: ``findmnt -T PATH`` first (in a subprocess, like the ``target``
probe: a hung mount hangs a killable child), and ``lfs`` only when the path's filesystem is
``lustre`` and ``lfs`` is installed. Elsewhere the section is ``missing`` with the reason ("/mnt/ckpt
is on xfs, not Lustre"). Every command is read-only and runs through the capture's runner
(timeout, process-group kill, one copy at a time); none runs for another machine's root.

Section ``lfs_getstripe``: the ``lfs_layout`` parser's shape (see lfs_layout.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from gdsdoctor.capture.runner import run_command
from gdsdoctor.errors import SourceFailed, Unavailable
from gdsdoctor.model import ArtifactStatus, decode_text
from gdsdoctor.probes.base import Probe, Reader, Source
from gdsdoctor.probes.lfs_layout import parse_getstripe, recognise_getstripe

LFS_TIMEOUT_S = 20.0  # a hung Lustre client blocks lfs: the runner kills it at this
Commands = Callable[[str], Sequence[tuple[str, ...]]]


def filesystem_type(path: str) -> str:
    """The type of the filesystem holding ``path`` (findmnt resolves links and bind mounts)."""
    found = run_command("findmnt", ("findmnt", "-n", "-o", "FSTYPE", "-T", path), 10.0)
    if found.status is not ArtifactStatus.OK:
        raise Unavailable(f"findmnt -T {path}: {found.detail or found.status}")
    return decode_text(found.data).strip().split("\n")[0].strip()


def lustre_reader(path: str, commands: Commands) -> Reader:
    """A reader running ``commands(path)`` (lfs argv) when ``path`` is on Lustre: their outputs
    one after the other; missing (with why) off Lustre or without lfs."""

    def read(host_root: Path) -> bytes:
        del host_root  # the commands ask the kernel about this mount namespace (this_process)
        fstype = filesystem_type(path)
        if fstype != "lustre":
            raise Unavailable(f"{path} is on {fstype or 'an unknown filesystem'}, not Lustre: lfs not run")
        outputs: list[bytes] = []
        for argv in commands(path):
            result = run_command("lfs", argv, LFS_TIMEOUT_S)
            if result.status is ArtifactStatus.MISSING:
                raise Unavailable(result.detail)
            if result.status is ArtifactStatus.DENIED:
                raise PermissionError(f"{' '.join(argv)}: {result.detail}")
            if result.status is not ArtifactStatus.OK and not result.data.strip():
                raise SourceFailed(f"{' '.join(argv)}: {result.detail or result.status}")
            outputs.append(result.data)
        return b"".join(outputs)

    return read


def _getstripe(path: str) -> Sequence[tuple[str, ...]]:
    return [("lfs", "getstripe", "-d", path)]


def probes_for(path: str) -> tuple[Probe, ...]:
    """The Lustre probes of one checkpoint path (argv, never a shell)."""
    getstripe = Source(
        "cmd/lfs-getstripe-d.txt",
        reader=lustre_reader(path, _getstripe),
        how=f"lfs getstripe -d {path}",
        timeout=LFS_TIMEOUT_S,
        this_process=True,
        runs_how=True,
    )
    return (
        Probe(
            section="lfs_getstripe",
            title="Lustre layout new checkpoint files get (lfs getstripe -d on --path)",
            sources=(getstripe,),
            parse=parse_getstripe,
            recognise=recognise_getstripe,
            paste_hint="`lfs getstripe -d CHECKPOINT_DIR` (or `lfs getstripe FILE`)",
            targeted=True,
            tags=("storage",),
        ),
    )


PROBES = probes_for("PATH")  # what an analysis and the recogniser know of them
