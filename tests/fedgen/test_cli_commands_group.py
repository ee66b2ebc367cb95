"""The `fedgen` command's own words load no lab client; any other word loads the commands of
the `fedgen.commands` entry points (the client's submit, runs, follow, pull, push, cancel)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from importlib import metadata

import pytest

from fedgen import cli

PROBE = """
import json, sys
from fedgen.cli import build_parser
parser = build_parser({word!r})
sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
print(json.dumps({{"choices": sorted(sub.choices), "client": "fedgen_lab" in sys.modules}}))
"""


def _probe(word: str | None) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(word=word)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return dict(json.loads(out.stdout))


def _choices(parser: argparse.ArgumentParser) -> set[str]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


@pytest.mark.slow  # a child interpreter
def test_an_own_command_loads_no_client() -> None:
    """`fedgen run ...` builds the built-in commands only: no fedgen_lab, no httpx."""
    run = _probe("run")
    assert run["client"] is False
    assert "run" in run["choices"]
    assert "submit" not in run["choices"]


@pytest.mark.slow  # child interpreters
def test_any_other_word_adds_the_entry_points_commands() -> None:
    """`fedgen --help` and `fedgen submit` see the client's verbs beside the built-ins."""
    for word in (None, "submit"):
        seen = _probe(word)
        assert {"submit", "runs", "follow", "pull", "push", "cancel"} <= set(seen["choices"])
        assert {"run", "resume", "validate", "export"} <= set(seen["choices"])
        assert seen["client"] is True


def test_a_broken_entry_point_warns_and_leaves_the_built_ins(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = metadata.EntryPoint("broken", "no_such_module.verbs:add_parsers", cli.COMMANDS_GROUP)
    monkeypatch.setattr(metadata, "entry_points", lambda group: [broken])
    parser = cli.build_parser(None)
    assert {"run", "resume", "validate"} <= _choices(parser)
    assert "submit" not in _choices(parser)
    err = capsys.readouterr().err
    assert "commands of no_such_module.verbs:add_parsers not loaded (ModuleNotFoundError" in err


def test_the_command_word_is_the_first_that_is_not_an_option() -> None:
    assert cli._command_word(["--help"]) is None
    assert cli._command_word(["run", "spec.yaml", "--json"]) == "run"
    assert cli._command_word([]) is None
