"""What the package promises as a package: CI runs the README's test
command, one version everywhere, the type hints ship, 0.1's import paths
still work (and warn), and a Spark or picture command without its extra
says so in one line."""

from __future__ import annotations

import importlib
import importlib.metadata
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import pytest

import sharp_cer
from sharp_cer._extras import check, missing, require
from sharp_cer.errors import MissingExtraError, SharpCerError

ROOT = Path(__file__).parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _readme_commands() -> list[str]:
    """The lines of README.md's first fenced block: install and demo, then the test command."""
    lines = (ROOT / "README.md").read_text().splitlines()
    first = lines.index("```")
    return lines[first + 1 : lines.index("```", first + 1)]


def test_ci_runs_the_readme_test_command_as_written() -> None:
    script = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    # the command is the script's last line, so its exit code is the script's
    assert script[-1] == _readme_commands()[1]
    assert script[:-1] == ["set -euo pipefail", 'cd "$(dirname "$0")/.."', "set -x"]


def test_the_readme_commands_install_what_they_run() -> None:
    demo, tests = _readme_commands()
    assert "-e '.[spark,plot]'" in demo and demo.endswith("sharp-cer demo")  # the demo runs on Spark and draws
    assert "-e '.[dev]'" in tests and ".venv/bin/lint-imports" in tests
    dev = PYPROJECT["project"]["optional-dependencies"]["dev"]
    assert "sharp-cer[spark,plot]" in dev and any(d.startswith("import-linter") for d in dev)


def test_the_base_install_has_neither_spark_nor_plot() -> None:
    base = " ".join(PYPROJECT["project"]["dependencies"])
    extras = PYPROJECT["project"]["optional-dependencies"]
    for name in ("pyspark", "protobuf", "matplotlib", "pydot"):
        assert name not in base
    assert [d.split(">")[0] for d in extras["spark"]] == ["pyspark", "protobuf"]
    assert [d.split(">")[0] for d in extras["plot"]] == ["matplotlib", "pydot"]


def test_one_version_everywhere() -> None:
    assert sharp_cer.__version__ == PYPROJECT["project"]["version"] == "0.2.0"
    assert importlib.metadata.version("sharp-cer") == sharp_cer.__version__


def test_the_type_hints_ship() -> None:
    assert (ROOT / "sharp_cer" / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["sharp_cer"]


def test_the_alias_packages_ship_and_are_type_checked() -> None:
    """0.1's top-level ``planner`` and ``shedding`` must be installed to warn."""
    found = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    assert {"planner*", "shedding*"} <= set(found)
    assert {"planner", "shedding"} <= set(PYPROJECT["tool"]["mypy"]["packages"])


@pytest.mark.parametrize(
    ("old", "new", "member"),
    [("planner", "sharp_cer.planner", "plan"), ("shedding", "sharp_cer.shedding", "sharp")],
)
def test_an_old_top_level_import_warns_and_is_the_new_package(
    monkeypatch: pytest.MonkeyPatch, old: str, new: str, member: str
) -> None:
    # a fresh import, as in a user's process: earlier tests may have imported the alias already
    for name in [n for n in sys.modules if n == old or n.startswith(old + ".")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.warns(DeprecationWarning, match=rf"the package '{old}' moved to '{new}' in sharp-cer 0.2.0") as caught:
        alias = __import__(old)  # as an import statement does (importlib.import_module would be the importer)
    assert alias is importlib.import_module(new)
    assert getattr(alias, member) is importlib.import_module(f"{new}.{member}")
    assert caught[0].filename == __file__  # the warning points at the importing line, not at sharp-cer
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a submodule of the alias imports without a second warning
        assert importlib.import_module(f"{old}.{member}") is importlib.import_module(f"{new}.{member}")


def test_an_old_name_imported_from_an_old_module_is_the_new_object(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in sys.modules if n == "planner" or n.startswith("planner.")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.warns(DeprecationWarning):
        from planner.compile import compile_plan
    from sharp_cer.planner import compile_plan as new

    assert compile_plan is new


def test_a_missing_extra_is_one_line_with_its_fix() -> None:
    error = missing(["pyspark", "matplotlib"], "sharp-cer run")
    assert isinstance(error, SharpCerError) and isinstance(error, ImportError)
    assert str(error) == (
        "error: sharp-cer run needs PySpark and matplotlib, which are not installed; "
        "fix: pip install 'sharp-cer[spark,plot]'"
    )


def test_require_and_check_see_an_installed_extra_and_a_missing_one(monkeypatch: pytest.MonkeyPatch) -> None:
    assert require("matplotlib", "a test").__name__ == "matplotlib"
    check(["pyspark", "matplotlib", "pydot"], "a test")
    monkeypatch.setitem(sys.modules, "pydot", None)  # None in sys.modules: Python's "cannot be imported"
    with pytest.raises(MissingExtraError, match=r"^error: a test needs pydot, which is not installed; fix: pip"):
        require("pydot", "a test")
    with pytest.raises(MissingExtraError, match=r"^error: a test needs pydot, which is not installed; fix: pip"):
        check(["pyspark", "pydot"], "a test")


def test_require_keeps_a_broken_installation_s_own_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the optional module itself missing is a missing extra; a
    dependency of it missing is a broken installation, with its traceback."""

    def fails(name: str) -> object:
        raise ModuleNotFoundError("No module named 'kiwisolver'", name="kiwisolver")

    monkeypatch.setattr(importlib, "import_module", fails)
    with pytest.raises(ModuleNotFoundError) as raised:
        require("matplotlib", "a test")
    assert not isinstance(raised.value, MissingExtraError)


#: run in a fresh interpreter: hide the modules named in argv[1] (as if not installed), then run the CLI
_BLOCKED_CLI = """
import sys

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in sys.argv[1].split(","):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
from sharp_cer.cli import main
code = main(sys.argv[2:])
assert not [m for m in sys.modules if m.partition(".")[0] in sys.argv[1].split(",")]
sys.exit(code)
"""


@pytest.mark.parametrize(
    ("blocked", "argv", "message"),
    [
        (
            "pyspark",
            ["run", "configs/stock_trading.toml", "--generate", "10"],
            "error: sharp-cer run needs PySpark, which is not installed; fix: pip install 'sharp-cer[spark]'",
        ),
        (
            "pyspark,matplotlib",
            ["demo", "--out", "{tmp}/demo"],
            "error: sharp-cer demo needs PySpark and matplotlib, which are not installed; "
            "fix: pip install 'sharp-cer[spark,plot]'",
        ),
        (
            "pyspark",
            ["stream", "configs/stock_trading.toml", "--source", "{tmp}", "--checkpoint", "{tmp}/c", "--out", "{tmp}"],
            "error: sharp-cer stream needs PySpark, which is not installed; fix: pip install 'sharp-cer[spark]'",
        ),
        (
            "matplotlib",
            ["explain", "configs/stock_trading.toml", "--generate", "0", "--png", "{tmp}/plan.png"],
            "error: the plan's drawing (explain --png) needs matplotlib, which is not installed; "
            "fix: pip install 'sharp-cer[plot]'",
        ),
        (
            "pydot",
            ["explain", "configs/stock_trading.toml", "--generate", "0", "--dot", "{tmp}/plan.dot"],
            "error: the plan's DOT graph (explain --dot) needs pydot, which is not installed; "
            "fix: pip install 'sharp-cer[plot]'",
        ),
    ],
)
def test_a_command_without_its_extra_says_so_in_one_line(
    tmp_path: Path, blocked: str, argv: list[str], message: str
) -> None:
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    done = subprocess.run(
        [sys.executable, "-c", _BLOCKED_CLI, blocked, *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stderr, done.stdout) == (2, message + "\n", "")
    assert not (tmp_path / "demo").exists()  # the demo stopped before its work


def test_the_spark_package_without_pyspark_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in sys.modules if n == "sharp_cer.spark" or n.startswith("sharp_cer.spark.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyspark", None)
    with pytest.raises(MissingExtraError, match=r"^error: sharp_cer.spark needs PySpark, .* 'sharp-cer\[spark\]'$"):
        importlib.import_module("sharp_cer.spark")
