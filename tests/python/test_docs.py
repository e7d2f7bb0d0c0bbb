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


def test_type_stubs_name_what_the_package_has(tmp_path):
    import ast

    import kiln

    tree = ast.parse((ROOT / "python" / "kiln" / "__init__.pyi").read_text())
    names, members = set(), {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names.add(node.name)
            members[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)} | {
                n.target.id for n in node.body if isinstance(n, ast.AnnAssign)}
        elif isinstance(node, ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
    public = {n for n in names if not n.startswith("_")}
    assert public == set(kiln.__all__)
    spec = kiln.load("std:math.toml")
    instances = {"Kernel": spec.compile("add", "interp"), "Spec": spec, "Cache": kiln.cache,
                 "SpecError": kiln.SpecError("x", "f.toml", 1, 2),
                 "Function": spec.function("exp", "interp", batch_rank=1),
                 "Generation": kiln.Generation([1], 0.5, 0.25)}
    header = b'{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
    (tmp_path / "w.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + bytes(4))
    instances["Weights"] = kiln.Weights(tmp_path / "w.safetensors")
    assert set(members) == set(instances) | {"RuntimeInfo", "ConfigKey"}
    for cls, instance in instances.items():
        for attr in members[cls] - {"__init__"}:
            assert hasattr(instance, attr), f"{cls}.{attr}"
    assert set(kiln.RuntimeInfo._fields) == members["RuntimeInfo"]
    assert set(kiln.ConfigKey._fields) == members["ConfigKey"]


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_torch_operator_example():
    assert run(next(e for e in examples() if "torch_op" in e)) == "torch.Size([4, 100])\n"


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_autograd_example():
    assert run(next(e for e in examples() if "gradcheck" in e)) == ""
