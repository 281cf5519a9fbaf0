"""Getting gdsdoctor onto nodes: the documented installs, the man page, the Kubernetes example.

The installs themselves run in scripts/install_check.py (a minute, a package index); here what
can be checked in milliseconds: the steps it runs are README's, the man page has every command,
the DaemonSet mounts the host read-only and runs the plugin config that is shipped.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
import install_check

NPD = REPO / "integrations" / "node-problem-detector"


def test_readme_venv_step_needs_no_root() -> None:
    """A non-root user's `apt-get ... &&` failed and skipped the venv: the step is venv alone."""
    step = install_check.venv_step()
    assert step.startswith("python3 -m venv .venv") and "apt-get" not in step and "sudo" not in step


def test_the_system_wide_install_is_moved_whole_under_a_prefix(tmp_path: Path) -> None:
    lines = install_check.readme_block()
    assert any("/opt/gdsdoctor/bin/pip install ." in line for line in lines)
    assert any(line.endswith("/usr/local/bin/gdsdoctor") and " ln " in f" {line}" for line in lines)
    moved = [install_check.under(tmp_path, line) for line in lines]
    assert all("sudo" not in line and " /opt/" not in line and " /usr/local/" not in line for line in moved)
    argv, codes, output = install_check.unit_command(tmp_path)
    assert argv[0] == f"{tmp_path}/usr/local/bin/gdsdoctor" and argv[1] == "check"
    assert codes == {0, 1, 2, 3} and output == tmp_path / "var/lib/node_exporter/textfile/gdsdoctor.prom"


def test_the_man_page_has_every_command() -> None:
    from gdsdoctor.cli.manpage import commands, render

    page = render()
    names = [name for name, _command in commands()]
    assert {"gdsdoctor check", "gdsdoctor rules show", "gdsdoctor fleet merge", "gdsdoctor watch"} <= set(
        names
    )
    for name in names:
        assert f".SS {name}\n" in page, name
    assert ".SH EXIT STATUS" in page and "\\-\\-host\\-root" in page
    assert all(ord(c) < 128 for c in page)  # beyond ASCII as groff escapes: any locale renders it
    groff = shutil.which("groff")
    if groff is not None:  # the page is valid roff: no warning at all
        done = subprocess.run(
            [groff, "-man", "-Tutf8", "-ww", "-z"], input=page, capture_output=True, text=True
        )
        assert done.returncode == 0 and done.stderr == ""


def _documents() -> dict[str, dict]:
    documents = list(yaml.safe_load_all((NPD / "gdsdoctor-daemonset.yaml").read_text()))
    return {document["kind"]: document for document in documents}


def test_the_daemonset_runs_the_shipped_plugin_with_the_host_read_only() -> None:
    kinds = _documents()
    assert set(kinds) == {"ServiceAccount", "ClusterRoleBinding", "ConfigMap", "DaemonSet"}
    daemonset = kinds["DaemonSet"]
    assert daemonset["apiVersion"] == "apps/v1"
    spec = daemonset["spec"]
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == kinds["ServiceAccount"]["metadata"]["name"]
    assert kinds["ClusterRoleBinding"]["subjects"][0]["name"] == pod["serviceAccountName"]
    [container] = pod["containers"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    host = mounts["/host"]
    assert host["readOnly"] is True and volumes[host["name"]]["hostPath"]["path"] == "/"
    flag = next(a for a in container["command"] if a.startswith("--config.custom-plugin-monitor="))
    config_path = Path(flag.split("=", 1)[1])
    config_mount = mounts[str(config_path.parent)]
    config_map = volumes[config_mount["name"]]["configMap"]["name"]
    assert config_map == kinds["ConfigMap"]["metadata"]["name"]
    carried = json.loads(kinds["ConfigMap"]["data"][config_path.name])
    assert carried == json.loads((NPD / "gdsdoctor-plugin.json").read_text())  # the shipped config, whole
    for rule in carried["rules"]:
        args = rule["args"]
        assert args[:2] == ["check", "--npd"] and args[args.index("--host-root") + 1] == "/host"
        assert rule["path"] == "/usr/local/bin/gdsdoctor"
    assert any(e["name"] == "NODE_NAME" for e in container["env"])


@pytest.mark.parametrize("line", install_check.readme_block())
def test_the_dockerfile_installs_as_the_readme_does(line: str) -> None:
    """The image's install is the README's (sudo dropped, the checkout copied to /usr/src)."""
    dockerfile = (NPD / "Dockerfile").read_text()
    words = line.replace("sudo ", "").replace(" .", " /usr/src/gdsdoctor").split()
    if "man" in line:  # the image has no man pages
        return
    assert " ".join(words).replace("pip install", "pip install --no-cache-dir") in " ".join(
        dockerfile.split()
    )


def test_every_metavar_of_every_command_is_in_one_style() -> None:
    """`--help` mixed three styles (`<str>` in a type column, `UPPER`, `{path}` in a usage line):
    every option value and argument is now UPPER, optional ones in brackets, and the usage line
    writes each argument as its row does."""
    import contextlib
    import io
    import re

    from gdsdoctor.cli import run
    from gdsdoctor.cli.app import click_command
    from gdsdoctor.cli.manpage import commands

    one_style = re.compile(r"\[?[A-Z][A-Z0-9_]*(?:[.=|]+\]?[A-Z0-9_]*)*\]?(?:\.\.\.)?(?:\|[A-Z]+)?")
    root = click_command()
    for name, command in commands():
        context = command.make_context(name, [], resilient_parsing=True) if command is not root else None
        metavars = [p.make_metavar(context) for p in command.params if not getattr(p, "is_flag", False)]
        assert [m for m in metavars if not one_style.fullmatch(m)] == [], name
        shown = io.StringIO()
        with contextlib.redirect_stdout(shown), contextlib.suppress(SystemExit):
            run([*name.split()[1:], "--help"])
        assert not re.search(r"<[a-z]+>|\{[A-Za-z_]+\}", shown.getvalue()), name


def test_the_offline_install_builds_a_wheelhouse_and_installs_from_it_alone(tmp_path: Path) -> None:
    """docs/install.md's offline install (issue 33, item 2): the wheelhouse holds gdsdoctor's wheel
    and binary wheels of its dependencies for the nodes' Python; the node installs from it with no
    index, then links as the system-wide install does (scripts/install_check.py runs both)."""
    build, install = install_check.sh_blocks(install_check.OFFLINE)[:2]
    assert build[0].startswith("NODE_PYTHON=3.10 ")
    assert any("pip wheel --no-deps --wheel-dir ~/wheelhouse ." in line for line in build)
    download = next(line for line in build if "pip download" in line)
    assert all(word in download for word in ("--only-binary=:all:", '"$NODE_PYTHON"', '"$NODE_PLATFORM"'))
    pip = next(line for line in install if " install " in line and "pip" in line)
    assert "--no-index --find-links wheelhouse gdsdoctor" in pip
    assert [line for line in install if line != pip and not line.startswith("tar ")] == [
        line for line in install_check.readme_block() if "pip install" not in line
    ]
    assert install_check.for_the_node(build[0], "3.12").startswith(
        "NODE_PYTHON=3.12 NODE_PLATFORM=manylinux2014_"
    )
    moved = install_check.offline_lines(tmp_path, "/usr/bin/python3.10")
    assert moved[1] == f"/usr/bin/python3.10 -m venv {tmp_path}/opt/gdsdoctor"
    assert all("sudo" not in line and " /opt/" not in line and " /usr/local/" not in line for line in moved)
