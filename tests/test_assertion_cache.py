"""The test modules' assertion rewriting, cached before the xdist workers start
(tests/assertion_cache.py): written once, read by pytest, written again when a module
changes."""

from __future__ import annotations

from pathlib import Path

import pytest
from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc

from tests.assertion_cache import cache_rewrites, modules_rewritten

ROOT = Path(__file__).resolve().parent.parent


def test_each_module_is_rewritten_once_and_again_when_it_changes(
    pytestconfig: pytest.Config, tmp_path: Path
) -> None:
    module = tmp_path / "test_example.py"
    module.write_text("def test_it():\n    x = 1\n    assert x == 2\n")
    pyc = tmp_path / "__pycache__" / f"test_example{PYC_TAIL}"

    assert cache_rewrites(pytestconfig, [module]) == 1
    code = _read_pyc(module, pyc)
    assert code is not None  # pytest reads it instead of rewriting the module
    namespace: dict[str, object] = {}
    exec(code, namespace)
    test_it = namespace["test_it"]
    assert callable(test_it)
    with pytest.raises(AssertionError, match=r"assert 1 == 2"):  # the rewritten assert
        test_it()
    assert cache_rewrites(pytestconfig, [module]) == 0  # up to date

    module.write_text("def test_it():\n    assert True\n")
    assert cache_rewrites(pytestconfig, [module]) == 1


def test_the_suites_test_modules_and_conftests_are_found() -> None:
    found = modules_rewritten(ROOT / "tests")
    assert ROOT / "tests" / "conftest.py" in found
    assert ROOT / "tests" / "faults" / "test_sign_in.py" in found
    assert ROOT / "tests" / "waiting.py" not in found  # not a test module: never rewritten
