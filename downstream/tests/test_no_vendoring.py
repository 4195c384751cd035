"""No file of this repository, and no file that the series adds to QEMU,
is a copy of an upstream QEMU file.

Upstream is a dependency: it comes from the pinned tarball and changes only
through patches/. A file here whose content equals an upstream file, also
after removing all whitespace, is a vendored copy.
"""

import hashlib
import subprocess
import tempfile

import pytest

from harness.paths import REPO, SRC

# Shorter contents (after whitespace removal) match by chance: licence
# stubs, empty __init__.py files.
MIN_SIGNIFICANT_BYTES = 64


def fingerprint(data):
    squeezed = b"".join(data.split())
    if len(squeezed) < MIN_SIGNIFICANT_BYTES:
        return None
    return hashlib.sha256(squeezed).hexdigest()


def git_blobs(tree_ish):
    """Yield (path, content) of every file of tree_ish in build/src."""
    src = SRC
    listing = subprocess.run(["git", "-C", src, "ls-tree", "-r", "-z",
                              tree_ish], capture_output=True, check=True)
    entries = [e.split(b"\t", 1) for e in listing.stdout.split(b"\0") if e]
    entries = [(meta.split()[2], path.decode()) for meta, path in entries
               if meta.split()[1] == b"blob"]
    with tempfile.TemporaryFile() as requests:
        requests.write(b"".join(oid + b"\n" for oid, _ in entries))
        requests.seek(0)
        batch = subprocess.Popen(["git", "-C", src, "cat-file", "--batch"],
                                 stdin=requests, stdout=subprocess.PIPE)
    for _, path in entries:
        size = int(batch.stdout.readline().split()[2])
        yield path, batch.stdout.read(size)
        batch.stdout.read(1)
    batch.wait()


def own_files():
    """Yield (path, content) of this repository's files, patches aside,
    and of the files that the series adds to QEMU."""
    listing = subprocess.run(["git", "-C", REPO, "ls-files", "-z", "--cached",
                              "--others", "--exclude-standard"],
                             capture_output=True, check=True)
    for path in listing.stdout.decode().split("\0"):
        if path and not path.startswith("patches/") and \
                (REPO / path).is_file():
            yield path, (REPO / path).read_bytes()
    added = subprocess.run(["git", "-C", SRC, "diff", "--name-only",
                            "--diff-filter=A", "upstream", "HEAD"],
                           capture_output=True, text=True, check=True)
    for path in added.stdout.split():
        yield path, (SRC / path).read_bytes()


def copies(files, upstream_index):
    """Return 'ours == theirs' for each of files found in upstream_index."""
    found = []
    for path, data in files:
        theirs = upstream_index.get(fingerprint(data))
        if theirs:
            found.append(f"{path} == {theirs}")
    return found


@pytest.fixture(scope="module")
def upstream_index():
    if not (SRC / ".git").is_dir():
        pytest.fail("no build/src; run bin/assemble first")
    index = {}
    for path, data in git_blobs("upstream"):
        key = fingerprint(data)
        if key:
            index.setdefault(key, path)
    assert len(index) > 5000, "the upstream tree looks incomplete"
    return index


def test_no_file_is_an_upstream_copy(upstream_index):
    assert copies(own_files(), upstream_index) == []


def test_a_reformatted_copy_is_detected(upstream_index):
    path, data = next(git_blobs("upstream:util"))
    reformatted = data.replace(b"\n", b"\r\n").replace(b"    ", b"\t")
    assert copies([("mine.c", reformatted)], upstream_index) == \
        [f"mine.c == util/{path}"]
