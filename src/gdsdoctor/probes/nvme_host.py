"""The NVMe-oF host identity: ``/etc/nvme/hostnqn`` and ``/etc/nvme/hostid``.

nvme-cli and libnvme connect with the host NQN and host ID in these files; the target's access
list names the host NQN, and the kernel keeps one host ID per host NQN. Without a hostid file
nvme-cli makes up a new ID for every connect (the kernel then refuses the second controller:
"found same hostnqn … but different hostid"); a hostnqn file copied with a cloned image names
every node of a fleet the same (``gdsdoctor fleet`` compares them).

Sections::

    nqn.2014-08.org.nvmexpress:uuid:717a9176-ac73-4ea3-829e-e4ccf0b5735f
    -> nvme_hostnqn: {hostnqn, uuid ("717a9176-…" of the uuid: form, else None), src}
    717a9176-ac73-4ea3-829e-e4ccf0b5735f
    -> nvme_hostid: {hostid, src}

What brings the controllers back after a reboot (nvme-cli's autoconnect)::

    -t rdma -a 10.100.1.50 -s 4420 --host-iface=ens1f0np0          (/etc/nvme/discovery.conf)
    -> nvme_discovery_conf: {entries: [{transport, traddr, trsvcid, host_iface, src}]}
    [{"hostnqn": "nqn…", "subsystems": [{"nqn": "nqn.io-1", "ports": [{"transport": "tcp", …}]}]}]
    -> nvme_config_json: {hosts: [{hostnqn, hostid, src}], entries: [{transport, traddr, trsvcid,
       host_traddr, host_iface, nqn, hostnqn, src}]}      (/etc/nvme/config.json, libnvme 1.x list
       of hosts or the schema's {"hosts": [...]}; keys and secrets are not read)
    enabled                            (systemctl is-enabled nvmf-autoconnect.service)
    -> nvmf_autoconnect: {state: "enabled"|"disabled"|"static"|"masked"|"not-found"|…, enabled, src}

A missing file is the section's ``missing`` status (what the rules read as "not set"). A pasted
hostid is a bare UUID, so it is recognised by its prompt (``cat /etc/nvme/hostid``) only.

>>> nqn = "nqn.2014-08.org.nvmexpress:uuid:717a9176-ac73-4ea3-829e-e4ccf0b5735f\\n"
>>> parse_hostnqn(nqn, "etc/nvme/hostnqn")["uuid"]
'717a9176-ac73-4ea3-829e-e4ccf0b5735f'
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from gdsdoctor.errors import ParseError
from gdsdoctor.patterns import lazy_compile
from gdsdoctor.probes.base import Probe, Section, Source, head_lines, numbered_lines, src
from gdsdoctor.probes.host_io import MISSING, read_in_root
from gdsdoctor.probes.text import line_finder, load_pasted_json

_NQN = lazy_compile(r"^nqn\.\d{4}-\d{2}\.[^\s:]{1,200}:\S{1,223}$")
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_UUID_NQN = lazy_compile(rf":uuid:(?P<uuid>{_UUID})$")
_HOSTID = lazy_compile(rf"^{_UUID}$")
_CAT = lazy_compile(r"\bcat\s+/etc/nvme/host(?P<which>nqn|id)\b")


def _values(text: str) -> list[tuple[int, str]]:
    """The lines that are not blank, comments nor a prompt line (`$ cat /etc/nvme/hostnqn`)."""
    found = []
    for number, line in numbered_lines(text):
        stripped = line.strip()
        if stripped and not stripped.startswith("#") and not _CAT.search(stripped):
            found.append((number, stripped))
    return found


def parse_hostnqn(text: str, artifact: str) -> Section:
    values = _values(text)
    if len(values) != 1 or not _NQN.match(values[0][1]):
        raise ParseError("not /etc/nvme/hostnqn (one line: nqn.2014-08.org.nvmexpress:uuid:…)")
    number, value = values[0]
    uuid = _UUID_NQN.search(value)
    uuid_text = uuid["uuid"].lower() if uuid else None
    return {"hostnqn": value, "uuid": uuid_text, "src": src(artifact, number, value)}


def parse_hostid(text: str, artifact: str) -> Section:
    values = _values(text)
    if len(values) != 1 or not _HOSTID.match(values[0][1]):
        raise ParseError("not /etc/nvme/hostid (one line: a UUID)")
    number, value = values[0]
    return {"hostid": value.lower(), "src": src(artifact, number, value)}


def recognise_hostnqn(text: str) -> bool:
    values = _values(text[:2000])
    return len(values) == 1 and bool(_NQN.match(values[0][1])) and "nvme-subsys" not in text


def recognise_hostid(text: str) -> bool:
    cat = _CAT.search(text[:2000])
    values = _values(text[:2000])
    return bool(cat) and cat["which"] == "id" and len(values) == 1 and bool(_HOSTID.match(values[0][1]))


_OPTION = lazy_compile(r"^--?(?P<key>[\w-]{1,30})(?:=(?P<value>\S{1,300}))?$")
_LONG = {"t": "transport", "a": "traddr", "s": "trsvcid", "f": "host_iface", "w": "host_traddr"}
_UNIT_STATES = (
    "enabled", "enabled-runtime", "disabled", "static", "masked", "masked-runtime", "linked",
    "linked-runtime", "alias", "indirect", "generated", "transient", "bad", "not-found",
)  # fmt: skip
_STARTS_AT_BOOT = ("enabled", "enabled-runtime", "alias", "indirect", "generated")


def parse_discovery_conf(text: str, artifact: str) -> Section:
    entries = []
    for number, line in numbered_lines(text):
        words = line.split()
        if not words or words[0].startswith("#") or not words[0].startswith("-"):
            continue
        entry: dict[str, Any] = dict.fromkeys(("transport", "traddr", "trsvcid", "host_iface", "host_traddr"))
        pending = None
        for word in words:
            match = _OPTION.match(word)
            if match and not word[1:2].isdigit():
                key = _LONG.get(match["key"], match["key"].replace("-", "_"))
                pending = None if match["value"] else key
                if match["value"] and key in entry:
                    entry[key] = match["value"]
            elif pending in entry:
                entry[pending], pending = word, None
        entries.append({**entry, "src": src(artifact, number, line)})
    if not entries and not any(line.strip().startswith("#") for _, line in numbered_lines(text)):
        raise ParseError("no discovery lines (expected /etc/nvme/discovery.conf: -t rdma -a ADDR -s PORT)")
    return {"entries": entries}


# nvme-cli's connect options that carry a key (DH-HMAC-CHAP: -S/--dhchap-secret,
# -C/--dhchap-ctrl-secret; TLS: --tls-key and the keyring that holds it): a discovery.conf line may
# hold them, and a bundle is shared with support. Their values are replaced by one word, so the
# line keeps its options (the parser reads transport, address and port, never a key).
_SECRET_OPTIONS = frozenset(
    {"dhchap-secret", "dhchap-ctrl-secret", "tls-key", "tls-key-identity", "keyring", "tls-keyring"}
)
_SECRET_SHORT = ("-S", "-C")
_KEY_TEXT = lazy_compile(r"(?:DHHC|NVMeTLSkey)-1:[^\s\"']*")  # a key's own spelling, anywhere
NOT_READ = "(not-read)"


def read_discovery_conf(host_root: Path) -> bytes:
    """/etc/nvme/discovery.conf with the values of its key options left out (``_hide_keys``)."""
    data = read_in_root(host_root, "/etc/nvme/discovery.conf", _CONFIG_MAX, raise_denied=True)
    return MISSING if data is None else discovery_conf_without_keys(data)


def discovery_conf_without_keys(data: bytes) -> bytes:
    """discovery.conf with the values of its key options replaced (the live reader and a sos
    report's copy alike: a finding's evidence line must not print a host's secret)."""
    text = data.decode("utf-8", "replace")
    return "\n".join(_hide_keys(line) for line in text.split("\n")).encode()


def _hide_keys(line: str) -> str:
    words = re.split(r"(\s+)", _KEY_TEXT.sub(NOT_READ, line))
    pending = False
    for index, word in enumerate(words):
        if not word or word.isspace():
            continue
        if pending:
            words[index], pending = NOT_READ, False
            continue
        name, equals, _ = word.partition("=")
        if word.startswith("--") and name[2:].replace("_", "-") in _SECRET_OPTIONS:
            words[index], pending = (f"{name}={NOT_READ}", False) if equals else (word, True)
        elif word[:2] in _SECRET_SHORT:
            words[index], pending = (word[:2] + NOT_READ, False) if len(word) > 2 else (word, True)
    return "".join(words)


def recognise_discovery_conf(text: str) -> bool:
    lines = [
        line.strip() for line in head_lines(text, 100) if line.strip() and not line.strip().startswith("#")
    ]
    return bool(lines) and all(
        re.match(r"^--?(?:t|transport)[ =]", line) for line in lines if not line.startswith("$")
    )


_UNIT_FILES = lazy_compile(r"^UNIT FILE\s+STATE\b")
_AUTOCONNECT_ROW = lazy_compile(r"^nvmf-autoconnect\.service\s+(?P<state>[a-z-]{1,20})\b")


def parse_autoconnect(text: str, artifact: str) -> Section:
    if _UNIT_FILES.match(text.lstrip()[:200]):
        return _from_unit_files(text, artifact)
    values = [(n, v) for n, v in _values(text) if "nvmf-autoconnect" not in v]
    state = values[-1][1] if values else ""
    if state not in _UNIT_STATES:
        raise ParseError("not `systemctl is-enabled nvmf-autoconnect.service` output (one word: enabled, …)")
    number, line = values[-1]
    return {"state": state, "enabled": state in _STARTS_AT_BOOT,
            "src": src(artifact, number, line)}  # fmt: skip


def _from_unit_files(text: str, artifact: str) -> Section:
    """The unit's row of ``systemctl list-unit-files`` (what a sos report's systemd plugin
    keeps): its STATE column is what ``systemctl is-enabled`` prints."""
    for number, line in numbered_lines(text):
        row = _AUTOCONNECT_ROW.match(line)
        if row and row["state"] in _UNIT_STATES:
            return {"state": row["state"], "enabled": row["state"] in _STARTS_AT_BOOT,
                    "src": src(artifact, number, line)}  # fmt: skip
    raise ParseError("nvmf-autoconnect.service is not among the unit files listed (nvme-cli has no units)")


def recognise_autoconnect(text: str) -> bool:
    head = text[:500]
    values = [v for _, v in _values(head) if "nvmf-autoconnect" not in v]
    return "nvmf-autoconnect" in head and len(values) == 1 and values[0] in _UNIT_STATES


# libnvme's JSON configuration: a list of hosts (libnvme 1.x) or {"hosts": [...]} (the schema
# of libnvme/doc/config-schema.json), each host with subsystems and their ports. nvme-cli's
# connect-all (nvmf-autoconnect at boot) takes each port as a discovery controller to connect
# from. Secrets (dhchap_key, dhchap_ctrl_key, tls_key) are never copied into the facts.
_PORT_KEYS = ("transport", "traddr", "trsvcid", "host_traddr", "host_iface")
_SECRETS = frozenset(
    {"dhchap_key", "dhchap_ctrl_key", "tls_key", "tls_psk_identity", "keyring", "tls_keyring"}
)
_CONFIG_MAX = 1 << 20


def _without_secrets(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: "(not read)" if k in _SECRETS else _without_secrets(v) for k, v in value.items()}
    return [_without_secrets(v) for v in value] if isinstance(value, list) else value


def read_config_json(host_root: Path) -> bytes:
    """/etc/nvme/config.json with its keys (DH-HMAC-CHAP, TLS) left out: a bundle is shared with
    support, the host's secrets are not; a file that is no JSON is kept out whole."""
    data = read_in_root(host_root, "/etc/nvme/config.json", _CONFIG_MAX, raise_denied=True)
    return MISSING if data is None else config_json_without_keys(data)


def config_json_without_keys(data: bytes, keep_clean: bool = False) -> bytes:
    """config.json without its keys (the live reader and a sos report's copy alike); with
    ``keep_clean``, a file naming no key is kept as it is (its lines are the ones cited)."""
    if keep_clean and not any(key.encode() in data for key in _SECRETS):
        return data
    try:
        return json.dumps(_without_secrets(json.loads(data)), indent=2).encode()
    except (ValueError, RecursionError):
        return b'{"unreadable": "not JSON: the file was not copied"}\n'


_CONFIG_JSON_MARKS = ('"subsystems"', '"ports"')


def parse_config_json(text: str, artifact: str) -> Section:
    data, skipped = load_pasted_json(text, "/etc/nvme/config.json")
    hosts = data.get("hosts") if isinstance(data, dict) else data
    if isinstance(data, dict) and "unreadable" in data:
        raise ParseError("/etc/nvme/config.json is not JSON (libnvme ignores it too)")
    if not isinstance(hosts, list):
        raise ParseError('not libnvme\'s config.json (a list of hosts, or {"hosts": [...]})')
    find = line_finder(text)
    found_hosts, entries = [], []
    for host in hosts:
        if not isinstance(host, dict):
            continue
        hostnqn = host.get("hostnqn") if isinstance(host.get("hostnqn"), str) else None
        found_hosts.append({"hostnqn": hostnqn, "hostid": _text(host.get("hostid")),
                            "src": _line(artifact, find, "hostnqn", hostnqn)})  # fmt: skip
        for subsystem in host.get("subsystems") if isinstance(host.get("subsystems"), list) else []:
            if not isinstance(subsystem, dict):
                continue
            nqn = _text(subsystem.get("nqn"))
            for port in subsystem.get("ports") if isinstance(subsystem.get("ports"), list) else []:
                if isinstance(port, dict) and _text(port.get("transport")):
                    entry = {key: _text(port.get(key)) for key in _PORT_KEYS}
                    where = _line(artifact, find, "traddr", entry["traddr"])
                    entries.append({**entry, "nqn": nqn, "hostnqn": hostnqn, "src": where})
    if skipped and not found_hosts:
        raise ParseError("not libnvme's config.json")
    return {"hosts": found_hosts, "entries": entries}


def _line(artifact: str, find: Any, key: str, value: str | None) -> dict[str, Any]:
    """The line of ``"key": "value"`` (the next one: JSON is read in document order)."""
    pattern = rf'"{key}"\s*:\s*"{re.escape(value)}"' if value else rf'"{key}"'
    return src(artifact, *find(pattern))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def recognise_config_json(text: str) -> bool:
    head = text.lstrip()[:4096]
    return (
        head.startswith(("[", "{"))
        and all(mark in head for mark in _CONFIG_JSON_MARKS)
        and '"hostnqn"' in head
    )


PROBES: tuple[Probe, ...] = (
    Probe(
        section="nvme_hostnqn",
        title="NVMe-oF host NQN nvme-cli connects with (/etc/nvme/hostnqn)",
        sources=(Source("etc/nvme/hostnqn", path="/etc/nvme/hostnqn"),),
        parse=parse_hostnqn,
        recognise=recognise_hostnqn,
        paste_hint="`cat /etc/nvme/hostnqn`",
    ),
    Probe(
        section="nvme_hostid",
        title="NVMe-oF host ID nvme-cli connects with (/etc/nvme/hostid)",
        sources=(Source("etc/nvme/hostid", path="/etc/nvme/hostid"),),
        parse=parse_hostid,
        recognise=recognise_hostid,
        paste_hint="`cat /etc/nvme/hostid`",
        reads_prompts=True,  # a bare UUID: its prompt line says which file it is
    ),
    Probe(
        section="nvme_discovery_conf",
        title="NVMe-oF discovery controllers connected at boot (/etc/nvme/discovery.conf)",
        sources=(
            Source("etc/nvme/discovery.conf", reader=read_discovery_conf, how="cat /etc/nvme/discovery.conf"),
        ),
        parse=parse_discovery_conf,
        recognise=recognise_discovery_conf,
        paste_hint="`cat /etc/nvme/discovery.conf`",
    ),
    Probe(
        section="nvme_config_json",
        title="NVMe-oF targets connected at boot from libnvme's JSON configuration (/etc/nvme/config.json)",
        sources=(Source("etc/nvme/config.json", reader=read_config_json, how="cat /etc/nvme/config.json"),),
        parse=parse_config_json,
        recognise=recognise_config_json,
        paste_hint="`cat /etc/nvme/config.json`",
    ),
    Probe(
        section="nvmf_autoconnect",
        title="whether nvme-cli's boot-time connect runs (systemctl is-enabled nvmf-autoconnect.service)",
        sources=(
            Source(
                "cmd/systemctl-is-enabled-nvmf-autoconnect.txt",
                argv=("systemctl", "is-enabled", "nvmf-autoconnect.service"),
                ok_exit_codes=(0, 1),  # disabled or absent exit 1 and print the state
            ),
        ),
        parse=parse_autoconnect,
        recognise=recognise_autoconnect,
        paste_hint="`systemctl is-enabled nvmf-autoconnect.service`",
        reads_prompts=True,  # one word: its prompt names the unit
    ),
)
