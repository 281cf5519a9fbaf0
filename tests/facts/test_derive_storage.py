"""Storage derived facts: device stacks under checkpoint mounts, free space, NVMe-oF controllers,
kernel-log groupings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gdsdoctor.facts.derived import storage, storage_space
from gdsdoctor.pipeline import analyze_paths

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
NVME_REF = ROOT / "tests" / "data" / "dmesg"


def ok(**section: Any) -> dict[str, Any]:
    return {"status": "ok", **section}


def mount(device: str, point: str, fstype: str, options: str = "rw,relatime") -> dict[str, Any]:
    opts = {o.split("=")[0]: (o.split("=", 1)[1] if "=" in o else True) for o in options.split(",")}
    return {"device": device, "mountpoint": point, "fstype": fstype, "options": options, "opts": opts}


def derive(facts: dict[str, Any], *mounts: dict[str, Any], target: dict[str, Any] | None = None) -> dict:
    """``derived.storage`` for the checkpoint mounts ``mounts``."""
    result = storage.derive(facts, list(mounts))
    assert "error" not in result, result.get("error")
    return result


def lsblk_device(name: str, kind: str, maj_min: str, parents: list[str], **extra: Any) -> dict[str, Any]:
    return {"name": name, "kname": name, "type": kind, "maj_min": maj_min, "parents": parents,
            "parent": parents[0] if parents else None, "mountpoints": [], "tran": extra.get("tran")}  # fmt: skip


def test_lvm_on_md_on_nvme_partitions_from_lsblk() -> None:
    facts = {
        "lsblk": ok(
            devices=[
                lsblk_device("nvme0n1", "disk", "259:0", [], tran="nvme"),
                lsblk_device("nvme1n1", "disk", "259:1", [], tran="nvme"),
                lsblk_device("nvme0n1p1", "part", "259:2", ["nvme0n1"]),
                lsblk_device("nvme1n1p1", "part", "259:3", ["nvme1n1"]),
                lsblk_device("md0", "raid0", "9:0", ["nvme0n1p1", "nvme1n1p1"]),
                lsblk_device("vg-ckpt", "lvm", "253:0", ["md0"]),
            ]
        ),
        "nvme_sysfs": ok(
            controllers=[
                {
                    "name": "nvme0",
                    "transport": "pcie",
                    "state": "live",
                    "fabrics": False,
                    "namespaces": ["nvme0n1"],
                },
                {
                    "name": "nvme1",
                    "transport": "pcie",
                    "state": "live",
                    "fabrics": False,
                    "namespaces": ["nvme1n1"],
                },
            ],
            block=[{"name": "nvme0n1", "write_cache": "write back"}],
        ),
    }
    [stack] = derive(facts, mount("/dev/mapper/vg-ckpt", "/mnt/ckpt", "xfs"))["checkpoint_mounts"]
    assert [layer["name"] for layer in stack["stack"]] == [
        "vg-ckpt",
        "md0",
        "nvme0n1p1",
        "nvme1n1p1",
        "nvme0n1",
        "nvme1n1",
    ]
    assert stack["stack_kinds"] == ["lvm", "md", "nvme", "partition"]
    assert stack["nvme_namespaces"] == ["nvme0n1", "nvme1n1"]
    assert [c["name"] for c in stack["nvme_controllers"]] == ["nvme0", "nvme1"]
    assert stack["transports"] == ["pcie"] and stack["volatile_write_cache"] is True


def test_stack_from_device_names_without_lsblk() -> None:
    result = derive(
        {},
        mount("/dev/nvme0n1p1", "/data", "ext4"),
        mount("/dev/mapper/vg0-lv_tmp", "/tmp", "xfs"),
        mount("/dev/loop3", "/mnt/img", "ext4"),
    )
    kinds = {m["mountpoint"]: m["stack_kinds"] for m in result["checkpoint_mounts"]}
    assert kinds == {"/data": ["nvme", "partition"], "/tmp": ["dm"], "/mnt/img": ["loop"]}
    assert result["checkpoint_mounts"][0]["nvme_controllers"] == []  # unknown without sysfs


def test_md_slaves_from_sysfs_without_lsblk() -> None:
    facts = {"nvme_sysfs": ok(controllers=[], block=[{"name": "md0", "slaves": ["nvme0n1", "nvme1n1"]}])}
    [stack] = derive(facts, mount("/dev/md0", "/raid", "xfs"))["checkpoint_mounts"]
    assert [layer["name"] for layer in stack["stack"]] == ["md0", "nvme0n1", "nvme1n1"]
    assert stack["stack_kinds"] == ["md", "nvme"]


def test_virtual_and_network_filesystems() -> None:
    facts = {"mountinfo": ok(by_mountpoint={"/": {"maj_min": "0:53", "all_opts": {"rw": True}}})}
    result = derive(
        facts,
        mount("overlay", "/", "overlay"),
        mount("mountpoint-s3", "/mnt/s3", "fuse"),
        mount("s3fs", "/mnt/s3fs", "fuse.s3fs"),
        mount("sshfs#me@host:/x", "/mnt/x", "fuse.sshfs"),
        mount("10.0.0.1:/export", "/nfs/rdma", "nfs4", "rw,proto=rdma,port=20049"),
        mount("10.0.0.1:/export", "/nfs/tcp", "nfs4", "rw,proto=tcp"),
        mount("10.0.0.1@o2ib:/lustre", "/lustre", "lustre"),
        mount("tank/ckpt", "/tank", "zfs"),
    )
    by_point = {m["mountpoint"]: m for m in result["checkpoint_mounts"]}
    assert by_point["/"]["anonymous"] is True and by_point["/"]["stack_kinds"] == ["overlay"]
    assert by_point["/mnt/s3"]["stack_kinds"] == ["fuse", "object_store"]
    assert by_point["/mnt/s3fs"]["stack_kinds"] == ["fuse", "object_store"]
    assert by_point["/mnt/x"]["stack_kinds"] == ["fuse"]
    assert by_point["/nfs/rdma"]["network_rdma"] is True and by_point["/nfs/tcp"]["network_rdma"] is False
    assert by_point["/lustre"]["network_rdma"] is True and by_point["/tank"]["stack_kinds"] == ["zfs"]


def test_free_space_target_wins_over_df_and_capacity_vs_job() -> None:
    facts = {
        "target": ok(mountpoint="/mnt/ckpt", avail_bytes=400, size_bytes=1000, used_bytes=600),
        "df": ok(by_mountpoint={"/mnt/ckpt": {"avail_bytes": 1, "size_bytes": 1000, "used_bytes": 999}}),
        "job": ok(checkpoint_bytes=980),
    }
    result = derive(facts, mount("/dev/nvme0n1", "/mnt/ckpt", "xfs"))
    [free] = result["free"]
    assert (free["source"], free["avail_bytes"], free["free_pct"], free["avail_text"]) == (
        "target",
        400,
        40.0,
        "400 B",
    )
    assert result["checkpoint_bytes"] == 980
    [short] = result["capacity_short"]
    assert short["shortfall_bytes"] == 580 and short["checkpoint_text"] == "980 B"


def test_no_job_means_no_checkpoint_size() -> None:
    result = derive({"job": {"status": "not_collected"}}, mount("/dev/nvme0n1", "/mnt/ckpt", "xfs"))
    assert result["checkpoint_bytes"] is None and result["capacity_short"] == []


def test_df_alone_gives_free_space_of_data_filesystems() -> None:
    facts = {
        "df": ok(
            filesystems=[
                {
                    "source": "/dev/vda",
                    "fstype": "ext4",
                    "mountpoint": "/",
                    "avail_bytes": 5,
                    "used_bytes": 95,
                },
                {
                    "source": "tmpfs",
                    "fstype": "tmpfs",
                    "mountpoint": "/dev/shm",
                    "avail_bytes": 5,
                    "used_bytes": 0,
                },
                {
                    "source": "/dev/nvme1n1",
                    "fstype": "xfs",
                    "mountpoint": "/mnt/ckpt",
                    "avail_bytes": 2,
                    "used_bytes": 98,
                },
            ]
        )
    }
    assert [(f["mountpoint"], f["free_pct"]) for f in derive(facts)["free"]] == [("/mnt/ckpt", 2.0)]


def test_fabrics_controllers_from_nvme_cli_and_presence() -> None:
    analysis = analyze_paths(
        [
            FIXTURES
            / "nvmeof-list-subsys-connecting"
            / "files"
            / "nvme-list-subsys-text.v1.x-vs-v2.0rc-connecting-path.txt"
        ]
    )
    derived = analysis.facts["derived"]["storage"]
    names = [(c["name"], c["transport"], c["state"]) for c in derived["fabrics_controllers"]]
    assert ("nvme9", "tcp", "connecting") in names and ("nvme8", "tcp", "live") in names
    assert (None, "tcp", None) in names  # nvme-cli printed (null) for a connecting path
    assert derived["fabrics_present"] is True
    assert derive({"nvme_sysfs": ok(controllers=[], block=[])})["fabrics_present"] is False
    assert derive({})["fabrics_present"] is None


def test_ana_groups_and_multipath_subsystems_from_sysfs() -> None:
    analysis = analyze_paths(list((FIXTURES / "nvmeof-sysfs-rdma-iopolicy-numa" / "files").iterdir()))
    derived = analysis.facts["derived"]["storage"]
    [group] = derived["ana"]
    assert group["head"] == "nvme1n1" and group["states"] == ["optimized", "non-optimized"]
    assert group["optimized"] and group["usable"] and group["inaccessible"] == []
    [subsystem] = derived["multipath_subsystems"]
    assert subsystem["iopolicy"] == "numa" and subsystem["controllers"] == ["nvme1", "nvme2"]
    assert derived["rdma_capable"] is True


def test_kernel_log_groups_keepalive_apart_from_pcie_timeouts() -> None:
    keepalive = analyze_paths(
        [
            FIXTURES
            / "nvmeof-tcp-keepalive-admin-timeout"
            / "files"
            / "journal-nvmeof-tcp-admin-timeout-cid-format.txt"
        ]
    )
    groups = keepalive.facts["derived"]["storage"]["dmesg"]
    assert groups["devices"]["keepalive"] == ["nvme0", "nvme1", "nvme2", "nvme3", "nvme4"]
    assert groups["pcie_timeouts"] == []
    pcie = analyze_paths(
        [FIXTURES / "nvme-pcie-completion-polled" / "files" / "dmesg-nvme-pcie-completion-polled.txt"]
    )
    groups = pcie.facts["derived"]["storage"]["dmesg"]
    assert groups["devices"]["pcie_timeouts"] == ["nvme0"] and groups["devices"]["completion_polled"] == [
        "nvme0"
    ]
    assert groups["keepalive"] == []


def test_resets_on_fabrics_controllers_are_not_pcie_resets() -> None:
    facts = {
        "dmesg": ok(
            events=[
                {
                    "kind": "nvmeof_reconnect",
                    "device": "nvme3",
                    "message": "nvme nvme3: starting error recovery",
                },
                {"kind": "nvme_reset", "device": "nvme3", "message": "nvme nvme3: resetting controller"},
                {
                    "kind": "capacity_to_zero",
                    "device": "nvme3n1",
                    "message": "nvme3n1: detected capacity change",
                },
                {"kind": "nvme_reset", "device": "nvme0", "message": "nvme nvme0: Device not ready"},
            ]
        )
    }
    assert derive(facts)["dmesg"]["devices"]["pcie_resets"] == ["nvme0"]


def test_human_bytes() -> None:
    assert storage_space.human_bytes(980_000_000_000) == "980 GB"
    assert storage_space.human_bytes(95_621_222_400) == "95.6 GB"
    assert storage_space.human_bytes(None) is None and storage_space.human_bytes(True) is None


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "lsblk",
                "nvme_sysfs",
                "mountinfo",
                "nvme_subsys",
                "nvme_list",
                "df",
                "target",
                "dmesg",
                "modules",
                "infiniband",
                "job",
            ]
        ),
        st.builds(lambda body: {"status": "ok", **body} if isinstance(body, dict) else body, _json),
    ),
    st.lists(st.builds(mount, st.text(max_size=12), st.text(max_size=12), st.text(max_size=8)), max_size=3),
)
def test_malformed_facts_never_break_the_derivation(
    facts: dict[str, Any], mounts: list[dict[str, Any]]
) -> None:
    derive(facts, *mounts)


def test_connect_errors_are_unique_with_their_meaning() -> None:
    analysis = analyze_paths(
        [
            FIXTURES
            / "nvmeof-tcp-reconnect-econnrefused"
            / "files"
            / "dmesg-nvmeof-tcp-reconnect-econnrefused.txt"
        ]
    )
    [error] = analysis.facts["derived"]["storage"]["dmesg"]["connect_errors"]
    assert error["errno"] == -111 and error["meaning"].startswith("connection refused")


def test_findmnt_only_target_gets_its_options_split() -> None:
    target = {
        "device": "/dev/nvme1n1",
        "mountpoint": "/mnt/ckpt",
        "fstype": "ext4",
        "options": "rw,noatime,data=ordered",
    }
    [stack] = derive({}, target, target=target)["checkpoint_mounts"]
    assert (
        stack["opts"] == {"rw": True, "noatime": True, "data": "ordered"}
        and stack["all_opts"]["data"] == "ordered"
    )


def test_kernel_events_on_the_checkpoint_devices() -> None:
    files = sorted((FIXTURES / "nvme-path-error-on-checkpoint-mount" / "files").iterdir())
    derived = analyze_paths(files, "/mnt/ckpt/step-1000").facts["derived"]["storage"]
    hits = {(e["kind"], e["device"]) for e in derived["dmesg"]["on_checkpoint"]}
    assert ("fs_shutdown", "nvme0n1p1") in hits and ("nvme_status_error", "nvme0n1") in hits
    elsewhere = analyze_paths(files, "/users/PZS0710").facts["derived"][
        "storage"
    ]  # the NFS mount: other devices
    assert elsewhere["dmesg"]["on_checkpoint"] == []
