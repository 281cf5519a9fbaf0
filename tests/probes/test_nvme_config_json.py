"""libnvme's /etc/nvme/config.json: what nvme-cli's connect-all connects at boot, and whether the
controllers connected now are among it (issue 23 item 2).

Samples: libnvme's own test inputs (tests/data/nvme_fabrics/SOURCES.md): a 1.x list of hosts with
two TCP ports, the schema's {"hosts": [...]} form with a TLS key, nvme-stas' empty config. The
fake hosts (pyfakefs) carry NVMe-oF controllers as tests/probes/fakehost.py lays them out.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from pyfakefs.fake_filesystem import FakeFilesystem

sys.path[:0] = [str(Path(__file__).resolve().parent)]
from fakehost import FakeHost, analyze_fake_host  # noqa: E402

from gdsdoctor.capture.detect import recognise  # noqa: E402
from gdsdoctor.errors import ParseError  # noqa: E402
from gdsdoctor.model import Artifact, ArtifactStatus  # noqa: E402
from gdsdoctor.probes.nvme_host import parse_config_json, read_config_json  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "nvme_fabrics"
LIST = DATA / "config-json.libnvme-1.x-hosts-list.pcie-with-tcp-config.json"
OBJECT = DATA / "config-json.libnvme-hosts-object.tls-key-2.json"
EMPTY = DATA / "config-json.libnvme-owner-stas-empty.json"
LIST_TEXT, OBJECT_TEXT = LIST.read_text(), OBJECT.read_text()  # read before pyfakefs hides them
ROOT = "/host"
CAUSE = "nvmeof-not-reconnected-at-boot"


def ports(section: dict[str, Any]) -> list[tuple]:
    return [(e["transport"], e["traddr"], e["trsvcid"], e["nqn"]) for e in section["entries"]]


def test_the_list_of_hosts_form() -> None:
    section = parse_config_json(LIST.read_text(), "etc/nvme/config.json")
    assert [h["hostid"] for h in section["hosts"]] == [
        "2cd2c43b-a90a-45c1-a8cd-86b33ab273b5",
        "befdec4c-2234-11b2-a85c-ca77c773af36",
    ]
    assert ports(section)[:2] == [("tcp", "192.168.154.144", "4420", "nqn.io-1"),
                                  ("tcp", "192.168.154.144", "4421", "nqn.io-1")]  # fmt: skip
    assert [e["src"]["line"] for e in section["entries"]] == [11, 18, 36, 43]  # each port's traddr line


def test_the_hosts_object_form_and_no_secret_in_the_facts() -> None:
    text = OBJECT.read_text()
    section = parse_config_json(text, "etc/nvme/config.json")
    assert ports(section) == [("tcp", "192.168.154.148", "4420", "nqn.io-1")]
    assert "NVMeTLSkey" in text and "NVMeTLSkey" not in json.dumps(section)
    assert recognise(text).section == "nvme_config_json"


def test_an_empty_config_has_no_target() -> None:
    assert parse_config_json(EMPTY.read_text(), "c") == {"hosts": [], "entries": []}


def test_text_that_is_no_config_is_refused() -> None:
    with pytest.raises(ParseError):
        parse_config_json('{"reader": "netdev", "interfaces": []}', "c")


def test_the_reader_leaves_the_keys_out_of_the_artifact(fs: FakeFilesystem) -> None:
    host = FakeHost(fs, root=ROOT)
    host.set_file("/etc/nvme/config.json", OBJECT_TEXT)
    data = read_config_json(Path(ROOT)).decode()
    assert "NVMeTLSkey" not in data and "QMFIifx2" not in data and '"tls_key": "(not read)"' in data
    assert ports(parse_config_json(data, "etc/nvme/config.json")) == [
        ("tcp", "192.168.154.148", "4420", "nqn.io-1")
    ]
    host.set_file("/etc/nvme/config.json", "{ not json, DHHC-1:00:secret: }")
    data = read_config_json(Path(ROOT)).decode()
    assert "DHHC" not in data
    with pytest.raises(ParseError):
        parse_config_json(data, "etc/nvme/config.json")


# --- coverage of the controllers connected now --------------------------------------------------


def _report(fs: FakeFilesystem) -> tuple[dict[str, Any], dict[str, Any]]:
    enabled = Artifact("cmd/systemctl-is-enabled-nvmf-autoconnect.txt",
                       source="systemctl is-enabled nvmf-autoconnect.service",
                       status=ArtifactStatus.OK, data=b"enabled\n")  # fmt: skip
    analysis = analyze_fake_host(fs, ROOT, [("nvmf_autoconnect", enabled)])
    findings = {f["id"]: f for f in analysis.report["findings"]}
    outcome = {c["id"]: c["outcome"] for c in analysis.report["causes"]}[CAUSE]
    return analysis.facts["derived"]["fabrics"], {"outcome": outcome, **findings.get(CAUSE, {})}


def _node(fs: FakeFilesystem, config: str | None) -> FakeHost:
    host = FakeHost(fs, root=ROOT)
    host.add_proc_basics()
    host.add_nvmeof_subsystem(1, paths=2, transport="tcp", states=("live", "live"), addresses=[
        "traddr=192.168.154.144,trsvcid=4420,src_addr=192.168.154.10",
        "traddr=192.168.154.145,trsvcid=4420,src_addr=192.168.154.10",
    ])  # fmt: skip
    host.set_file("/etc/nvme/discovery.conf", "# Used for extracting default parameters for discovery\n")
    if config is not None:
        host.set_file("/etc/nvme/config.json", config)
    return host


def test_a_controller_connected_by_hand_beside_the_config(fs: FakeFilesystem) -> None:
    _node(fs, LIST_TEXT)  # config.json names 192.168.154.144 only
    fabrics, cause = _report(fs)
    assert {t["source"] for t in fabrics["boot_targets"]} == {"config.json"}
    assert [c["name"] for c in fabrics["boot_uncovered"]] == ["nvme2"]
    assert cause["outcome"] == "fired"
    assert any("nvme2 (192.168.154.145)" in e["text"] for e in cause["evidence"])


def test_every_controller_in_the_config_stays_quiet(fs: FakeFilesystem) -> None:
    config = json.loads(LIST_TEXT)
    config[0]["subsystems"][0]["ports"][1]["traddr"] = "192.168.154.145"
    _node(fs, json.dumps(config, indent=2))
    fabrics, cause = _report(fs)
    assert fabrics["boot_uncovered"] == [] and cause["outcome"] == "clear"


def test_no_config_and_an_empty_discovery_conf_is_nothing_to_connect(fs: FakeFilesystem) -> None:
    _node(fs, None)
    fabrics, cause = _report(fs)
    assert fabrics["boot_targets"] == [] and fabrics["boot_uncovered"] == []
    assert cause["outcome"] == "fired" and cause["certainty"] == pytest.approx(0.3)
