"""The files a person hands nodeqc (a profile, a scenario, a baseline, a fabric's host list and
topology) are read in one place (safefile.read_input, as_text, as_toml), and a file that cannot be
read is told in the same words whichever it is. Before, each said it its own way: "cannot read:",
"cannot read it:", "cannot read scenario: RecursionError: ...", "not text (UTF-8)", and a FIFO given
as a profile or a scenario was "file not found"."""

import os

import pytest

from nodeqc.cli.main import main

INPUTS = {  # the command line naming the file, and what the file is called in the line
    "profile": (["--headless", "--simulate", "h100", "--profile"], "profile"),
    "scenario": (["--headless", "--simulate"], "scenario"),
    "baseline": (["--headless", "--simulate", "h100", "--quick", "--baseline"], "baseline"),
    "topology": (["fabric", "--simulate", "4", "--topology"], "topology file"),
    "hosts": (["fabric", "--launch", "true", "--hosts"], "host list"),
}


def _said(capsys, kind, path) -> str:
    args, _ = INPUTS[kind]
    given = f"@{path}" if kind == "hosts" else str(path)
    assert main([*args, given]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if "profile auto" not in line]
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("kind", INPUTS)
def test_each_input_says_why_it_cannot_be_read_in_the_same_words(tmp_path, capsys, kind):
    what = INPUTS[kind][1]
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"# \xff\n")
    assert _said(capsys, kind, bad).endswith(f"{bad}: cannot read it: not UTF-8 text (byte 0xff at offset 2)")
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)  # there, but no file: never read (it would hang), and not "not found"
    assert _said(capsys, kind, fifo).endswith(f"{fifo}: not a regular file (a FIFO): not a {what}")
    huge = tmp_path / "huge.toml"
    with open(huge, "wb") as f:
        f.truncate(64 << 20)  # sparse: larger than any of these inputs
    line = _said(capsys, kind, huge)
    assert f"{huge}: file of {64 << 20} bytes, more than any {what} (" in line and line.endswith(f"): not a {what}")


@pytest.mark.parametrize("kind", ["profile", "scenario", "baseline"])
def test_the_toml_inputs_say_invalid_toml_alike_even_nested_too_deeply(tmp_path, capsys, kind):
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    assert _said(capsys, kind, deep).endswith(f"{deep}: invalid TOML: arrays or tables nested too deeply")
    broken = tmp_path / "broken.toml"
    broken.write_text("x = = 1\n")
    assert _said(capsys, kind, broken).endswith(f"{broken}: invalid TOML: Invalid value (at line 1, column 5)")
