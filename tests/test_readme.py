"""The README's first steps work in the order they are read (issue 12)."""

from __future__ import annotations

import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def test_first_two_commands_are_install_and_check_then_the_tests() -> None:
    blocks = re.findall(r"```sh\n(.*?)```", README, re.S)
    assert blocks[:2] == [
        "python3 -m pip install . && gdsdoctor check\n",
        "python3 -m pip install '.[test]' && python3 -m pytest\n",
    ]


def test_debian_venv_hint_comes_before_the_command_that_needs_it() -> None:
    assert README.index("python3 -m venv .venv") < README.index("python3 -m pip install . && gdsdoctor check")


def test_json_key_list_names_every_top_level_key() -> None:
    schema = json.loads((REPO / "src" / "gdsdoctor" / "schemas" / "report.schema.json").read_text())
    section = README[README.index("### JSON report") : README.index("## How it works")]
    assert [key for key in schema["properties"] if f"`{key}`" not in section] == []


def test_debian_package_list_is_what_ci_installs() -> None:
    ci = (REPO / ".ci" / "run").read_text()
    installed = re.search(r"--no-install-recommends \\\n\s*(.*?) >/dev/null", ci)
    assert installed
    packages = installed[1].split()
    intro = README[: README.index("## Use")]
    assert packages and [p for p in packages if p not in intro] == []
