"""What the lint checks' tests share: a check loaded from its script, and the lines a check finds
in a planted source file."""

import importlib.util
import pathlib
import tempfile

HERE = pathlib.Path(__file__).resolve().parent


def load(script: str):
    """The check in `script` (a file beside this one) as a module."""
    spec = importlib.util.spec_from_file_location(script.removesuffix(".py").replace("-", "_"), HERE / script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lines_found(check, source: str) -> list[int]:
    """The line numbers `check.findings` reports for `source`, written to a file of its own."""
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "Planted.swift"
        path.write_text(source, encoding="utf-8")
        return [number for number, _ in check.findings(path)]
