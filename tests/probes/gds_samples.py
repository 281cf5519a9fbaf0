"""Sample files shared by the GDS probe tests (gdscheck, cufile, nvidia_fs): where they are and what kind."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data"


def read(relative: str) -> str:
    return (DATA / relative).read_text(encoding="utf-8")


def files(pattern: str) -> list[Path]:
    return sorted(p for p in DATA.glob(pattern) if p.name != "SOURCES.md")


# kind -> the sample files of that kind; every recogniser must claim its own and no other kind.
KINDS: dict[str, list[Path]] = {
    "gdscheck": files("gdscheck/*.txt"),
    "cufile_log": files("cufile/*cufile.log") + files("cufile/kvikio-011--output.txt"),
    "cufile_json": files("cufile/*cufile.json*"),
    "gds_stats": files("cufile/gds_stats-*"),
    "nvidia_fs_stats": files("nvidia_fs/*stats*"),
    "nvidia_fs_version": files("nvidia_fs/proc-nvidia-fs-version*"),
    "nvidia_fs_modules": files("nvidia_fs/proc-nvidia-fs-modules*"),
    "nvidia_driver": files("nvidia_fs/proc-driver-nvidia-version*"),
    "modinfo_nvidia": files("nvidia_fs/modinfo-nvidia.*"),
    "modinfo_nvme": files("nvidia_fs/modinfo-nvme.*"),
    "dkms_status": files("nvidia_fs/dkms-status*"),
    "nvidia_fs_build": files("nvidia_fs/*make.log") + files("nvidia_fs/*build.log"),
    "other": files("gds_negative/*") + files("nvidia_fs/*dmesg.txt"),
}


def others(kind: str) -> list[Path]:
    return [path for name, paths in KINDS.items() if name != kind for path in paths]
