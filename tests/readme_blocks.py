"""The README's shell blocks, read as a shell would read them, for the test that runs them.

A block is run unless the line above its fence is ``<!-- readme-test: skip: REASON -->``.
A block's lines become commands: a trailing backslash continues a line, ``#`` starts a
comment (outside quotes), ``&&`` chains commands, and ``cat > FILE <<'EOF'`` ... ``EOF``
writes a file. ``python manage.py NAME ARGS`` is the only command a run block may hold;
anything else is an error naming the line, so a new kind of block needs a marker or a
runner, never a silent pass.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
FENCE = re.compile(r"^```sh\n(.*?)^```\n", re.M | re.S)
SKIP = re.compile(r"<!-- readme-test: skip: (.+?) -->\n$")
HEREDOC = re.compile(r"^cat > (\S+) <<'?(\w+)'?$")


@dataclass
class Block:
    line: int  # of the fence, 1-based
    text: str
    skip: str | None  # the marker's reason
    steps: list[tuple] = field(default_factory=list)  # ("manage", argv) | ("file", name, text)


def blocks(text: str | None = None) -> list[Block]:
    text = README.read_text() if text is None else text
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()]
        marker = SKIP.search(before[before.rfind("\n", 0, len(before) - 1) + 1 :])
        block = Block(before.count("\n") + 1, match.group(1), marker and marker.group(1))
        if not block.skip:
            block.steps = steps(block.text, block.line)
        found.append(block)
    return found


def steps(text: str, first_line: int = 0) -> list[tuple]:
    lines = text.replace("\\\n", " ").splitlines()
    out: list[tuple] = []
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line or line.startswith("#"):
            continue
        if heredoc := HEREDOC.match(line):
            end = lines.index(heredoc.group(2), i)
            out.append(("file", heredoc.group(1), "\n".join(lines[i:end]) + "\n"))
            i = end + 1
            continue
        for command in split_and(shlex.split(line, comments=True)):
            if command[:2] != ["python", "manage.py"] or len(command) < 3:
                raise ValueError(
                    f"README.md near line {first_line + i}: {shlex.join(command)!r} is not "
                    "`python manage.py ...`: give the block a readme-test marker or a runner"
                )
            out.append(("manage", command[2:]))
    return out


def split_and(tokens: list[str]) -> list[list[str]]:
    commands: list[list[str]] = [[]]
    for token in tokens:
        if token == "&&":
            commands.append([])
        else:
            commands[-1].append(token)
    return [c for c in commands if c]
