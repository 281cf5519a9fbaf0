"""``gdsdoctor diff BEFORE AFTER``: two captures of one node compared (commands/diff.py)."""

import sys
from pathlib import Path
from typing import Annotated, Literal

import typer

from gdsdoctor.cli.common import existing
from gdsdoctor.cli.diagnose import job_of, since_of, site_config_of, targets_of, write_output
from gdsdoctor.cli.options import (
    DEFAULT_DEADLINE_S,
    Deadline,
    NoConfig,
    RulesDirs,
    Since,
    SiteConfig,
    TargetPath,
)
from gdsdoctor.errors import UserError

_WHAT = (
    "a bundle (.tar.gz or directory), a sos report, an nvidia-bug-report log, a folder of pasted "
    "outputs or one paste"
)
Before = Annotated[
    Path,
    typer.Argument(metavar="BEFORE", help=f"The capture before the change: {_WHAT}.", show_default=False),
]
After = Annotated[
    Path,
    typer.Argument(metavar="AFTER", help=f"The capture after it, of one node: {_WHAT}.", show_default=False),
]
DiffFormat = Annotated[
    Literal["text", "json", "markdown", "html"],  # commands/diff.py DIFF_FORMATS
    typer.Option(
        "--format",
        "-f",
        metavar="FORMAT",
        show_default=False,
        help="Output format: text, json, markdown, html (BEFORE and AFTER side by side; "
        "pip install 'gdsdoctor[html]') (default text).",
    ),
]
Outputs = Annotated[
    list[str] | None,
    typer.Option(
        "--output",
        "-o",
        metavar="[FORMAT=]PATH",
        help="Also write the diff to PATH, atomically, as FORMAT (text, json, markdown, html) or as its "
        "extension says: e.g. -o change.json; repeatable; PATH - is stdout.",
    ),
]


def diff(
    before: Before,
    after: After,
    path: TargetPath = None,
    fmt: DiffFormat = "text",
    output: Outputs = None,
    rules_dir: RulesDirs = None,
    deadline: Deadline = DEFAULT_DEADLINE_S,
    since: Since = None,
    site_config: SiteConfig = None,
    no_config: NoConfig = False,
) -> int:
    """Compare two captures of one node, BEFORE and AFTER a change: the findings resolved, new and
    unchanged, the facts that changed; exit code from AFTER's status, at least 1 when the change
    made anything worse."""
    from gdsdoctor.commands.diff import DIFF_FORMATS, diff_paths, render

    before, after = existing([before, after])
    targets = targets_of(output)
    for name in [fmt, *(f for f, _ in targets)]:
        if name not in DIFF_FORMATS:
            raise UserError(f"a diff is written as {', '.join(DIFF_FORMATS)}, not {name}")
    config = site_config_of(site_config, no_config)
    acknowledgements = config.get("acknowledge") or ()
    job = job_of(None, None, None, None, None, config)  # the site config's checkpoint job, if any
    document = diff_paths(
        before, after, path, rules_dir or [], job, deadline, acknowledgements, since_of(since), config
    )
    for target_format, target in targets:
        write_output(render(document, target_format), target)
    sys.stdout.write(render(document, fmt, color=fmt == "text" and sys.stdout.isatty()))
    return int(document["summary"]["exit_code"])
