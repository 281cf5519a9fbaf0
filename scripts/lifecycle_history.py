"""How many findings the lifecycle moves to History on the project's real kernel logs.

A finding *moved* is a cause the whole log fires and the node now does not; a cause that fires
now too (on other events) and has history events is counted apart.

Every file under tests/data (and fixtures/) that is read as a kernel log is analysed alone, as a
pasted file; the script prints, per log with history, the findings that moved there and why,
then the totals: logs read, findings now, findings in history. Run: python scripts/lifecycle_history.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from gdsdoctor.errors import GdsdoctorError
from gdsdoctor.pipeline import analyze_paths
from gdsdoctor.probes import dmesg

ROOT = Path(__file__).resolve().parents[1]


def kernel_logs(*folders: Path) -> list[Path]:
    found = []
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            skipped = path.suffix in (".md", ".yaml", ".json")
            if skipped or not path.is_file() or path.stat().st_size > 8 << 20:
                continue
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if dmesg.recognise(text):
                found.append(path)
    return found


def main() -> int:
    folders = [ROOT / "tests" / "data"] + ([ROOT / "fixtures"] if "--fixtures" in sys.argv else [])
    logs = kernel_logs(*folders)
    now = moved = also = with_history = 0
    for log in logs:
        try:
            report = analyze_paths([log]).report
        except GdsdoctorError:
            continue
        now += len(report["findings"])
        moved += sum(1 for item in report["history"] if not item["also_now"])
        also += sum(1 for item in report["history"] if item["also_now"])
        if report["history"]:
            with_history += 1
            print(f"{log.relative_to(ROOT)}:")
            for item in report["history"]:
                now_too = ", also current on other events" if item["also_now"] else ""
                print(f"  {item['id']} (was {item['was_severity']}{now_too}): {item['history_reason']}")
    print(f"{len(logs)} kernel logs, {with_history} with history; findings now {now}, moved {moved}")
    print(f"history entries of causes that also fire now on other events: {also}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
