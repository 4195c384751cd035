"""Every results document, downstream/benchmarks/*.md, says at its top
which upstream base and which commit of this repository its numbers come
from: a paragraph that starts "Base: QEMU <version>" within its first 5
lines and names at least one commit of this repository, and every commit
it names pins that version (or one of the versions it names) in
bin/common.sh. Hashes in backquotes, such as build/src commits, are not
this repository's and are not checked."""

import re

import pytest

from conftest import run
from harness.paths import REPO

BENCHMARKS = REPO / "downstream" / "benchmarks"
BASE = re.compile(r"Base: QEMU \d+\.\d+\.\d+\b")
VERSION = re.compile(r"\bQEMU (\d+\.\d+\.\d+)\b")
CODE = re.compile(r"`[^`]*`")
HASH = re.compile(r"\b[0-9a-f]{7,40}\b")
PIN = re.compile(r"^QEMU_DEBIAN_VERSION=(?:\d+:)?(\d+\.\d+\.\d+)\+", re.M)


def base_paragraph(text):
    """The paragraph of @text that starts with "Base: QEMU <version>" in
    its first 5 lines, joined into one line, or None."""
    lines = text.split("\n")
    for start, line in enumerate(lines[:5]):
        if BASE.match(line):
            end = start
            while end < len(lines) and lines[end].strip():
                end += 1
            return " ".join(lines[start:end])
    return None


def base_problems(document, text, pinned):
    """What is wrong with @document's base paragraph, one line each;
    @pinned(commit) is the upstream version that commit of this
    repository pins, or None where there is no such commit."""
    paragraph = base_paragraph(text)
    if paragraph is None:
        return [f"{document}: no 'Base: QEMU <version>' paragraph in its "
                "first 5 lines"]
    versions = set(VERSION.findall(paragraph))
    commits = HASH.findall(CODE.sub("", paragraph))
    if not commits:
        return [f"{document}: its base paragraph names no commit"]
    problems = []
    for commit in commits:
        version = pinned(commit)
        if version is None:
            problems.append(f"{document}: {commit} is no commit of this "
                            "repository")
        elif version not in versions:
            problems.append(f"{document}: {commit} pins QEMU {version}, "
                            f"not {' or '.join(sorted(versions))}")
    return problems


def pinned_in_repository(commit):
    """The QEMU version that @commit's bin/common.sh pins, or None."""
    proc = run(["git", "-C", REPO, "rev-parse", "--verify", "-q",
                f"{commit}^{{commit}}"])
    if proc.returncode != 0:
        return None
    proc = run(["git", "-C", REPO, "show",
                f"{proc.stdout.strip()}:bin/common.sh"])
    match = PIN.search(proc.stdout) if proc.returncode == 0 else None
    return match.group(1) if match else ""


def test_every_results_document_names_its_base_and_commit():
    documents = sorted(BENCHMARKS.glob("*.md"))
    assert documents
    problems = []
    for path in documents:
        problems += base_problems(path.relative_to(REPO).as_posix(),
                                  path.read_text(), pinned_in_repository)
    assert problems == []


PINS = {"799afcb": "10.0.13", "3e2fa6c": "10.2.2"}.get
NO_BASE = "no 'Base: QEMU <version>' paragraph in its first 5 lines"


@pytest.mark.parametrize("text, problem", [
    ("Numbers.\n", NO_BASE),
    ("\n\n\nBase: QEMU 10.2.2 + the series at commit 3e2fa6c.\n", NO_BASE),
    ("Base: QEMU 10.2.2 + build/src `61448f8a`; measured 2026-11-28.\n",
     "its base paragraph names no commit"),
    ("Base: QEMU 10.2.2 + the series\nat commit 3e2fa6c and deadbee.\n",
     "deadbee is no commit of this repository"),
    ("Base: QEMU 10.2.2 + the series at commit 799afcb.\n",
     "799afcb pins QEMU 10.0.13, not 10.2.2"),
    ("Base: QEMU 10.2.2, some sections QEMU 10.0.13: commits 3e2fa6c, "
     "799afcb.\n", None),
], ids=["none", "below-line-5", "backquoted-only", "unknown-commit",
        "other-version", "two-bases"])
def test_the_base_check_sees_missing_lines_commits_and_versions(text,
                                                                problem):
    """Negative control: each wrong base paragraph is named, and a right
    one that names two bases is not."""
    expected = [f"x.md: {problem}"] if problem else []
    assert base_problems("x.md", "# Results\n\n" + text, PINS) == expected
