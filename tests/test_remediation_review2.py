"""The second review's corrections (remediation-review-2.md §1-§5), held across the whole
catalogue where the defect is a pattern (a command form, a fact) and on the cause where it is one
rule: each assertion fails on the text the review found."""

from __future__ import annotations

import re
from pathlib import Path

from gdsdoctor.engine.evaluate import Outcome, evaluate_cause
from gdsdoctor.engine.rules import Cause
from gdsdoctor.facts.derived import derive
from gdsdoctor.pipeline import analyze_paths, rules

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _cause(cause_id: str) -> Cause:
    return next(c for c in rules() if c.id == cause_id)


def _texts(cause: Cause) -> list[str]:
    """Everything a cause tells an operator to type or believe."""
    return [
        cause.explanation,
        cause.fix,
        *(s.cmd for s in cause.remediation),
        *(s.note for s in cause.remediation),
    ]


def test_no_rdma_connect_binds_by_host_iface() -> None:
    # nvme-rdma's allowed_opts has no NVMF_OPT_HOST_IFACE: nvmf_check_allowed_opts() gives EINVAL
    rdma_iface = re.compile(r"(-t\s*|--transport=)rdma\b[^`;]*--host-iface")  # within one command
    offenders = [(c.id, s.cmd) for c in rules() for s in c.remediation if rdma_iface.search(s.cmd)]
    offenders += [(c.id, "fix") for c in rules() if rdma_iface.search(c.fix)]
    assert offenders == []
    [connect] = [
        s for s in _cause("nvmeof-tcp-instead-of-rdma").remediation if s.cmd.startswith("nvme connect")
    ]
    assert "-t rdma" in connect.cmd and "--host-traddr=<local RDMA IP>" in connect.cmd
    assert "--host-traddr=LOCAL_RDMA_IP" in _cause("nvmeof-not-reconnected-at-boot").fix


def test_grubby_changes_every_kernel_never_the_default_entry_alone() -> None:
    offenders = [c.id for c in rules() if any("--update-kernel=DEFAULT" in t for t in _texts(c))]
    assert offenders == []
    for cause_id in (
        "iommu-translating-gds",
        "iommu-translating-p2p-cross-root-complex",
        "iommu-boot-config-not-applied",
    ):
        assert [
            s for s in _cause(cause_id).remediation if s.cmd.startswith("grubby --update-kernel=ALL --args=")
        ]


def test_lfs_quota_names_a_lustre_mount_never_root() -> None:
    offenders = [
        (c.id, s.cmd) for c in rules() for s in c.remediation if re.search(r"lfs quota\b.*\s/$", s.cmd)
    ]
    assert offenders == []


def test_a_namespace_walk_is_bounded_and_says_what_it_costs() -> None:
    for cause in rules():
        for step in cause.remediation:
            if step.cmd.startswith("lfs find"):
                assert "{mountpoints}" not in step.cmd and "metadata server" in step.note, cause.id
    assert not [c.id for c in rules() for s in c.remediation if "OST_INDEX" in s.cmd]


def test_every_beegfs_7_command_has_its_beegfs_8_form_beside_it() -> None:
    for cause in rules():
        commands = [s.cmd for s in cause.remediation]
        if any(c.startswith(("beegfs-ctl", "beegfs-df")) for c in commands):
            assert any(c.startswith("beegfs ") for c in commands), cause.id


def test_lustre_full_ost_fact_is_reserved_mb_low_not_95_percent() -> None:
    cause = _cause("capacity-target-full")
    assert (
        "reserved_mb_low" in cause.explanation and "stops placing new objects there" not in cause.explanation
    )
    assert "'warning'" in str(cause.severity_at_most)  # 95 % alone is a warning
    inodes = _cause("capacity-inodes-exhausted")
    assert "too_few" in str(inodes.severity_at_most)


def _host_identity_facts(hostid_status: str) -> dict:
    """The facts of a node whose /etc/nvme/hostnqn is of the uuid: form and the live controllers
    were connected with it (fixture nvmeof-hostnqn-file-matches-connected), hostid file as given."""
    files = sorted((FIXTURES / "nvmeof-hostnqn-file-matches-connected" / "files").iterdir())
    facts = analyze_paths(files).facts
    facts["nvme_hostid"] = {"status": hostid_status}
    facts["derived"] = derive(facts, None)
    return facts


def test_a_missing_hostid_beside_a_uuid_hostnqn_is_derived_not_unset() -> None:
    facts = _host_identity_facts("missing")
    identity = facts["derived"]["fabrics"]["host_identity"]
    assert identity["hostnqn_uuid"] == "0c3e1d4a-5b6f-4e8d-9a7b-1c2d3e4f5a6b"  # what nvme-cli ≥ 2.7 uses
    result = evaluate_cause(_cause("nvmeof-host-identity-unset"), facts, {})
    assert result.outcome == Outcome.CLEAR
    # the same file with a host NQN of another form: nothing to derive the host ID from
    facts["nvme_hostnqn"]["hostnqn"] = "nqn.2014-08.com.example:node-07"
    facts["derived"] = derive(facts, None)
    result = evaluate_cause(_cause("nvmeof-host-identity-unset"), facts, {})
    assert result.outcome == Outcome.FIRED
    assert "hostid-missing" in [r.signal.id for r in result.signals if r.held]


def test_the_hostid_written_is_the_uuid_of_the_hostnqn_never_a_random_one_beside_it() -> None:
    for cause_id in ("nvmeof-host-identity-conflict", "nvmeof-host-identity-unset"):
        writes = [s.cmd for s in _cause(cause_id).remediation if s.cmd.endswith("> /etc/nvme/hostid")]
        assert writes == [
            "test -s /etc/nvme/hostid || { sed -n 's/.*uuid://p' /etc/nvme/hostnqn | grep . || uuidgen; } > /etc/nvme/hostid"
        ]


def test_connect_all_names_the_portal_it_asks() -> None:
    # without -t/-a/-s connect-all reads only discovery.conf/config.json ("No params given")
    bare = [
        (c.id, s.cmd)
        for c in rules()
        for s in c.remediation
        if s.cmd.strip() == "nvme connect-all" and "discovery.conf" not in s.note
    ]
    assert bare == []  # a bare one only where its note says it replays discovery.conf
    files = sorted((FIXTURES / "nvmeof-list-subsys-all-non-optimized" / "files").iterdir())
    [finding] = [
        f for f in analyze_paths(files).report["findings"] if f["id"] == "nvmeof-ana-all-non-optimized"
    ]
    commands = [s["command"] for s in finding["remediation"]]
    assert "nvme connect-all -t tcp -a 10.162.198.42 -s 4420" in commands
    assert commands.index("nvme discover -t tcp -a 10.162.198.42 -s 4420") < commands.index(
        "nvme connect-all -t tcp -a 10.162.198.42 -s 4420"
    )


def test_the_estimate_it_suggests_computes_something_and_the_move_takes_dotfiles() -> None:
    # `estimate … --async --help` printed the help only (review 2 §2 nit)
    [estimate] = [s.cmd for s in _cause("async-save-host-memory-short").remediation if "estimate" in s.cmd]
    assert "--help" not in estimate and "--gpus {gpus}" in estimate and "--throughput <" in estimate
    # `mv dir/*` leaves the dotfiles behind (review 2 §1 nit)
    [move] = [s.cmd for s in _cause("xfs-nobarrier-rejected").remediation if " mv " in f" {s.cmd}"]
    assert "shopt -s dotglob" in move
