"""What each speed gate of gdsdoctor.probes.dmesg buys: parse a log with one gate switched off
at a time and compare the median time (and the events: they must be the same). A gate that bought
less than 10 ms (a literal per pattern) was removed; its numbers are in docs/performance.md.

    python3 scripts/dmesg_gates.py [HOST_DMESG_FILE]

Logs: every kernel log of the tests and fixtures (~100 KB); the real H200 node's log of
fixtures/h200-node-without-nvidia-fs repeated to 10,700 lines with those appended; and, when
given, another host's ``dmesg`` output repeated the same way. Results: docs/performance.md.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

from gdsdoctor.probes import dmesg

ROOT = Path(__file__).resolve().parents[1]
LINES = 10_700


class _Everything:
    def __contains__(self, number: object) -> bool:
        return True


def _logs(extra: list[str]) -> dict[str, str]:
    samples = sorted((ROOT / "tests/data/dmesg").glob("*.txt")) + sorted(
        p for p in ROOT.glob("fixtures/**/*") if p.is_file() and p.name.startswith(("dmesg", "journal"))
    )
    tests = "".join(p.read_text(errors="replace") for p in samples)
    logs = {"test and fixture logs": tests}
    for name, path in [("H200 node", ROOT / "fixtures/h200-node-without-nvidia-fs/bundle/cmd/dmesg.txt")] + [
        ("given host", Path(p)) for p in extra
    ]:
        text = path.read_text(errors="replace")
        repeated = (text * (LINES // max(text.count("\n"), 1) + 1)).splitlines(keepends=True)
        logs[f"{name} x N + test logs"] = "".join(repeated[: LINES - tests.count("\n")]) + tests
    return logs


def _ungated_classify(message: str, hints: Any = None) -> Any:
    message = message[: dmesg.MAX_CLASSIFIED_CHARS]
    for kind, patterns in dmesg._COMPILED:
        for pattern in patterns:
            if m := pattern.search(message):
                groups = {k: v for k, v in m.groupdict().items() if v is not None}
                device = groups.pop("device", None) or dmesg._device(message)
                return kind, device, {k: dmesg._detail(v) for k, v in groups.items()}
    return None


def _every_kind_classify(message: str, hints: Any = None) -> Any:
    every = tuple(range(len(dmesg._COMPILED)))
    return ORIGINAL["classify"](message, [("", every)])


def _substring_hints(text: str) -> list[tuple[str, tuple[int, ...]]]:
    lowered = text.lower()
    return [(hint, kinds) for hint, kinds in dmesg._KINDS_OF_HINT.items() if hint in lowered]


ORIGINAL = {name: getattr(dmesg, name) for name in ("classify", "hints_in", "hinted_candidates", "_COMPILED")}
VARIANTS: dict[str, dict[str, Any]] = {
    "all gates (as shipped)": {},
    "no line gate (every line classified)": {"hinted_candidates": lambda text, hints: _Everything()},
    "no per-kind hints (every kind tried)": {"classify": _every_kind_classify},
    "no distinct-words search (hints by substring)": {"hints_in": _substring_hints},
    "no gates at all": {
        "hinted_candidates": lambda text, hints: _Everything(),
        "classify": _ungated_classify,
    },
}


def _median_ms(text: str, rounds: int = 9) -> tuple[float, Any]:
    times, events = [], None
    for _ in range(rounds):
        start = time.perf_counter()
        events = dmesg.parse(text, "dmesg")["events"]
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000, events


def main() -> None:
    for name, text in _logs(sys.argv[1:]).items():
        print(f"\n{name} ({len(text) // 1024} KB, {text.count(chr(10))} lines)\n")
        print("| variant | median | vs shipped | same events |\n| --- | --- | --- | --- |")
        base_ms, base_events = _median_ms(text)
        for variant, patch in VARIANTS.items():
            for key, value in patch.items():
                setattr(dmesg, key, value)
            try:
                ms, events = _median_ms(text)
            finally:
                for key, value in ORIGINAL.items():
                    setattr(dmesg, key, value)
            print(f"| {variant} | {ms:.1f} ms | {ms - base_ms:+.1f} ms | {events == base_events} |")


if __name__ == "__main__":
    main()
