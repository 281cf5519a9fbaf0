"""Each NVMe drive's temperature against its own thresholds: the ``derived.nvme_thermal`` list.

A drive states the composite temperature at which it starts to throttle (WCTEMP, ``nvme id-ctrl``)
and the one at which it is in danger (CCTEMP); a fixed 70 °C is right for some drives and wrong for
others (Samsung PM983: 80 °C / 92 °C). The SMART log adds what already happened: the minutes spent
above WCTEMP and the throttling transitions of host-controlled thermal management (T1, T2), which
are history (a lifetime count), read as context for a drive that is hot now.

One entry per SMART device: ``{device, temperature_c, wctemp_c, cctemp_c, over_warning (temperature
≥ WCTEMP; null without either), over_critical, warning_temp_time_min, throttle_transitions (T1 + T2),
src}``. id-ctrl and smart-log are paired by device name; a paste of one drive's two outputs, which
often names no device, pairs its single controller with its single SMART log.
"""

from __future__ import annotations

from typing import Any

from gdsdoctor.facts.derived.access import dicts, num, ok_section
from gdsdoctor.patterns import lazy_compile

NAMESPACE = lazy_compile(r"^(nvme\d+)(?:c\d+)?n\d+(?:p\d+)?$")


def derive(facts: dict[str, Any]) -> list[dict[str, Any]]:
    smart = dicts(ok_section(facts, "nvme_smart").get("devices"))
    controllers = dicts(ok_section(facts, "nvme_id_ctrl").get("controllers"))
    named = {_name(c.get("device")): c for c in controllers if c.get("device")}
    return [_entry(log, _controller_of(log, named, smart, controllers)) for log in smart]


def _name(device: Any) -> str:
    """``/dev/nvme0n1`` and ``nvme0`` name the same controller."""
    name = str(device).removeprefix("/dev/")
    namespace = NAMESPACE.match(name)
    return namespace[1] if namespace else name


def _controller_of(
    log: dict[str, Any], named: dict[str, dict[str, Any]], smart: list[Any], controllers: list[Any]
) -> dict[str, Any]:
    if log.get("device") and _name(log["device"]) in named:
        return named[_name(log["device"])]
    if len(smart) == 1 and len(controllers) == 1:
        return controllers[0]  # one drive's id-ctrl and smart-log pasted together
    return {}


def _entry(log: dict[str, Any], controller: dict[str, Any]) -> dict[str, Any]:
    temperature, wctemp, cctemp = (num(log.get("temperature_c")), num(controller.get("wctemp_c")),
                                   num(controller.get("cctemp_c")))  # fmt: skip
    transitions = [num(log.get(k)) for k in ("thm_temp1_trans_count", "thm_temp2_trans_count")]
    counted = [t for t in transitions if t is not None]
    return {
        "device": log.get("device") or controller.get("device"),
        "temperature_c": temperature,
        "wctemp_c": wctemp,
        "cctemp_c": cctemp,
        "over_warning": temperature >= wctemp if temperature is not None and wctemp else None,
        "over_critical": temperature >= cctemp if temperature is not None and cctemp else None,
        "warning_temp_time_min": num(log.get("warning_temp_time_min")),
        "throttle_transitions": sum(counted) if counted else None,
        "src": log.get("src"),
    }
