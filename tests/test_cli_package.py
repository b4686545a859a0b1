"""The command line's package: short functions, and every command reachable."""

from __future__ import annotations

import ast
from pathlib import Path

import sharp_cer.cli as cli
from sharp_cer.cli.parser import COMMANDS, build_parser

PACKAGE = Path(cli.__file__).parent


def _long_functions(limit: int) -> list[str]:
    """Every function of the package longer than ``limit`` lines, with its file and length."""
    out = []
    for path in sorted(PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > limit:
                    out.append(f"{path.name}:{node.lineno} {node.name} ({lines} lines)")
    return out


def test_no_function_of_the_cli_is_over_80_lines() -> None:
    assert _long_functions(80) == []


def test_the_length_check_finds_a_long_function() -> None:
    assert _long_functions(5), "the walk finds the package's functions"


def test_every_command_has_a_module_with_its_parser_options_and_run() -> None:
    choices = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert list(choices) == list(COMMANDS) == ["check", "match", "explain", "run", "stream", "demo"]
    for name, module in COMMANDS.items():
        assert callable(module.add_parser) and callable(module.options) and callable(module.execute), name
