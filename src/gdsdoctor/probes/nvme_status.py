"""NVMe completion status, decoded from its numbers (NVM Express Base Specification, "Status Code
Type" and the status code tables of each type; NVMe over Fabrics, the Connect command's codes;
the values as Linux names them in include/linux/nvme.h).

A status is what the controller answered: the kernel prints it as ``(sct 0x2 / sc 0x86)`` with its
own name for it ("Access Denied"), nvme-cli as the whole 16-bit field (``…(0x4286)``: DNR 0x4000,
More 0x2000, the type in bits 8-10, the code in bits 0-7), and the fabrics host as the status
without DNR in decimal (``Connect command failed, error wo/DNR bit: 386``, ``failed to connect
queue: 0 ret=6``: a positive ``ret`` is a status, a negative one an errno). Whatever the wording,
the numbers say which class of failure it is, and the class (not the resemblance of the words)
decides the cause:

- ``media``: the medium failed the data (write fault, unrecovered read, end-to-end protection
  check failures);
- ``access_denied``: the namespace or range refused access (a TCG Opal/Enterprise locking range
  that is locked, a namespace write-protected): the drive works, it is locked;
- ``unwritten``: deallocated or unwritten blocks read back (an error only where DULBE is on);
- ``data_transfer``, ``internal``, ``aborted``, ``path`` (SCT 3: ANA, pathing, aborted by the
  host), ``lba_range``, ``capacity``, ``not_ready``, ``write_protected``, ``reservation``,
  ``invalid`` (a command or field the controller does not accept), ``transport`` (transient
  transport error);
- ``connect_*`` (SCT 1 codes of a fabrics Connect): ``connect_format``, ``connect_busy``,
  ``connect_invalid_parameter``, ``connect_restart_discovery``, ``connect_invalid_host``;
- ``vendor`` (SCT 7), else ``other``.

>>> decode(0x2, 0x86)["status_class"]
'access_denied'
>>> decode_value(0x4286)["sct"], decode_value(0x4286)["dnr"]
('0x2', True)
"""

from __future__ import annotations

from typing import Any

# (SCT, SC) -> (the specification's name, class)
_CODES: dict[tuple[int, int], tuple[str, str]] = {
    # Generic Command Status (SCT 0)
    (0, 0x00): ("Successful Completion", "success"),
    (0, 0x01): ("Invalid Command Opcode", "invalid"),
    (0, 0x02): ("Invalid Field in Command", "invalid"),
    (0, 0x03): ("Command ID Conflict", "invalid"),
    (0, 0x04): ("Data Transfer Error", "data_transfer"),
    (0, 0x05): ("Commands Aborted due to Power Loss Notification", "aborted"),
    (0, 0x06): ("Internal Error", "internal"),
    (0, 0x07): ("Command Abort Requested", "aborted"),
    (0, 0x08): ("Command Aborted due to SQ Deletion", "aborted"),
    (0, 0x09): ("Command Aborted due to Failed Fused Command", "aborted"),
    (0, 0x0A): ("Command Aborted due to Missing Fused Command", "aborted"),
    (0, 0x0B): ("Invalid Namespace or Format", "invalid"),
    (0, 0x0C): ("Command Sequence Error", "invalid"),
    (0, 0x0D): ("Invalid SGL Segment Descriptor", "invalid"),
    (0, 0x0E): ("Invalid Number of SGL Descriptors", "invalid"),
    (0, 0x0F): ("Data SGL Length Invalid", "invalid"),
    (0, 0x15): ("Operation Denied", "access_denied"),
    (0, 0x1C): ("Sanitize Failed", "internal"),
    (0, 0x1D): ("Sanitize In Progress", "not_ready"),
    (0, 0x20): ("Namespace is Write Protected", "write_protected"),
    (0, 0x21): ("Command Interrupted", "aborted"),
    (0, 0x22): ("Transient Transport Error", "transport"),
    (0, 0x80): ("LBA Out of Range", "lba_range"),
    (0, 0x81): ("Capacity Exceeded", "capacity"),
    (0, 0x82): ("Namespace Not Ready", "not_ready"),
    (0, 0x83): ("Reservation Conflict", "reservation"),
    (0, 0x84): ("Format In Progress", "not_ready"),
    # Command Specific Status (SCT 1) of a fabrics Connect command (NVMe over Fabrics)
    (1, 0x80): ("Connect Incompatible Format", "connect_format"),
    (1, 0x81): ("Connect Controller Busy", "connect_busy"),
    (1, 0x82): ("Connect Invalid Parameters", "connect_invalid_parameter"),
    (1, 0x83): ("Connect Restart Discovery", "connect_restart_discovery"),
    (1, 0x84): ("Connect Invalid Host", "connect_invalid_host"),
    # Media and Data Integrity Errors (SCT 2)
    (2, 0x80): ("Write Fault", "media"),
    (2, 0x81): ("Unrecovered Read Error", "media"),
    (2, 0x82): ("End-to-end Guard Check Error", "media"),
    (2, 0x83): ("End-to-end Application Tag Check Error", "media"),
    (2, 0x84): ("End-to-end Reference Tag Check Error", "media"),
    (2, 0x85): ("Compare Failure", "compare"),
    (2, 0x86): ("Access Denied", "access_denied"),
    (2, 0x87): ("Deallocated or Unwritten Logical Block", "unwritten"),
    # Path Related Status (SCT 3)
    (3, 0x00): ("Internal Path Error", "path"),
    (3, 0x01): ("Asymmetric Access Persistent Loss", "path"),
    (3, 0x02): ("Asymmetric Access Inaccessible", "path"),
    (3, 0x03): ("Asymmetric Access Transition", "path"),
    (3, 0x60): ("Controller Pathing Error", "path"),
    (3, 0x70): ("Host Pathing Error", "path"),
    (3, 0x71): ("Command Aborted By Host", "path"),
}
DNR, MORE = 0x4000, 0x2000


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value, 0)
        except ValueError:
            return None
    return None


def decode(sct: Any, sc: Any) -> dict[str, Any]:
    """``{status_name, status_class}`` of a status type and code (ints or "0x.." strings)."""
    t, c = _int(sct), _int(sc)
    if t is None or c is None:
        return {}
    if t == 7:
        return {"status_name": "Vendor Specific", "status_class": "vendor"}
    if t == 2 and 0x80 <= c <= 0x84 and (t, c) not in _CODES:
        return {"status_name": None, "status_class": "media"}
    name, kind = _CODES.get((t, c), (None, "other"))
    return {"status_name": name, "status_class": kind}


def decode_value(value: Any) -> dict[str, Any]:
    """A whole status field (nvme-cli's ``0x4286``; the fabrics host's decimal status without DNR):
    ``{sct, sc, dnr, more, status_name, status_class}`` with sct/sc as "0x.." the way the kernel
    prints them."""
    number = _int(value)
    if number is None or number < 0:
        return {}
    sct, sc = (number >> 8) & 0x7, number & 0xFF
    return {"sct": hex(sct), "sc": hex(sc), "dnr": bool(number & DNR), "more": bool(number & MORE),
            **decode(sct, sc)}  # fmt: skip


def describe(details: dict[str, Any]) -> dict[str, Any]:
    """What a kernel event's status numbers mean: ``sct``/``sc`` as printed (``"0x2"``, ``"0x86"``),
    else a whole ``status`` number (the fabrics host's decimal status without DNR). Empty when the
    event carries neither."""
    if "sct" in details and "sc" in details:
        return decode(details["sct"], details["sc"])
    status = details.get("status")
    if isinstance(status, int) and not isinstance(status, bool):
        return decode_value(status)
    return {}


# The Connect refusals by who must act: the target's configuration or state, this host's identity
# as the target sees it, or this host's own side (it gave up: a host pathing error, an abort).
_CONNECT_REASONS = {
    "connect_invalid_host": "host_not_allowed",
    "connect_invalid_parameter": "invalid_parameter",
    "connect_busy": "target_busy",
    "connect_format": "target_protocol",
    "connect_restart_discovery": "target_changed",
    "path": "host_side",
    # no target aborts a Connect: the host's own timeout handler does (rdma.c, tcp.c and loop.c set
    # Command Abort Requested, 0x7, before kernels had Host Aborted Command, 0x371): no answer came
    "aborted": "host_side",
}
_LINE_REASONS = {
    "controller is busy or not available": "target_busy",
    "host path error": "host_side",
    "authentication required": "auth_required",
}


def connect_reason(details: dict[str, Any]) -> str:
    """Why a fabrics Connect was refused, from an ``nvmeof_connect_refused`` event's details."""
    if details.get("subsysnqn") and details.get("hostnqn"):
        return "host_not_allowed"  # "Connect for subsystem S is not allowed, hostnqn: H"
    if details.get("field") in ("subsysnqn", "hostnqn", "cntlid", "SQE"):
        return "invalid_parameter"
    if isinstance(details.get("reason"), str):
        return _LINE_REASONS.get(details["reason"], "target_status")
    if details.get("mnan") is not None or details.get("recfmt") is not None:
        return "target_protocol"
    if details.get("cm_status") == 8 and details.get("status") is None:
        return "no_listener"  # RDMA CM "invalid service ID": nothing listens on that port
    return _CONNECT_REASONS.get(str(details.get("status_class")), "target_status")
