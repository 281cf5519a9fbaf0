"""The commands around the diagnosis: collect and redact inputs, explain a cause, draw the
topology, list the probes, estimate and measure the checkpoint stall (the rules: cli/rules.py)."""

import re
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from gdsdoctor.checkpoint.presets import DEFAULT_PRESET, PRESET_PARTS, preset_names
from gdsdoctor.cli.common import existing, measured, progress_bar, say_path_problem, size_of
from gdsdoctor.cli.options import (
    DEFAULT_DEADLINE_S,
    TOPO_FORMATS,
    Deadline,
    Format,
    HostRoot,
    Since,
    TargetPath,
)
from gdsdoctor.errors import UserError

BUNDLE_SUFFIXES = (".tar.gz", ".tgz")


def capture_live(*args: Any, **kwargs: Any) -> Any:
    from gdsdoctor.capture.live import capture_live as capture

    return capture(*args, **kwargs)


def write_bundle(*args: Any, **kwargs: Any) -> Any:
    from gdsdoctor.capture.bundle import write_bundle as write

    return write(*args, **kwargs)


def bundle_target(raw: str, option: str = "-o") -> Path:
    """Where `collect -o` writes: NAME.tar.gz is an archive; otherwise a directory. A name with
    another extension (`x.json`) would silently become a directory: refused, unless it already is
    one or ends with `/`. The parent must exist (it is named, not created)."""
    output = Path(raw)
    is_archive = output.name.endswith(BUNDLE_SUFFIXES)
    if not is_archive and output.suffix and not raw.endswith("/") and not output.is_dir():
        raise UserError(
            f"{option} {raw}: a bundle is NAME.tar.gz or a directory; end the name with / to make a directory"
        )
    parent = output.absolute().parent
    if not parent.is_dir():
        raise UserError(f"cannot write {output}: the directory {parent} does not exist")
    if output.exists() and (output.is_file() or any(output.iterdir())):
        raise UserError(f"{output} already exists; choose a new name")
    return output


def collect(
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            metavar="OUTPUT",
            help="Bundle to write: NAME.tar.gz or a directory "
            "(default: gdsdoctor-HOST-YYYYMMDD-HHMMSS[-CASE].tar.gz in the current directory).",
        ),
    ] = None,
    path: TargetPath = None,
    host_root: HostRoot = Path("/"),
    deadline: Deadline = DEFAULT_DEADLINE_S,
    redact: Annotated[
        bool,
        typer.Option(
            "--redact",
            help="Replace host names, addresses, MACs, serials, NQNs, GUIDs and user names; "
            "the private map goes to OUTPUT.redaction-map.json (mode 0600), never into the bundle.",
        ),
    ] = False,
    since: Since = None,
    case_id: Annotated[
        str | None,
        typer.Option(
            "--case-id", metavar="CASE", help="Support case number: into the manifest and the default name."
        ),
    ] = None,
) -> int:
    """Capture this host into a bundle (manifest + raw outputs) for offline analysis."""
    from gdsdoctor.capture.redact_io import map_path_for, write_redacted_bundle
    from gdsdoctor.cli.diagnose import since_of

    since = since_of(since)
    case = _case_id(case_id)
    target = bundle_target(output if output is not None else default_bundle_name(case))
    if redact and map_path_for(target).exists():
        raise UserError(f"{map_path_for(target)} already exists; choose a new name")
    capture = capture_live(host_root, path, deadline_s=deadline)
    if since:  # recorded in the manifest: `analyze` of the bundle judges events by it
        capture.options["since"] = since
    if case:
        capture.options["case_id"] = case
    try:  # the redacted writer removes its map again if the bundle fails: a retry is not blocked
        if redact:
            write_redacted_bundle(capture, target)
        else:
            write_bundle(capture, target)
    except OSError as error:  # a read-only or full filesystem: one line, not a traceback
        raise UserError(f"cannot write {error.filename or target}: {error.strerror or error}") from None
    ok = sum(1 for a in capture.artifacts.values() if a.status == "ok")
    print(f"wrote {target}: {len(capture.artifacts)} artifacts, {ok} ok", file=sys.stderr)
    say_path_problem(capture, path)  # a --path that fails: one line and the diagnosis' status
    if redact:
        print(f"private redaction map (keep it, never attach it): {map_path_for(target)}", file=sys.stderr)
    return 0


def _case_id(raw: str | None) -> str | None:
    """A case id as it may stand in a file name: letters, digits, ``.``, ``_`` and ``-``."""
    if raw is None:
        return None
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", raw):
        raise UserError(f"--case-id {raw!r}: letters, digits, '.', '_' and '-' only (64 at most)")
    return raw


def default_bundle_name(case_id: str | None = None, when: float | None = None) -> str:
    """``gdsdoctor-HOST-YYYYMMDD-HHMMSS[-CASE].tar.gz`` (sos report's convention), UTC: the host
    name cut to what a file name may hold."""
    import os
    import time

    host = re.sub(r"[^A-Za-z0-9.-]", "_", os.uname().nodename)[:64] or "host"
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(when))
    return f"gdsdoctor-{host}-{stamp}{'-' + case_id if case_id else ''}.tar.gz"


def redact(
    inputs: Annotated[
        list[Path],
        typer.Argument(
            metavar="FILE...|BUNDLE",
            help="Pasted text files, or one bundle (a gdsdoctor bundle or a sos report).",
        ),
    ],
    output_dir: Annotated[
        Path | None,
        typer.Option(
            "--output-dir", metavar="DIR", help="Where to write the copies (default: next to each; created)."
        ),
    ] = None,
    map_file: Annotated[
        Path | None,
        typer.Option(
            "--map",
            metavar="FILE",
            help="Private map to go on from and update: one ticket's pseudonyms stay the same "
            "across files and runs (created when missing, mode 0600; never attach it).",
        ),
    ] = None,
    hostname: Annotated[
        list[str] | None,
        typer.Option(
            "--hostname", metavar="NAME", help="Another host name to replace everywhere (repeatable)."
        ),
    ] = None,
    deadline: Deadline = DEFAULT_DEADLINE_S,
) -> int:
    """Write redacted copies beside the originals (never in place): NAME.redacted for pasted
    files, NAME.redacted[.tar.gz] for a bundle or sos report; and the private map."""
    from gdsdoctor.capture import bundles
    from gdsdoctor.capture.redact_io import redact_bundle, redact_files

    paths = existing(inputs)
    names = hostname or []
    found = [p for p in paths if bundles.kind(p) in ("bundle", "sos")]
    if found and len(paths) > 1:
        raise UserError("give either one bundle or several pasted files, not both")
    if found:
        lines = redact_bundle(found[0], output_dir, map_file, names, deadline)
    else:
        lines = redact_files(paths, output_dir, map_file, names, deadline)
    for line in lines:
        print(line, file=sys.stderr)
    return 0


def topo(
    inputs: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="[INPUT]...",
            help="Bundle or pasted files (lspci -tv/-vvv, nvidia-smi topo -m…); none: this host.",
        ),
    ] = None,
    host_root: HostRoot = Path("/"),
    fmt: Annotated[
        Literal[TOPO_FORMATS],  # type: ignore[valid-type]
        typer.Option(
            "--format",
            "-f",
            metavar="FORMAT",
            show_default=False,
            help=f"{', '.join(TOPO_FORMATS)}: a rich tree (terminal), plain text or markdown for tickets, "
            "json, or an SVG picture (default auto: rich on a terminal, else text).",
        ),
    ] = "auto",
) -> int:
    """Draw the PCIe/NUMA layout: GPUs, NVMe drives and NICs, their links, and misplacements.

    Exit code: 0 no placement or link problem, 1 a warning (a degraded link, a drive across
    sockets), 2 a critical one, 3 nothing to draw (an unrecognized input) or bad input."""
    from gdsdoctor.commands.topology_view import render, topology_of

    tty = sys.stdout.isatty()
    chosen = ("rich" if tty else "text") if fmt == "auto" else fmt
    topology = topology_of(existing(inputs or []), host_root)
    sys.stdout.write(render(topology, chosen, color=tty))
    return topology.verdict["exit_code"] if topology.verdict else 0


def probes(fmt: Format = "text") -> int:
    """List every probe: what it runs or reads, and whether it needs root."""
    if fmt == "json":
        import json

        print(json.dumps(probes_list(), indent=2))
        return 0
    from gdsdoctor.commands.explain import probes_markdown, probes_table

    sys.stdout.write(probes_markdown() if fmt == "markdown" else probes_table())
    return 0


def probes_list() -> list[dict[str, Any]]:
    """The probes as data: per probe its sources in the order tried (the same rows as the table)."""
    from gdsdoctor.probes import ANALYSED_PROBES

    return [
        {
            "section": probe.section,
            "title": probe.title,
            "sources": [
                {
                    "runs": " ".join(source.argv) or None,
                    "reads": source.path or None,
                    "how": source.how or None,
                    "artifact": source.artifact,
                    "needs_root": source.needs_root,
                }
                for source in probe.sources
            ],
            "paste_hint": probe.paste_hint or None,
            "needs_root": any(source.needs_root for source in probe.sources),
        }
        for probe in ANALYSED_PROBES
    ]


def estimate(
    params: Annotated[
        str,
        typer.Option(
            "--params",
            metavar="COUNT",
            help="Parameter count: 70B, 7e10, 405b (below 1M is refused as a typo).",
        ),
    ],
    throughput: Annotated[
        str | None,
        typer.Option(
            "--throughput",
            metavar="RATE",
            help="Aggregate write rate: 1.2GB/s, 12GiB/s; a line rate 400Gbit/s × 0.9.",
        ),
    ] = None,
    preset: Annotated[
        str,
        typer.Option(
            "--preset",
            metavar="NAME",
            show_default=False,
            help=f"What is saved per parameter: {', '.join(PRESET_PARTS)} (default {DEFAULT_PRESET}).",
            autocompletion=preset_names,
        ),
    ] = DEFAULT_PRESET,
    component: Annotated[
        list[str] | None,
        typer.Option("--component", metavar="NAME=BYTES", help="Override bytes/param; repeatable."),
    ] = None,
    fsync: Annotated[
        str | None,
        typer.Option(
            "--fsync",
            metavar="DURATION",
            help="fsync/metadata time per checkpoint: 20s, 500ms (default 0, optimistic).",
        ),
    ] = None,
    interval: Annotated[
        str,
        typer.Option(
            "--interval",
            metavar="DURATION",
            show_default=False,
            help="Time between checkpoint starts: 1h, 30m (default 1h).",
        ),
    ] = "1h",
    gpus: Annotated[
        int | None,
        typer.Option(
            "--gpus", metavar="N", help="GPUs stalled by the checkpoint (default nodes × GPUs per node)."
        ),
    ] = None,
    budget: Annotated[
        str | None,
        typer.Option(
            "--budget", metavar="SHARE", help="Stall budget as share of wall time: 2%, 0.02 (missed: exit 1)."
        ),
    ] = None,
    archive_throughput: Annotated[
        str | None,
        typer.Option(
            "--archive-throughput", metavar="RATE", help="Archive tier throughput for the asynchronous flush."
        ),
    ] = None,
    nodes: Annotated[
        int | None, typer.Option("--nodes", metavar="N", help="Nodes the checkpoint is sharded over.")
    ] = None,
    gpus_per_node: Annotated[
        int | None, typer.Option("--gpus-per-node", metavar="N", help="GPUs per node (default 8).")
    ] = None,
    per_node_throughput: Annotated[
        str | None,
        typer.Option(
            "--per-node-throughput", metavar="RATE", help="Write rate of one node: 45GB/s, 400Gbit/s."
        ),
    ] = None,
    target_ceiling: Annotated[
        str | None,
        typer.Option(
            "--target-ceiling", metavar="RATE", help="Most the storage target absorbs from all nodes."
        ),
    ] = None,
    asynchronous: Annotated[
        bool,
        typer.Option("--async", help="Asynchronous save: stall = D2H copy; persist and host memory checked."),
    ] = False,
    d2h_rate: Annotated[
        str | None,
        typer.Option("--d2h-rate", metavar="RATE", help="Device-to-host copy rate per GPU (default 25GB/s)."),
    ] = None,
    host_copy_limit: Annotated[
        str | None,
        typer.Option(
            "--host-copy-limit",
            metavar="RATE",
            help="Host memory bandwidth the GPUs of a node share (default 200GB/s).",
        ),
    ] = None,
    buffers: Annotated[
        int | None,
        typer.Option("--buffers", metavar="N", help="Staging buffers per node for --async (default 2)."),
    ] = None,
    host_mem: Annotated[
        str | None,
        typer.Option(
            "--host-mem", metavar="SIZE", help="Memory of one node for --async staging: 2TB, 1.5TiB."
        ),
    ] = None,
    units: Annotated[
        Literal["si", "iec"],
        typer.Option(
            "--units",
            metavar="UNITS",
            show_default=False,
            help="Output units: si (GB) or iec (GiB) (default si).",
        ),
    ] = "si",
    fmt: Format = "text",
) -> int:
    """How long one checkpoint stalls the GPUs, and what it costs (synchronous, or --async).

    Exit code 1 when the --budget is missed, an --async persist does not fit the interval, or the
    staging does not fit --host-mem; 0 otherwise; 3 for input it cannot read."""
    from gdsdoctor.checkpoint import estimate_report as render
    from gdsdoctor.checkpoint import stall as model

    result = model.run(
        params,
        throughput,
        preset=preset,
        components=component or [],
        fsync=fsync,
        interval=interval,
        gpus=gpus,
        budget=budget,
        archive_throughput=archive_throughput,
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        per_node_throughput=per_node_throughput,
        target_ceiling=target_ceiling,
        asynchronous=asynchronous,
        d2h_rate=d2h_rate,
        host_copy_limit=host_copy_limit,
        buffers=buffers,
        host_mem=host_mem,
    )
    status = render.status_line(result, units)  # last: an exit 1 says which limit was missed
    if fmt == "json":
        import json

        print(json.dumps(render.to_dict(result, units), indent=2))  # its "status" says the same
    elif fmt == "markdown":
        sys.stdout.write(render.render_markdown(result, units) + f"\n**{status}**\n")
    else:
        from gdsdoctor.textwidth import status_lines

        sys.stdout.write(render.render_text(result, units) + "\n" + "\n".join(status_lines(status)) + "\n")
    return 0 if result.ok else 1


def bench(
    path: Annotated[Path, typer.Argument(help="Directory on the checkpoint filesystem to measure.")],
    size: Annotated[
        str | None,
        typer.Option(
            "--size",
            metavar="SIZE",
            help="Test data size, e.g. 4GiB (default 5% of the free space, within 64 MiB to 8 GiB); refused "
            "above half the free space or when it would leave less than 10% free.",
        ),
    ] = None,
    time_limit: Annotated[
        float,
        typer.Option(
            "--time-limit", metavar="SECONDS", show_default=False, help="Hard time limit (default 300)."
        ),
    ] = 300.0,
    engine: Annotated[
        str,
        typer.Option(
            "--engine",
            metavar="ENGINE",
            show_default=False,
            help="auto, cpu-direct, libcufile or gdsio (default auto).",
        ),
    ] = "auto",
    save_raw: Annotated[
        Path | None,
        typer.Option("--save-raw", metavar="FILE", help="Write fio JSON / gdsio text here (for `analyze`)."),
    ] = None,
    fmt: Format = "text",
) -> int:
    """Measure what the checkpoint path delivers (fio/gdsio, direct I/O, in a temporary directory)."""
    from gdsdoctor.cli.diagnose import diagnosed
    from gdsdoctor.commands import bench_run as runner
    from gdsdoctor.outputs import special_target, write_atomic_bytes

    size_bytes = size_of(size) if size else None
    if save_raw and (why := special_target(str(save_raw))):  # before the run, not after minutes of it
        raise UserError(f"--save-raw {save_raw} {why}")
    # a path that fails (EIO, ESTALE, a hang) is diagnosed, not measured: one line and the diagnosis
    with progress_bar() as progress:
        run = lambda: runner.run(path, size_bytes, time_limit, progress, engine)  # noqa: E731
        result, problem = measured(str(path), run)
    if result is None:
        return diagnosed("bench", str(path), str(problem), fmt)
    if save_raw:  # as every output: a new file renamed into place, never written through a link
        try:
            write_atomic_bytes(save_raw, result.raw)
        except OSError as error:
            raise UserError(f"cannot write {error.filename or save_raw}: {error.strerror or error}") from None
    if fmt == "json":
        import json

        print(json.dumps(runner.to_dict(result), indent=2))
    else:
        sys.stdout.write(runner.render_text(result))
    return 0
