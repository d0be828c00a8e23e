"""``python -m silo_nb``: one face for the programs; a wrong command is one line that says what to type."""

from __future__ import annotations

import pytest

from silo_nb.cli import COMMANDS, main


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    said = capsys.readouterr().out
    assert all(f"  {name} " in said for name in COMMANDS), said


def test_no_command_is_usage_and_a_failure(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert capsys.readouterr().out.startswith("usage: python -m silo_nb {install,demo,run}")


def test_an_unknown_command_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["instal"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown command 'instal'" in err and "usage:" in err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_command_takes_its_own_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main([command, "--help"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: python -m silo_nb {command}")
