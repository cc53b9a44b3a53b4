"""A message names only options of the command that printed it (advice such as "pass --force" or
"--set data.eval_batch_size=..." given to a command without that option leaves the user nothing to
do); an example 'hseval X ...' in a message is checked against X. The catalogue
(``test_catalogue.py``) checks every message that a bad input really prints with
:func:`check_advice`."""

from __future__ import annotations

import re

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


def check_advice(argv: list[str], message: str) -> None:
    """Every option and ``--set`` key that ``message`` (printed by ``hseval *argv``) names exists."""
    command = _command(argv)
    if command == "hseval":  # the command line itself is what is wrong (an unknown command)
        return
    for words, rest in EXAMPLE.findall(message):
        example = _command(words.split())
        if example != "hseval":
            _check(example, rest)
    _check(command, EXAMPLE.sub("", message))
