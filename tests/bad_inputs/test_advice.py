"""Every message of the bad-input catalogue names only options of the command that printed it
(advice such as "pass --force" or "--set data.eval_batch_size=..." given to a command without that
option leaves the user nothing to do); an example 'hseval X ...' in a message is checked against X."""

from __future__ import annotations

import re

import pytest

from tests.bad_inputs.cases import CASES
from tests.test_cli_options import COMMANDS, OPTION, _options, _settable

OURS = set().union(*map(_options, COMMANDS.values()))
EXAMPLE = re.compile(r"hseval ([a-z-]+(?: [a-z-]+)?)([^'\"]*)")


def _command(argv: list[str]) -> str:
    for words in (argv[:2], argv[:1]):
        name = " ".join(["hseval", *words])
        if name in COMMANDS:
            return name
    return "hseval"


def _check(command: str, text: str) -> None:
    parser = COMMANDS.get(command)
    assert parser is not None, (command, text)
    named = set(OPTION.findall(text)) & OURS
    assert named <= _options(parser), f"{command} has no {sorted(named - _options(parser))}: {text}"
    for key in re.findall(r"--set ([\w.]+)=", text):
        assert _settable(key), (command, key)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_message_names_only_options_of_its_command(case, good, tmp_path):
    folder = tmp_path / "case"
    folder.mkdir()
    command = _command(case.build(folder, good))
    if command == "hseval":  # the command line itself is what is wrong (an unknown command)
        return
    for words, rest in EXAMPLE.findall(case.expect):
        example = _command(words.split())
        if example != "hseval":
            _check(example, rest)
    _check(command, EXAMPLE.sub("", case.expect))
