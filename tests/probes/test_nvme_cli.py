from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from blockfuzz import DATA, check_damaged, check_garbage, read

from gdsdoctor.errors import ParseError
from gdsdoctor.probes import nvme_cli

SAMPLES = sorted(p.name for p in (DATA / "nvme_cli").iterdir() if p.suffix != ".md")
KINDS = {  # file name part -> (parser, recogniser)
    "nvme-list-json": (nvme_cli.parse_list, nvme_cli.recognise_list),
    "nvme-list-text": (nvme_cli.parse_list, nvme_cli.recognise_list),
    "nvme-list-subsys": (nvme_cli.parse_subsys, nvme_cli.recognise_subsys),
    "nvme-show-topology": (nvme_cli.parse_subsys, nvme_cli.recognise_subsys),
    "nvme-smart-log": (nvme_cli.parse_smart, nvme_cli.recognise_smart),
    "smartctl-a-nvme": (nvme_cli.parse_smart, nvme_cli.recognise_smart),
    "nvme-id-ctrl": (nvme_cli.parse_id_ctrl, nvme_cli.recognise_id_ctrl),
    "nvme-discover": (nvme_cli.parse_discover, nvme_cli.recognise_discover),
}
NOT_NVME_CLI = (
    "lsblk-J.util-linux-2.31-ubuntu18.04-aws-nvme.json",
    "lsblk-2.38.1-sysroot-simple-nvme-P-b.txt",
)
BROKEN = "nvme-smart-log-json.v1.x-ocp-autoval-edited.json"  # fixture typo "critical_warrning"


def kind(name: str) -> str:
    return next(
        prefix for prefix in KINDS if name.startswith(prefix) and not name.startswith(prefix + "-subsys")
    )


@pytest.mark.parametrize("name", [n for n in SAMPLES if n != BROKEN])
def test_each_sample_is_recognised_only_by_its_own_kind(name: str) -> None:
    text = read("nvme_cli", name)
    mine = kind(name)
    for other, (parse, recognise) in KINDS.items():
        if KINDS[other] == KINDS[mine]:
            assert recognise(text), other
            assert parse(text, name)
        else:
            assert not recognise(text), other


def test_recognisers_reject_other_sources() -> None:
    for name in NOT_NVME_CLI:
        text = read("lsblk", name)
        assert not any(recognise(text) for _, recognise in KINDS.values())
    assert not any(recognise("/dev/sda1 / ext4 rw 0 0\n") for _, recognise in KINDS.values())


def test_fixture_typo_is_rejected() -> None:
    text = read("nvme_cli", BROKEN)
    assert not nvme_cli.recognise_smart(text)
    with pytest.raises(ParseError, match="critical_warning"):
        nvme_cli.parse_smart(text, "x")


# ----- nvme list


def test_list_v1_simple() -> None:
    section = nvme_cli.parse_list(
        read("nvme_cli", "nvme-list-json.v1.x-labelled-v2.3.netdata-normalized.json"), "x"
    )
    assert section["layout"] == "simple"
    assert [ns["device"] for ns in section["namespaces"]] == ["nvme0n1", "nvme1n1"]
    first = section["namespaces"][0]
    assert (
        first["nsid"] == 1 and first["physical_size_bytes"] == 4000787030016 and first["sector_size"] == 512
    )
    assert first["serial"] == "XXX00YYY" and first["src"]["line"] == 5


def test_list_v2_2_negative_sizes_are_unknown() -> None:
    section = nvme_cli.parse_list(read("nvme_cli", "nvme-list-json.v2.2-int32-overflow-bug.json"), "x")
    namespace = section["namespaces"][0]
    assert namespace["used_bytes"] is None and namespace["physical_size_bytes"] is None
    assert namespace["maximum_lba"] is None and namespace["model"] == "INTEL SSDPE2KX080T8"


def test_list_v2_11_verbose_by_default() -> None:
    section = nvme_cli.parse_list(read("nvme_cli", "nvme-list-json.v2.11.netdata-normalized.json"), "x")
    assert section["layout"] == "verbose"
    assert [c["name"] for c in section["controllers"]] == ["nvme0", "nvme1", "nvme2"]
    nvme2 = section["controllers"][2]
    assert nvme2["pci_bdf"] == "0000:61:00.0" and nvme2["transport"] == "pcie" and nvme2["cntlid"] == 1
    assert nvme2["subsystem"] == "nvme-subsys2" and nvme2["firmware"] == "SU6SM001"
    namespace = section["namespaces"][2]
    # verbose tree: NameSpace is the device NAME, the NSID is separate (nvme-cli issue #225)
    assert namespace["device"] == "nvme2n1" and namespace["nsid"] == 1 and namespace["controller"] == "nvme2"
    assert namespace["generic_path"] == "ng2n1" and namespace["src"]["text"].strip().startswith('"NameSpace"')


# ----- list-subsys / show-topology


def test_subsys_json_v2_array_cut_short() -> None:
    text = read("nvme_cli", "nvme-list-subsys-json.v2.11-pcie.partial.json.txt")
    section = nvme_cli.parse_subsys(text, "x")
    (subsystem,) = section["subsystems"]
    assert subsystem["name"] == "nvme-subsys2" and subsystem["host_nqn"].endswith("44fe5be80db2")
    (path,) = section["paths"]
    assert path["name"] == "nvme2" and path["state"] == "live" and path["pci_bdf"] == "0000:61:00.0"
    assert path["src"]["line"] == 11 and "nvme2" in path["src"]["text"]


def test_subsys_json_v1_object_and_old_separate_paths_element() -> None:
    v1 = {"Subsystems": [{"Name": "nvme-subsys0", "NQN": "nqn.a"},
                         {"Paths": [{"Name": "nvme0", "Transport": "rdma",
                                     "Address": "traddr=192.168.1.1 trsvcid=4420", "State": "live"}]},
                         {"Name": "nvme-subsys1", "NQN": "nqn.b", "Paths": [
                             {"Name": "nvme1", "Transport": "tcp", "State": "connecting",
                              "Address": "traddr=10.0.0.2,trsvcid=4420,src_addr=10.0.0.9",
                              "ANAState": "optimized"}]}]}  # fmt: skip
    section = nvme_cli.parse_subsys(json.dumps(v1, indent=2), "x")
    assert [s["name"] for s in section["subsystems"]] == ["nvme-subsys0", "nvme-subsys1"]
    first, second = section["paths"]
    assert (
        first["subsystem"] == "nvme-subsys0"
        and first["traddr"] == "192.168.1.1"
        and first["trsvcid"] == "4420"
    )
    assert (
        second["state"] == "connecting"
        and second["src_addr"] == "10.0.0.9"
        and second["ana_state"] == "optimized"
    )
    assert section["subsystems"][1]["live_path_count"] == 0


def test_subsys_json_v2_with_iopolicy_and_namespace_paths() -> None:
    path = {"Name": "nvme3", "Transport": "tcp", "ANAState": "inaccessible",
            "Address": "traddr=1.2.3.4,trsvcid=4420", "State": "live"}  # fmt: skip
    subsystem = {"Name": "nvme-subsys3", "NQN": "nqn.t", "IOPolicy": "round-robin",
                 "Namespaces": [{"NSID": 7, "Paths": [path]}]}  # fmt: skip
    v2 = [{"HostNQN": "nqn.host", "Subsystems": [subsystem]}]
    section = nvme_cli.parse_subsys(json.dumps(v2), "x")
    assert section["subsystems"][0]["iopolicy"] == "round-robin"
    assert section["paths"][0]["nsid"] == 7 and section["paths"][0]["ana_state"] == "inaccessible"


def test_subsys_text_v1_and_v2_rc_connecting() -> None:
    section = nvme_cli.parse_subsys(
        read("nvme_cli", "nvme-list-subsys-text.v1.x-vs-v2.0rc-connecting-path.txt"), "x"
    )
    rc_null, rc_live, v1_live, v1_connecting = section["paths"]
    assert rc_null["name"] is None and rc_null["state"] is None and rc_null["trsvcid"] == "4420"
    assert rc_live["name"] == "nvme8" and rc_live["state"] == "live" and rc_live["traddr"] == "10.161.8.24"
    # 1.x: address parts separated by a space
    assert v1_connecting["name"] == "nvme9" and v1_connecting["state"] == "connecting"
    assert v1_connecting["traddr"] == "10.161.8.24" and v1_connecting["trsvcid"] == "4420"
    assert v1_connecting["src"]["line"] == 13 and v1_live["ana_state"] is None


def test_subsys_text_fc_with_ana() -> None:
    section = nvme_cli.parse_subsys(read("nvme_cli", "nvme-list-subsys-text.v1.x-vs-v2.0-fc-ana.txt"), "x")
    v1, _, v2, _ = section["paths"]
    assert v1["transport"] == "fc" and v1["host_traddr"] == "nn-0x200000109b579d5e:pn-0x100000109b579d5e"
    assert v1["state"] == "live" and v1["ana_state"] is None
    assert v2["name"] == "nvme28" and v2["ana_state"] == "optimized"
    assert v2["traddr"] == "nn-0x204800a098fd4ca6:pn-0x204a00a098fd4ca6"


def test_subsys_text_powerstore_tcp_ana() -> None:
    section = nvme_cli.parse_subsys(
        read("nvme_cli", "nvme-list-subsys-text.v2.0-tcp-ana-powerstore.txt"), "x"
    )
    assert [(p["name"], p["traddr"], p["state"], p["ana_state"]) for p in section["paths"]] == [
        ("nvme1", "10.162.198.42", "live", "non-optimized"),
        ("nvme2", "10.162.198.45", "live", "optimized"),
    ]
    assert section["subsystems"][0]["nqn"] == "nqn.1988-11.com.dell:powerstore:00:f03028e73ef7D032D81E"
    assert section["subsystems"][0]["path_count"] == 2


def test_subsys_text_with_hostnqn_and_iopolicy_lines() -> None:
    text = (
        "nvme-subsys1 - NQN=nqn.2014-08.org.nvmexpress:target\n"
        "               hostnqn=nqn.2014-08.org.nvmexpress:uuid:host\n"
        "               iopolicy=round-robin\n"
        "\\\n"
        " +- nvme1 rdma traddr=192.168.10.1,trsvcid=4420,host_traddr=192.168.10.7 resetting\n"
    )
    section = nvme_cli.parse_subsys(text, "x")
    assert section["subsystems"][0]["iopolicy"] == "round-robin"
    assert section["subsystems"][0]["host_nqn"] == "nqn.2014-08.org.nvmexpress:uuid:host"
    (path,) = section["paths"]
    assert (
        path["state"] == "resetting" and path["host_traddr"] == "192.168.10.7" and path["transport"] == "rdma"
    )
    assert section["subsystems"][0]["live_path_count"] == 0


def test_list_with_no_devices() -> None:
    assert nvme_cli.parse_list('{\n  "Devices" : [\n  ]\n}', "x")["namespaces"] == []


def test_show_topology_per_namespace_ana() -> None:
    section = nvme_cli.parse_subsys(
        read("nvme_cli", "nvme-show-topology-text.v2.2-tcp-multipath-ana.txt"), "x"
    )
    optimized = {(p["nsid"], p["name"]) for p in section["paths"] if p["ana_state"] == "optimized"}
    assert optimized == {(4, "nvme5"), (3, "nvme4"), (2, "nvme2"), (1, "nvme3")}
    assert section["subsystems"][0]["path_count"] == 4
    toshiba = section["paths"][-1]
    assert (
        toshiba["subsystem"] == "nvme-subsys0"
        and toshiba["pci_bdf"] == "0000:3d:00.0"
        and toshiba["nsid"] == 1
    )


# ----- smart-log


def test_smart_v1_int_warning_kelvin() -> None:
    (device,) = nvme_cli.parse_smart(read("nvme_cli", "nvme-smart-log-json.v1.4-1.9.json"), "x")["devices"]
    assert device["temperature_c"] == 28 and device["critical_warning"] == 0
    assert device["warnings"]["available_spare"] is False and device["percent_used"] == 15
    assert (
        device["num_err_log_entries"] == 17
        and device["media_errors"] == 0
        and device["spare_thresh_pct"] == 5
    )


def test_smart_v2_11_object_warning() -> None:
    (device,) = nvme_cli.parse_smart(
        read("nvme_cli", "nvme-smart-log-json.v2.11.netdata-normalized.json"), "x"
    )["devices"]
    assert device["temperature_c"] == 51 and device["critical_warning"] == 0 and device["percent_used"] == 30
    assert set(device["warnings"].values()) == {False}


def test_smart_reader_wrapper_with_bits_errors_and_capitalised_keys() -> None:
    wrapper = {
        "nvme0": json.dumps(
            {"critical_warning": 10, "temperature": 330, "avail_spare": 3, "spare_thresh": 10}
        ),
        "nvme1": "error: timed out after 10s",
        "nvme2": json.dumps({"critical_warning": {"Value": 1, "available_spare": 1}, "Temperature": 300}),
    }
    devices = nvme_cli.parse_smart(json.dumps(wrapper, indent=1), "cmd/nvme-smart-log.json")["devices"]
    nvme0, nvme1, nvme2 = devices
    assert nvme0["device"] == "nvme0" and nvme0["temperature_c"] == 57
    set_flags = {flag for flag, on in nvme0["warnings"].items() if on}
    assert set_flags == {"temperature", "read_only"} and len(nvme0["warnings"]) == 6
    assert nvme1["error"].startswith("error: timed out") and nvme1["temperature_c"] is None
    assert nvme2["critical_warning"] == 1 and nvme2["warnings"]["available_spare"] is True
    assert nvme2["temperature_c"] == 27 and nvme2["src"]["line"] == 4
    assert nvme_cli.parse_smart("{}", "x") == {"devices": []}


# ----- id-ctrl, discover


def test_id_ctrl_padded_fields() -> None:
    (ctrl,) = nvme_cli.parse_id_ctrl(read("nvme_cli", "nvme-id-ctrl-json.v1.x-samsung-pm983.json"), "x")[
        "controllers"
    ]
    assert ctrl["serial"] == "S43ANA0M405593" and ctrl["model"] == "Unknown MZ1LB960HAJQ-000FB"
    assert ctrl["firmware"] == "EDA76F2Q" and ctrl["version"] == "1.2.0" and ctrl["vid"] == 5197
    assert ctrl["multi_controller"] is False and ctrl["cntlid"] == 4


def test_discover_json_and_text() -> None:
    section = nvme_cli.parse_discover(read("nvme_cli", "nvme-discover-json.v1.14-tcp-with-device.json"), "x")
    assert section["device"] == "nvme1" and section["genctr"] == 4
    assert [(r["subnqn"], r["trsvcid"], r["trtype"]) for r in section["records"]] == [
        ("storage1", "8009", "tcp"),
        ("storage2", "8009", "tcp"),
    ]
    text = nvme_cli.parse_discover(
        read("nvme_cli", "nvme-discover-text.v1.x-rdma-spdk-target.partial.txt"), "x"
    )
    assert text["genctr"] == 25 and len(text["records"]) == 2
    assert text["records"][1]["subnqn"] == "nqn.2018-11.io.spdk:nqn2" and text["records"][1]["portid"] == 1
    assert text["records"][0]["traddr"] == "10.5.0.202" and text["records"][1]["src"]["line"] == 15


# ----- robustness, capture helpers


def test_garbage_and_damaged_samples() -> None:
    for name in SAMPLES:
        parse, _ = KINDS[kind(name)]
        check_damaged(parse, read("nvme_cli", name))
    for parse, _ in KINDS.values():
        check_garbage(parse)


def test_run_nvme_times_out_and_kills(tmp_path: Path) -> None:
    """Through the runner, as every command: killed at its timeout, errors named, stdout kept."""
    assert nvme_cli.run_nvme(["sleep", "30"], timeout=0.5) == "error: killed after 0.5s"
    assert nvme_cli.run_nvme(["/nonexistent/nvme"]) == "error: /nonexistent/nvme: command not found"
    assert nvme_cli.run_nvme(["sh", "-c", "echo oops >&2; exit 3"]) == "error: oops"
    assert nvme_cli.run_nvme(["sh", "-c", "echo partial; exit 3"]) == "partial\n"  # what it printed is kept


def test_per_controller_reader_runs_nothing_for_a_dump(tmp_path: Path) -> None:
    (tmp_path / "sys/class/nvme/nvme0").mkdir(parents=True)
    assert nvme_cli.controllers_under(tmp_path) == ["nvme0"]
    assert nvme_cli.per_controller_reader("smart-log")(tmp_path) == b""


@pytest.mark.skipif(shutil.which("nvme") is None, reason="nvme-cli not installed")
def test_real_nvme_list() -> None:
    run = subprocess.run(["nvme", "list", "-o", "json"], capture_output=True, text=True, timeout=30)
    if not run.stdout.strip().startswith("{"):
        pytest.skip(f"nvme list printed no JSON here (rc {run.returncode}: {run.stderr.strip()[:80]})")
    section = nvme_cli.parse_list(run.stdout, "cmd/nvme-list.json")
    assert section["layout"] in ("simple", "verbose")


# ---- nvme smart-log as printed ---------------------------------------------------------------------

SMART_TEXT = "nvme-smart-log-text.v1.14-samsung-pm981.opensource-com.txt"


def test_smart_log_text_reads_as_its_json_would() -> None:
    text = (DATA / "nvme_cli" / SMART_TEXT).read_text()
    assert nvme_cli.recognise_smart(text)
    (log,) = nvme_cli.parse_smart(text, SMART_TEXT)["devices"]
    assert log["device"] == "nvme0"  # read from the namespace nvme0n1: its controller's log
    assert (
        log["temperature_c"],
        log["critical_warning"],
        log["avail_spare_pct"],
        log["spare_thresh_pct"],
    ) == (
        21,
        0,
        100,
        10,
    )
    assert (log["percent_used"], log["media_errors"], log["num_err_log_entries"]) == (2, 0, 1243)
    assert (log["power_on_hours"], log["unsafe_shutdowns"], log["data_written_bytes"]) == (
        1311,
        129,
        10_602_948 * 512_000,
    )
    assert log["warnings"]["available_spare"] is False and log["src"]["line"] == 2


def test_smart_log_text_of_a_failing_drive_and_other_layouts() -> None:
    """nvme-cli 2.x layouts (°C with Kelvin, a size after counters, hex warnings), two logs."""
    text = (
        "Smart Log for NVME device:nvme1 namespace-id:ffffffff\n"
        "critical_warning                        : 0x5\n"
        "temperature                             : 31 °C (304 K)\n"
        "available_spare                         : 4%\n"
        "available_spare_threshold               : 10%\n"
        "Data Units Written                      : 238585446 (122.16 TB)\n"
        "media_errors                            : 17\n"
        "Smart Log for NVME device:nvme2 namespace-id:ffffffff\n"
        "temperature                             : 48 C (321 Kelvin)\n"
        "critical_warning                        : 0\n"
    )
    failing, healthy = nvme_cli.parse_smart(text, "p")["devices"]
    assert (failing["device"], failing["critical_warning"], failing["temperature_c"]) == ("nvme1", 5, 31)
    assert failing["warnings"]["available_spare"] and failing["warnings"]["reliability_degraded"]
    assert failing["media_errors"] == 17 and failing["data_written_bytes"] == 238_585_446 * 512_000
    assert (healthy["device"], healthy["temperature_c"], healthy["critical_warning"]) == ("nvme2", 48, 0)


def test_a_vendors_additional_smart_log_is_not_the_smart_log() -> None:
    text = "Additional Smart Log for NVME device:nvme1 namespace-id:ffffffff\nkey : normalized raw\n"
    assert not nvme_cli.recognise_smart(text)


def test_smartctl_nvme_health_section_reads_as_the_smart_log() -> None:
    name = "smartctl-a-nvme.v7.4-apple-ssd.smartdisk.txt"
    text = (DATA / "nvme_cli" / name).read_text()
    assert nvme_cli.recognise_smart(text)
    (log,) = nvme_cli.parse_smart(text, name)["devices"]
    assert log["device"] is None  # smartctl's output does not name it; never guessed
    assert (
        log["temperature_c"],
        log["critical_warning"],
        log["media_errors"],
        log["num_err_log_entries"],
    ) == (
        32,
        0,
        0,
        0,
    )
    assert (log["avail_spare_pct"], log["spare_thresh_pct"], log["power_on_hours"]) == (100, 99, 870)
    assert log["data_read_bytes"] == 107_103_479 * 512_000
    assert log["src"]["text"] == "SMART/Health Information (NVMe Log 0x02)"
    named = nvme_cli.parse_smart("# smartctl -a /dev/nvme3n1\n" + text, name)["devices"][0]
    assert named["device"] == "nvme3"  # the pasted command line names it


def test_id_ctrl_text_reads_as_its_json_would() -> None:
    name = "nvme-id-ctrl-text.v1.14-samsung-pm981.opensource-com.txt"
    text = (DATA / "nvme_cli" / name).read_text()
    assert nvme_cli.recognise_id_ctrl(text)
    (controller,) = nvme_cli.parse_id_ctrl(text, name)["controllers"]
    assert (controller["device"], controller["model"], controller["serial"], controller["firmware"]) == (
        "nvme0",  # from the pasted command line, a namespace's controller
        "SAMSUNG MZVLB256HAHQ-000L7",
        "S42GMY9M141281",
        "0L2QEXD7",
    )
    assert (controller["vid"], controller["cntlid"], controller["version"], controller["mdts"]) == (
        0x144D,
        4,
        "1.2.0",
        9,
    )
    assert controller["multi_controller"] is False and controller["anacap"] is None  # cut from the paste
    assert controller["src"]["line"] == 2
