"""Every stage that grows with a kernel log grows linearly (issue 36): its work counted at three
sizes of one log (Python lines run and C functions called, as tests/test_hostile_bounds.py
counts them; never timed), each size twice the last, far below the caps on kept events, so
that the caps bound the work but are not what keeps it linear. A stage that pairs every event
with every marker, or evaluates every cause once per event, quadruples at each step."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import incident_logs

from gdsdoctor.probes import dmesg

SIZES = (1000, 2000, 4000)  # lines of the log; half are an incident's (events and markers)
LINEAR = 2.3  # twice the input, at most this much more work (room for fixed costs)


def _work(run: Callable[[], object]) -> int:
    """Python lines run plus C functions called while ``run()`` runs."""
    count = 0

    def tracer(frame: object, event: str, arg: object) -> object:
        nonlocal count
        count += 1
        return tracer

    def profiler(frame: object, event: str, arg: object) -> None:
        nonlocal count
        count += event == "c_call"

    sys.settrace(tracer)
    sys.setprofile(profiler)
    try:
        run()
    finally:
        sys.setprofile(None)
        sys.settrace(None)
    return count


def _linear(work: list[int]) -> bool:
    return all(later < LINEAR * earlier for earlier, later in itertools.pairwise(work))


def _parsed(lines: int, **options: Any) -> dict[str, Any]:
    section = dmesg.parse(incident_logs.incident_log(lines, event_share=0.5, **options), "dmesg")
    return {"dmesg": {"status": "ok", **section}}


def test_the_lifecycle_judges_each_event_against_its_own_objects_markers() -> None:
    """Every marker was paired with every event (1,159 ms of a 100k-line log): now each object's
    markers are found by the object, and the newest ending marker once per object."""
    from gdsdoctor.facts import lifecycle

    work = []
    for lines in SIZES:
        facts = _parsed(lines, quiet_s=30.0)  # no object fails three times an hour
        events, markers = len(facts["dmesg"]["events"]), len(facts["dmesg"]["lifecycle"])
        assert events > lines // 3 and markers > lines // 10  # the log is an incident's
        work.append(_work(lambda facts=facts: lifecycle.judge(facts, {}, None)))
        assert facts["dmesg"]["history"], "recoveries that held end the events before them"
    assert _linear(work), work


def test_the_lifecycle_stays_linear_with_no_clock() -> None:
    """Without a clock every recovery is unconfirmed and every object that failed three times
    flaps: other paths through the judgement, linear too."""
    from gdsdoctor.facts import lifecycle

    work = []
    for lines in SIZES:
        text = incident_logs.incident_log(lines, event_share=0.5)
        untimed = "".join(line.split("] ", 1)[1] for line in text.splitlines(keepends=True))
        facts = {"dmesg": {"status": "ok", **dmesg.parse(untimed, "dmesg")}}
        work.append(_work(lambda facts=facts: lifecycle.judge(facts, {}, None)))
        assert not facts["dmesg"]["history"]  # nothing is known to have held
    assert _linear(work), work


def test_the_quiet_lines_of_a_kernel_log_are_read_by_the_run_not_by_the_line() -> None:
    """A plain `dmesg` line with nothing to give but its clock (most lines of a log) cost a
    Python step or twenty each (4x the work at 4x the lines); a run of them is now read by
    its stamps in one pass of C, so a log of such lines costs about the same at any length
    (the few lines whose hex numbers spell a hint, ``dead``, ``bad``, are read one by one)."""
    dmesg.parse(incident_logs.incident_log(100, event_share=0.0), "dmesg")  # patterns compiled
    work = []
    for lines in SIZES:
        text = incident_logs.incident_log(lines, event_share=0.0)
        assert dmesg.parse(text, "dmesg")["line_count"] == lines
        work.append(_work(lambda text=text: dmesg.parse(text, "dmesg")))
    assert work[-1] < 1.5 * work[0], work


def _facts_of_paste(text: str) -> dict[str, Any]:
    from gdsdoctor.capture.detect import capture_texts
    from gdsdoctor.facts.document import build_facts
    from gdsdoctor.pipeline import ANALYSED_PROBES

    return build_facts(capture_texts([("dmesg.txt", text.encode())]), ANALYSED_PROBES)


def test_the_rules_are_evaluated_over_the_events_in_linear_work() -> None:
    """Every cause over the events now, then again over the whole log (the events now history
    put back): a filter of the events visits only the elements an index gives it."""
    from gdsdoctor.engine.evaluate import evaluate
    from gdsdoctor.pipeline import HOW_TO_COLLECT, history_results, rules

    causes = rules()
    work = []
    for lines in SIZES:
        facts = _facts_of_paste(incident_logs.incident_log(lines, event_share=0.5, quiet_s=30.0))
        assert len(facts["dmesg"]["events"]) > lines // 50 and len(facts["dmesg"]["history"]) > lines // 5

        def both(facts: dict[str, Any] = facts) -> None:
            history_results(causes, facts, evaluate(causes, facts, HOW_TO_COLLECT))

        work.append(_work(both))
    assert _linear(work), work


def test_a_paste_is_read_and_recognised_in_linear_work() -> None:
    """A pasted kernel log: unwrapped (quoting, prompts, log prefixes looked for on each line)
    and offered to every recogniser."""
    from gdsdoctor.capture.detect import capture_texts

    work = []
    for lines in SIZES:
        data = incident_logs.incident_log(lines).encode()
        work.append(_work(lambda data=data: capture_texts([("dmesg.txt", data)])))
    assert _linear(work), work


def test_the_recognisers_read_a_paste_s_head_not_all_of_it() -> None:
    """Each recogniser split the whole paste to read its first lines (55 splits of a 100k-line
    paste, 0.8 s): work in C that a count of Python steps does not see, but the memory the
    lines take does. Asked about a paste four times longer, they allocate no more."""
    import tracemalloc

    from gdsdoctor.capture.detect import RECOGNISABLE
    from gdsdoctor.capture.recognition import claimants

    peaks = []
    for lines in (20_000, 80_000):  # 1.6 and 6.3 MB
        text = incident_logs.incident_log(lines)
        tracemalloc.start()
        try:
            assert [p.section for p in claimants(text, RECOGNISABLE)] == ["dmesg"]
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    assert peaks[1] < 1.2 * peaks[0] and peaks[0] < len(text) // 4, peaks
