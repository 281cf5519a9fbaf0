"""`redact BUNDLE` (gdsdoctor bundles and sos reports), `--map`, `--hostname`, and the
redaction promises of SECURITY.md planted one identifier kind at a time (issue 22 #5, issue 26
#7-#9): host names wherever a text names its host, MACs in any spelling (one pseudonym each),
`inet6 addr:` lines, and options that look like host names left alone."""

from __future__ import annotations

import json
import os
import re
import shutil
import tarfile
from pathlib import Path

import pytest

from gdsdoctor import cli
from gdsdoctor.capture import bundles
from gdsdoctor.capture.bundle import write_bundle
from gdsdoctor.capture.redact import Redactor
from gdsdoctor.capture.redact_io import redact_bundle, redact_files
from gdsdoctor.pipeline import analyze_paths

REPO = Path(__file__).resolve().parents[1]
HOTSOS = REPO / "tests" / "data" / "sos" / "hotsos-openstack"
FIXTURE = REPO / "fixtures" / "h200-node-without-nvidia-fs" / "bundle"

# Each identifier kind, planted where real outputs put it; none may survive redaction.
PLANTED = {
    "uname node name": ("Linux gpunode19 6.8.0-45-generic #45-Ubuntu SMP x86_64 GNU/Linux\n", "gpunode19"),
    "systemd Hostname set to": ("[    1.2] systemd[1]: Hostname set to <trainer07>.\n", "trainer07"),
    "shell prompt": ("root@ckptbox03:~# nvme list\n", "ckptbox03"),
    "bracket prompt": ("[alice@ckptbox04 run]$ dmesg -T\n", "ckptbox04"),
    "syslog host field": (
        "Dec  1 14:25:03 storage11 kernel: nvme nvme0: I/O 12 QID 3 timeout\n",
        "storage11",
    ),
    "rfc3339 syslog host": ("2026-12-01T14:25:03.1+00:00 storage12 kernel: ok\n", "storage12"),
    "NCCL line host": ("gpunode31:1234:1299 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE\n", "gpunode31"),
    "FQDN": ("mounted from fileserver.cluster.acme-corp.com\n", "acme-corp"),
    "MAC in enx name": ("3: enx0c42a1b2c3d4: <BROADCAST,MULTICAST> mtu 1500\n", "0c42a1b2c3d4"),
    "inet6 addr: (ifconfig)": (
        "          inet6 addr: 2001:4860:10:22::7/64 Scope:Global\n",
        "2001:4860:10:22::7",
    ),
    "inet6 addr:glued": ("          inet6 addr:2001:4860:10:22::8/64 Scope:Global\n", "2001:4860:10:22::8"),
    "inet addr:": ("          inet addr:10.20.30.40  Bcast:10.20.30.255\n", "10.20.30.40"),
}


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_each_identifier_kind_is_redacted_in_a_paste(tmp_path: Path, kind: str) -> None:
    text, secret = PLANTED[kind]
    paste = tmp_path / "paste.txt"
    paste.write_text(text)
    redact_files([paste])
    out = (tmp_path / "paste.txt.redacted").read_text()
    assert secret.lower() not in out.lower(), (kind, out)


# A short host name (a node called `vm`, `n1`) is a word elsewhere, so it is not replaced
# everywhere; where the text says a host is named, it is (a real sos report of a VM named `vm`
# kept `Linux vm 6.18…` in its uname -a).
SHORT_NAMED = {
    "uname -a": ("Linux vm 6.18.44-fc-v1045 #1 SMP PREEMPT_DYNAMIC @0 x86_64 GNU/Linux\n", "vm"),
    "sos uname file": ("uname: Linux n1 6.8.0-45-generic #45-Ubuntu SMP x86_64\n", "n1"),
    "systemd Hostname set to": ("[    1.2] systemd[1]: Hostname set to <n2>.\n", "n2"),
    "shell prompt": ("root@vm:~# nvme list\n", "vm"),
    "syslog host field": ("Dec  1 14:25:03 vm kernel: nvme nvme0: I/O 12 QID 3 timeout\n", "vm"),
}
# ...and the same short word where no host is named stays as it is.
SHORT_NOT_NAMED = [
    "vm.dirty_ratio = 20\n",
    "Linux version 6.18.44 (vm@build) (gcc 12.2.0) #1 SMP\n",
    "[    0.000000] Hypervisor detected: KVM; vm features 0x1\n",
    "root@localhost:~# uname -a\n",
]


@pytest.mark.parametrize("kind", sorted(SHORT_NAMED))
def test_a_short_host_name_is_redacted_where_a_host_is_named(tmp_path: Path, kind: str) -> None:
    text, secret = SHORT_NAMED[kind]
    paste = tmp_path / "paste.txt"
    paste.write_text(text + "".join(SHORT_NOT_NAMED))
    redact_files([paste])
    out = (tmp_path / "paste.txt.redacted").read_text().splitlines(keepends=True)
    assert not re.search(rf"\b{secret}\b", out[0]) and re.search(r"\bhost\d+\b", out[0]), (kind, out[0])
    assert out[1:] == SHORT_NOT_NAMED


def test_one_mac_is_one_pseudonym_whatever_its_spelling() -> None:
    spellings = [
        "0c:42:a1:b2:c3:d4",
        "0C:42:A1:B2:C3:D4",
        "0c-42-a1-b2-c3-d4",
        "0c42.a1b2.c3d4",
        "enx0c42a1b2c3d4",
    ]
    redactor = Redactor()
    digits = {re.sub(r"[^0-9a-f]", "", redactor.text(s).lower().removeprefix("enx")) for s in spellings}
    assert len(digits) == 1 and "0c42a1b2c3d4" not in digits
    assert redactor.text("0C:42:A1:B2:C3:D4").isupper() or ":" in redactor.text("0C:42:A1:B2:C3:D4")


def test_an_option_named_like_a_host_keeps_the_diagnosis() -> None:
    redactor = Redactor()
    redactor.learn_hostname("data")  # a host really called `data` (or a paste claiming so)
    line = "/dev/nvme0n1p1 /mnt/ckpt ext4 rw,relatime,data=journal 0 0\n"
    assert redactor.text(line) == line
    assert redactor.text("ping data\n") != "ping data\n"


def test_this_hosts_name_and_hostname_option_are_always_redacted(tmp_path: Path) -> None:
    paste = tmp_path / "notes.txt"
    name = os.uname().nodename
    paste.write_text(f"ran on {name} and on farnode77\n")
    redact_files([paste], hostnames=["farnode77"])
    out = (tmp_path / "notes.txt.redacted").read_text()
    assert "farnode77" not in out
    if len(name) >= 4:
        assert name not in out


def test_redact_a_gdsdoctor_bundle_beside_it_with_equal_findings(tmp_path: Path) -> None:
    source = tmp_path / "node"
    shutil.copytree(FIXTURE, source)
    lines = redact_bundle(source)
    copy = tmp_path / "node.redacted"
    assert copy.is_dir() and bundles.kind(copy) == "bundle"
    assert (tmp_path / "node.redacted.redaction-map.json").stat().st_mode & 0o777 == 0o600
    assert _ids(analyze_paths([copy])) == _ids(analyze_paths([source]))
    assert json.loads((copy / "manifest.json").read_text())["redacted"] is True
    assert any("node.redacted" in line for line in lines)
    archive = tmp_path / "node.tar.gz"
    write_bundle(analyze_paths([source]).capture, archive)
    out = tmp_path / "out" / "deeper"  # --output-dir is created when missing
    redact_bundle(archive, out)
    assert _ids(analyze_paths([out / "node.redacted.tar.gz"])) == _ids(analyze_paths([archive]))


def test_redact_a_sos_report_reads_back_as_a_sos_report(tmp_path: Path) -> None:
    archive = tmp_path / "sosreport-compute4-2022-02-10-abcdef.tar.xz"
    with tarfile.open(archive, "w:xz") as tar:
        tar.add(HOTSOS, arcname="sosreport-compute4-2022-02-10-abcdef")
    redact_bundle(archive, tmp_path / "clean")
    [copy] = (tmp_path / "clean").glob("*.tar.gz")
    assert "compute4" not in copy.name and copy.name.endswith(".redacted.tar.gz")
    assert bundles.kind(copy) == "sos"
    before, after = analyze_paths([archive]), analyze_paths([copy])
    assert _ids(after) == _ids(before)
    assert after.report["host"]["hostname"] != "compute4"
    assert after.report["host"]["created"] == before.report["host"]["created"]
    with tarfile.open(copy) as tar:
        everything = b"".join(tar.extractfile(m).read() for m in tar if m.isfile())  # type: ignore[union-attr]
    assert b"compute4" not in everything


def test_map_keeps_pseudonyms_across_files_and_runs(tmp_path: Path) -> None:
    ticket_map = tmp_path / "ticket-4711.map.json"
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("Dec  1 14:25:03 gpunode19 kernel: link 0c:42:a1:b2:c3:d4 at 10.20.30.40\n")
    second.write_text("later: gpunode19 said 0C-42-A1-B2-C3-D4 from 10.20.30.40\n")
    redact_files([first], map_file=ticket_map)
    redact_files([second], tmp_path / "run2", map_file=ticket_map)  # another run, another file
    one = (tmp_path / "a.txt.redacted").read_text()
    two = (tmp_path / "run2" / "b.txt.redacted").read_text()
    host = re.search(r"14:25:03 (\S+) kernel", one)[1]  # type: ignore[index]
    assert host in two and "gpunode19" not in one + two
    address = re.search(r"at (\S+)", one)[1]  # type: ignore[index]
    assert address in two
    assert re.search(r"link (\S+) at", one)[1].replace(":", "-").upper() in two  # type: ignore[index]
    assert ticket_map.stat().st_mode & 0o777 == 0o600
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    assert cli.run(["redact", str(first), "--map", str(bad), "--output-dir", str(tmp_path / "x")]) == 3


def test_redact_cli_takes_a_bundle_and_never_writes_in_place(tmp_path: Path) -> None:
    source = tmp_path / "node"
    shutil.copytree(FIXTURE, source)
    before = sorted((p.relative_to(source), p.read_bytes()) for p in source.rglob("*") if p.is_file())
    assert cli.run(["redact", str(source), "--hostname", "h200node"]) == 0
    after = sorted((p.relative_to(source), p.read_bytes()) for p in source.rglob("*") if p.is_file())
    assert before == after
    assert (tmp_path / "node.redacted").is_dir()
    assert cli.run(["redact", str(source)]) == 3  # the copy is there: refused, not overwritten


def test_collect_without_output_names_the_bundle_after_host_time_and_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.run(["collect", "--host-root", str(FIXTURE), "--case-id", "CASE-42", "--deadline", "20"]) == 0
    [bundle] = tmp_path.glob("*.tar.gz")
    host = re.sub(r"[^A-Za-z0-9.-]", "_", os.uname().nodename)
    assert re.fullmatch(rf"gdsdoctor-{re.escape(host)}-\d{{8}}-\d{{6}}-CASE-42\.tar\.gz", bundle.name)
    with tarfile.open(bundle) as tar:
        manifest = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
    assert manifest["options"]["case_id"] == "CASE-42"


def _ids(analysis) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(f["id"] for f in analysis.report["findings"])
