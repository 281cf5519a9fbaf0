"""The few SVG pieces the pictures share (topology, checkpoint timeline), written by hand.

A picture is a static SVG string: no script, no external font or stylesheet, no link, so it shows
the same in a browser, a ticket attachment or an HTML report opened offline. Every string that
came from the input goes through :func:`esc` (control characters shown as escapes, then XML
escaping of ``& < > " '``), the only way text enters an element here. Text is drawn in a
monospace font of a known size, so its width is known without font metrics.
"""

from __future__ import annotations

import html
import math

from gdsdoctor.report.escape import one_line

FONT = "ui-monospace, 'DejaVu Sans Mono', Menlo, Consolas, monospace"
CHAR_W = 0.6  # a monospace character's advance, in ems
# Colours: the kinds of devices, and what is wrong (red: misplaced or failed; amber: degraded).
INK, MUTED, GRID = "#1f2933", "#52606d", "#d9e2ec"
RED, AMBER, RED_FILL, AMBER_FILL = "#c62828", "#b26a00", "#fdecea", "#fff4e0"


def esc(text: object, limit: int | None = None) -> str:
    """Input text made safe for an SVG/XML element or attribute (and shortened to ``limit``)."""
    shown = one_line(text)
    if limit is not None and len(shown) > limit:
        shown = shown[: limit - 1] + "…"
    return html.escape(shown, quote=True)


def text_width(text: str, size: float) -> float:
    return len(one_line(text)) * CHAR_W * size


def text(
    x: float,
    y: float,
    content: object,
    size: float = 12,
    fill: str = INK,
    anchor: str = "start",
    weight: str = "normal",
    limit: int | None = None,
) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size:g}" fill="{fill}" text-anchor="{anchor}" '
        f'font-weight="{weight}">{esc(content, limit)}</text>'
    )


def rect(x: float, y: float, w: float, h: float, fill: str, stroke: str = "none", **more: object) -> str:
    extra = "".join(f' {k.replace("_", "-")}="{v}"' for k, v in more.items())
    return (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{max(h, 0):.1f}" '
        f'fill="{fill}" stroke="{stroke}"{extra}/>'
    )


def line(
    x1: float, y1: float, x2: float, y2: float, stroke: str = MUTED, width: float = 1, dash: str = ""
) -> str:
    dashed = f' stroke-dasharray="{dash}"' if dash else ""
    return (
        f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}" '
        f'stroke-width="{width:g}"{dashed}/>'
    )


def document(width: float, height: float, body: list[str], title: str, label: str) -> str:
    """A standalone SVG: its own size (a reader scrolls a wide one rather than shrinking its
    text), a title for screen readers, and the font set once."""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{esc(label)}" '
        f'font-family="{FONT}"><title>{esc(title)}</title>'
        f'<rect width="100%" height="100%" fill="#ffffff"/>{"".join(body)}</svg>\n'
    )


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """Round axis values from 0 to at least ``top`` (steps of 1, 2 or 5 times a power of ten)."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [i * step for i in range(math.ceil(top / step) + 1)]
