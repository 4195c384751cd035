"""One QEMU-facing layer: every QEMU process that our Python starts is
started by downstream/harness/machine.py (a Guest on qemu.machine, or
run_qemu()), so how QEMU is launched, and how its "info jit" is read,
lives in one place.

Checked statically on every .py file of downstream/ but machine.py: none
imports qemu.machine or qemu.qmp, none uses os.system, os.popen, os.exec*
or os.spawn*, and no subprocess call, nor conftest's run(), gets a command
that names QEMU (its first word, or a variable it is assigned from,
mentions "qemu").  Left out: downstream/functional/, the functional test
of our Debian image, which runs inside QEMU's own tests/functional
framework and launches QEMU through it."""

import ast
import re
from typing import Iterator, List

import pytest

from harness.paths import REPO

DOWNSTREAM = REPO / "downstream"
LAYER = DOWNSTREAM / "harness" / "machine.py"
SOURCES = sorted(p for p in DOWNSTREAM.rglob("*.py")
                 if p != LAYER and "functional" not in p.parts
                 and "__pycache__" not in p.parts)

SPAWNERS = {"run", "Popen", "call", "check_call", "check_output"}
OS_SPAWNERS = re.compile(r"^(system|popen|exec\w*|spawn\w*|posix_spawn\w*)$")
NAMES_QEMU = re.compile(r"qemu", re.I)


def assigned(tree: ast.AST, name: str) -> Iterator[ast.expr]:
    """The values assigned to @name anywhere in @tree."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name
                for t in node.targets):
            yield node.value


def command(argv: ast.expr) -> ast.expr:
    """The part of an argv expression that names the program: the first
    element of a list or tuple, else the whole expression; of a path
    joined with "/", its last part (QEMU_BUILD / "tests" / "x" runs x)."""
    if isinstance(argv, (ast.List, ast.Tuple)) and argv.elts:
        first = argv.elts[0]
        argv = first.value if isinstance(first, ast.Starred) else first
    while isinstance(argv, ast.BinOp) and isinstance(argv.op, ast.Div):
        argv = argv.right
    return argv


def names_qemu(source: str, tree: ast.AST, expr: ast.expr,
               depth: int = 0) -> bool:
    if NAMES_QEMU.search(ast.get_source_segment(source, expr) or ""):
        return True
    if isinstance(expr, ast.Name) and depth < 3:
        return any(names_qemu(source, tree, command(value), depth + 1)
                   for value in assigned(tree, expr.id))
    return False


def violations(source: str) -> List[str]:
    """What in @source starts QEMU outside the layer, one line each."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and \
                node.module.startswith(("qemu.machine", "qemu.qmp")):
            found.append(f"{node.lineno}: imports {node.module}")
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: imports {a.name}" for a in node.names
                      if a.name.startswith(("qemu.machine", "qemu.qmp"))]
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and \
                isinstance(func.value, ast.Name) and func.value.id == "os" \
                and OS_SPAWNERS.match(func.attr):
            found.append(f"{node.lineno}: os.{func.attr}")
        called = func.attr if isinstance(func, ast.Attribute) else \
            func.id if isinstance(func, ast.Name) else None
        if called in SPAWNERS and node.args and \
                names_qemu(source, tree, command(node.args[0])):
            found.append(f"{node.lineno}: {called}() of "
                         f"{ast.get_source_segment(source, node.args[0])}")
    return found


@pytest.mark.parametrize("path", SOURCES,
                         ids=[str(p.relative_to(DOWNSTREAM)) for p in SOURCES])
def test_qemu_is_launched_only_by_harness_machine(path):
    assert violations(path.read_text()) == [], \
        f"{path.relative_to(REPO)} starts QEMU; use harness.machine"


@pytest.mark.parametrize("snippet", [
    "subprocess.run([QEMU, '-version'])",
    "run([qemu, *VIRT, '-S'], timeout=60)",
    "argv = [paths.QEMU, '-help']\nsubprocess.Popen(argv)",
    "subprocess.run(['build/qemu/qemu-system-aarch64', '-help'])",
    "run([QEMU_BUILD / 'qemu-system-aarch64', '-S'])",
    "os.execv(binary, [binary])",
    "from qemu.machine import QEMUMachine",
])
def test_the_check_sees_a_launch(snippet):
    """Negative control: each of these launches QEMU by hand."""
    assert violations(snippet)


def test_the_check_lets_other_commands_be():
    assert violations("run(['make', '-C', TCG_DIR, f'QEMU={QEMU}'])\n"
                      "subprocess.run(['git', '-C', SRC, 'describe'])\n"
                      "from harness.machine import run_qemu\n"
                      "run_qemu(QEMU, ['-help'], 60)\n"
                      "run([QEMU_BUILD / 'tests' / 'bench' / 'b', '-n'])\n"
                      ) == []
