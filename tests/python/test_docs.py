"""docs/python.md's examples run and print what the page says."""

import contextlib
import importlib.util
import io
import re

import pytest

from conftest import ROOT


def examples():
    text = (ROOT / "docs" / "python.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, re.S)


def run(code):
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "docs/python.md", "exec"), {})
    return printed.getvalue()


def test_first_example_prints_what_the_page_says():
    assert run(examples()[0]) == "True\n(2, 7) {'batch0': 2, 'N': 7}\n"


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_torch_example():
    assert run(examples()[1]).startswith("tensor([1.0000, 1.5000, 2.0000,")
