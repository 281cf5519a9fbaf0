"""Hostile environments and pastes against the secrets and identities a bundle must not carry:
a cuFile variable that names a private key, a discovery.conf holding DH-HMAC-CHAP and TLS keys,
identifiers in spellings redaction did not know, and a redaction map shared by two runs."""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from pathlib import Path

import pytest

from gdsdoctor.capture import redact_io
from gdsdoctor.capture.live import capture_source
from gdsdoctor.capture.redact import Redactor
from gdsdoctor.errors import UserError
from gdsdoctor.probes import PROBES
from gdsdoctor.probes.base import Source
from tests.conftest import THIS_KERNEL, write_tree

KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----\n"
CUFILE = '{\n  // the stock file\n  "properties": {"allow_compat_mode": false, "max_direct_io_size_kb": 16384,},\n}\n'


def _source(artifact: str) -> Source:
    return next(s for p in PROBES for s in p.sources if s.artifact == artifact)


# --- item 1: $CUFILE_ENV_PATH_JSON --------------------------------------------------------------


def test_cufile_env_path_naming_a_private_key_copies_nothing(tmp_path: Path, monkeypatch) -> None:
    key = write_tree(tmp_path, {"home/alice/.ssh/id_rsa": KEY}) / "home/alice/.ssh/id_rsa"
    monkeypatch.setenv("CUFILE_ENV_PATH_JSON", str(key))
    artifact = capture_source(_source("etc/cufile.json.capture"), Path("/"))
    assert b"PRIVATE KEY" not in artifact.data and b"b3BlbnNzaC1rZXkt" not in artifact.data
    wrapper = json.loads(artifact.data)
    assert (wrapper["selected_by"], wrapper["text"]) == ("CUFILE_ENV_PATH_JSON", None)
    assert "not copied" in wrapper["unreadable"]
    # a JSON file that is no cufile.json (docker's credentials) is kept out too
    (tmp_path / "config.json").write_text('{"auths": {"registry": {"auth": "c2VjcmV0"}}}')
    monkeypatch.setenv("CUFILE_ENV_PATH_JSON", str(tmp_path / "config.json"))
    assert b"c2VjcmV0" not in capture_source(_source("etc/cufile.json.capture"), Path("/")).data


def test_cufile_env_path_naming_a_cufile_json_is_read(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "my-cufile.json").write_text(CUFILE)
    monkeypatch.setenv("CUFILE_ENV_PATH_JSON", str(tmp_path / "my-cufile.json"))
    wrapper = json.loads(capture_source(_source("etc/cufile.json.capture"), Path("/")).data)
    assert wrapper["selected_by"] == "CUFILE_ENV_PATH_JSON" and "max_direct_io_size_kb" in wrapper["text"]


@pytest.mark.parametrize("kernel", [{}, THIS_KERNEL], ids=["another-host", "this-kernel"])
def test_cufile_env_path_is_this_process_s_never_another_host_s(
    tmp_path: Path, monkeypatch, kernel: dict
) -> None:
    root = write_tree(
        tmp_path / "root",
        {**kernel, "etc/cufile.json": CUFILE, "opt/alt/cufile.json": CUFILE.replace("16384", "4096")},
    )
    monkeypatch.setenv("CUFILE_ENV_PATH_JSON", "/opt/alt/cufile.json")
    wrapper = json.loads(capture_source(_source("etc/cufile.json.capture"), root).data)
    if kernel:  # a container given this kernel's root: this process's variable applies
        assert (wrapper["path"], "4096" in wrapper["text"]) == ("/opt/alt/cufile.json", True)
    else:
        assert (wrapper["path"], wrapper["selected_by"]) == ("/etc/cufile.json", "default")
        assert "16384" in wrapper["text"]


# --- item 2: discovery.conf keys ----------------------------------------------------------------

DHCHAP = "DHHC-1:00:ia6zGodOr4SEG0Zzaw398rpY0wqipUWj4jWjUh4HWUz6aQ2n:"
TLS = "NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:"
DISCOVERY = (
    "# /etc/nvme/discovery.conf\n"
    f"-t tcp -a 192.168.10.5 -s 4420 --dhchap-secret={DHCHAP} --dhchap-ctrl-secret {DHCHAP[:-2]}x:\n"
    f"--transport=rdma --traddr=10.100.1.50 --trsvcid=4420 -S {DHCHAP[:-3]}yz: -C{DHCHAP[:-3]}ab:\n"
    f"-t tcp -a 192.168.10.6 -s 4420 --tls --tls-key={TLS} --tls_key {TLS[:-2]}q:\n"
    f"-t tcp -a 192.168.10.7 -s 4420 --hostnqn=nqn.2014-08.org.nvmexpress:uuid:1 # key {TLS}\n"
)


@pytest.mark.parametrize("redact", [False, True])
def test_discovery_conf_keys_never_reach_the_bundle(tmp_path: Path, redact: bool) -> None:
    root = write_tree(tmp_path / "root", {"etc/nvme/discovery.conf": DISCOVERY})
    artifact = capture_source(_source("etc/nvme/discovery.conf"), root)
    text = artifact.data.decode()
    if redact:
        redactor = Redactor()
        redactor.learn(text)
        text = redactor.text(text)
    assert "DHHC-1:00:ia6" not in text and "VRLbtnN9" not in text
    for secret in (DHCHAP[12:40], TLS[16:40]):
        assert secret not in text
    # the options stay (the line still reads as a discovery line), only their values go
    assert text.count("(not-read)") >= 7 and "-s 4420" in text and "--trsvcid=4420" in text
    probe = next(p for p in PROBES if p.section == "nvme_discovery_conf")
    entries = probe.parse(artifact.data.decode(), "etc/nvme/discovery.conf")["entries"]
    assert [e["traddr"] for e in entries] == ["192.168.10.5", "10.100.1.50", "192.168.10.6", "192.168.10.7"]


def test_a_pasted_dhchap_key_is_redacted() -> None:
    redactor = Redactor()
    text = f"nvme connect -t tcp -a 192.168.10.5 -n nqn.2014-08.org.nvmexpress.discovery -S {DHCHAP}\n"
    redactor.learn(text)
    assert DHCHAP[12:40] not in redactor.text(text)


# --- item 3: identifiers in spellings the redactor missed ----------------------------------------


def _redacted(*texts: str) -> list[str]:
    redactor = Redactor()
    for text in texts:
        redactor.learn(text)
    return [redactor.text(text) for text in texts]


def test_lsblk_pairs_are_learned() -> None:
    lsblk = 'NAME="nvme0n1" MODEL="SAMSUNG MZQL23T8HCLS" SERIAL="S64HNE0R701234" WWN="eui.36344830527012340025384500000001"\n'
    elsewhere = "udevadm: ID_SERIAL=SAMSUNG_MZQL23T8HCLS-00A07_S64HNE0R701234_1\n"
    out = "".join(_redacted(lsblk, elsewhere))
    assert "S64HNE0R701234" not in out and "36344830527012340025384500000001" not in out
    assert 'MODEL="SAMSUNG MZQL23T8HCLS"' in out  # models are kept on purpose


def test_a_guid_learned_once_is_replaced_bare_too() -> None:
    ibstat = "CA 'mlx5_0'\n\tNode GUID: 0x0c42a10300b1c2d3\n\tSystem image GUID: 0x0c42a10300b1c2d3\n"
    bare = "mlx5_core 0000:3b:00.0: port 1 up 0x0c42a10300b1c2d3\n"
    ib_colon = "node_guid: 1070:fd03:00a1:b2c3\n"
    bare_colon = "found 0x1070fd0300a1b2c3 on port 1\n"
    out = _redacted(ibstat, bare, ib_colon, bare_colon)
    assert "0c42a10300b1c2d3" not in "".join(out) and "1070fd0300a1b2c3" not in "".join(out)
    assert out[0].split("GUID: ")[1][:18] in out[1]  # the same pseudonym
    # an address that is no GUID learned anywhere stays (a kernel address)
    assert (
        _redacted("RIP: 0010:0xffffffffc0a01234abcd\n call at 0xffffffffc0601234\n")[0].count("0xffff") == 2
    )


def test_host_names_in_more_places() -> None:
    texts = [
        "<6>1 2026-03-04T10:11:12.345Z gpunode-rfc5424 kernel - - - nvme nvme0: I/O timeout\n",
        "alice@gpunode-prompt:/home/alice$ ls /mnt/ckpt\n",
        "$ hostname\ngpunode-plain\n",
        "[1652739463.054681] [gpunode-ucx:4071024:0]        ib_iface.c:1035 UCX  ERROR failed\n",
        "[gpunode-mpi:4071024] pml_ucx.c:309  Error: Failed to create UCP worker\n",
        "srun: error: gpunode-slurm: task 3: Killed\n",
        "slurmstepd: error: *** JOB 4242 ON gpunode-step CANCELLED AT 2026-03-04T10:11:12 ***\n",
    ]
    everywhere = (
        "talking to gpunode-rfc5424 gpunode-plain gpunode-ucx gpunode-mpi gpunode-slurm gpunode-step alice\n"
    )
    out = "".join(_redacted(*texts, everywhere))
    for name in ("rfc5424", "prompt", "plain", "ucx", "mpi", "slurm", "step"):
        assert f"gpunode-{name}" not in out, name
    assert "alice" not in out  # the prompt's user, learned, is replaced everywhere


def test_near_misses_stay() -> None:
    texts = [
        "[mlx5_0:1] port active\n",  # not a host prefix
        "$ hostname\n",  # nothing after it
        "1 2 3 4\n",
        "root@gpunode-root:~# nvme list\n",
    ]
    out = _redacted(*texts)
    assert out[0] == texts[0] and out[2] == texts[2] and out[3].startswith("root@host")


# --- item 4: --map ---------------------------------------------------------------------------------


def _map(path: Path, maps: dict) -> Path:
    path.write_text(
        json.dumps({"format": "gdsdoctor.redaction-map", "format_version": 1, "key": "00" * 32, "maps": maps})
    )
    return path


@pytest.mark.parametrize(
    ("maps", "problem"),
    [
        ({"hostname": {"gpunode19": "gpunode19"}}, "maps to itself"),
        ({"hostname": {"gpunode19": "host1", "gpunode20": "host1"}}, "share one pseudonym"),
        ({"serial": {"S4EWNX0R1234": "X00000000001", "S4EWNX0R9999": "X00000000001"}}, "share one pseudonym"),
    ],
)
def test_a_map_that_would_publish_or_merge_names_is_refused(tmp_path: Path, maps: dict, problem: str) -> None:
    paste = write_tree(tmp_path, {"paste.txt": "gpunode19 gpunode20 S4EWNX0R1234\n"}) / "paste.txt"
    with pytest.raises(UserError, match=problem):
        redact_io.redact_files([paste], map_file=_map(tmp_path / "map.json", maps))
    assert not (tmp_path / "paste.txt.redacted").exists()


def test_two_runs_on_one_map_keep_both_runs_names(tmp_path: Path, monkeypatch) -> None:
    first = write_tree(tmp_path / "a", {"one.txt": "hostname: gpunode-first\n"}) / "one.txt"
    second = write_tree(tmp_path / "b", {"two.txt": "hostname: gpunode-second\n"}) / "two.txt"
    map_file = tmp_path / "ticket.map.json"
    # another run holds the map (its directory's lock) while ours starts; it finishes first
    holder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(holder, fcntl.LOCK_EX)
    done: list[list[str]] = []
    ours = threading.Thread(target=lambda: done.append(redact_io.redact_files([second], map_file=map_file)))
    ours.start()
    time.sleep(0.3)
    assert not done and not map_file.exists()  # waiting, not reading the map yet
    redact_io.write_private_map(
        {"format": "gdsdoctor.redaction-map", "format_version": 1, "key": "11" * 32,
         "maps": {"hostname": {"gpunode-first": "host1"}}},
        map_file,
    )  # fmt: skip
    os.close(holder)
    ours.join(10)
    saved = json.loads(map_file.read_text())["maps"]["hostname"]
    assert saved["gpunode-first"] == "host1" and saved["gpunode-second"] not in ("host1", "gpunode-second")
    # and a run that cannot get the map in time refuses in one line
    holder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(holder, fcntl.LOCK_EX)
    monkeypatch.setattr(redact_io, "MAP_LOCK_WAIT_S", 0.2)
    with pytest.raises(UserError, match="another run is using it"):
        redact_io.redact_files([first], map_file=map_file)
    os.close(holder)


def test_a_user_named_once_is_replaced_everywhere() -> None:
    mounts = "nfs01.corp.acme.com:/export/ckpt /home/carol/ckpt nfs4 rw 0 0\n//fs7/share /mnt/cifs cifs rw,user=dave 0 0\n"
    listing = "-rw-r--r-- 1 carol dave 1048576 Mar  4 10:11 step-100.pt\n"
    options = "/dev/nvme0n1 /mnt/ckpt ext4 rw,data=journal 0 0\n"  # a user called data is no option
    out = "".join(_redacted(mounts, listing, options, "/home/data/x\n"))
    assert "carol" not in out and "dave" not in out and "data=journal" in out
