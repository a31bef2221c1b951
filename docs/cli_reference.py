"""Write docs/cli.md from the parser itself, so the reference never drifts from `ragpipe --help`.

python docs/cli_reference.py          # rewrite docs/cli.md
python docs/cli_reference.py --check  # exit 1 when docs/cli.md differs (make lint runs this)
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

OUT = Path(__file__).with_name("cli.md")
WIDTH = "100"  # argparse wraps help to $COLUMNS: fixed, so the file is the same on every terminal


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    out = []
    for action in parser._actions:  # argparse keeps subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            seen = set()
            for name, sub in action.choices.items():
                if id(sub) in seen:  # an alias of a command already listed
                    continue
                seen.add(id(sub))
                out.append((name, sub))
    return out


def _walk(parser: argparse.ArgumentParser, path: list[str]) -> list[tuple[list[str], argparse.ArgumentParser]]:
    found = [(path, parser)]
    for name, sub in _subcommands(parser):
        found += _walk(sub, [*path, name])
    return found


def render() -> str:
    os.environ["COLUMNS"] = WIDTH
    from ragpipe.cli import build_parser

    lines = [
        "# The `ragpipe` command",
        "",
        "Generated from the parser by `python docs/cli_reference.py`; `make lint` fails when it is out of date.",
        "",
    ]
    commands = _walk(build_parser(), ["ragpipe"])
    lines += [f"- [`{' '.join(p)}`](#{'-'.join(p)})" for p, _ in commands[1:]]
    for path, parser in commands:
        lines += [
            "",
            f'<a id="{"-".join(path)}"></a>',
            f"## `{' '.join(path)}`",
            "",
            "```",
            parser.format_help().rstrip(),
            "```",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is out of date: run `python docs/cli_reference.py` and commit it", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
