"""Where things are: this repository, its build/ folder and what the
build steps put there.  Every module and test takes its paths from here.

QEMU_BUILD (a meson build folder) and QEMU (a qemu-system-aarch64 binary)
in the environment select the QEMU that the tests run and the tools run
by default: build/qemu unless set (build/baseline for a negative
control)."""

import os
import pathlib
import re
import shlex

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = REPO / "build"
SRC = BUILD / "src"
GUEST = BUILD / "guest"         # bin/guest-kernel: Debian's kernel, initramfs
IMAGE = BUILD / "image"         # bin/guest-image: the Debian arm64 image
BUILD_IMAGE = BUILD / "build-image"   # bin/guest-build-image: a toolchain
PATCHED = BUILD / "qemu" / "qemu-system-aarch64"
BASELINE = BUILD / "baseline" / "qemu-system-aarch64"
DEBUG = BUILD / "debug" / "qemu-system-aarch64"
DEBUG_PLUGINS = BUILD / "debug" / "tests" / "tcg" / "plugins"  # lib*.so

QEMU_BUILD = pathlib.Path(os.environ.get("QEMU_BUILD",
                                         BUILD / "qemu")).absolute()
QEMU = pathlib.Path(os.environ.get("QEMU", QEMU_BUILD /
                                   "qemu-system-aarch64")).absolute()
# The tests/tcg aarch64 system tests: their build, and their sources.
TCG_DIR = QEMU_BUILD / "tests" / "tcg" / "aarch64-softmmu"
TCG_SRC = SRC / "tests" / "tcg"


def upstream_pin(repo=REPO) -> dict:
    """The pinned upstream of @repo's bin/common.sh, its one record:
    QEMU_DEBIAN_PACKAGE, QEMU_DEBIAN_VERSION, QEMU_DEBIAN_SUITE,
    QEMU_ORIG_TARBALL and QEMU_ORIG_SHA256 by name."""
    text = (pathlib.Path(repo) / "bin" / "common.sh").read_text()
    return dict(re.findall(r"^(QEMU_(?:DEBIAN|ORIG)_\w+)=(\S+)$", text,
                           re.M))


def upstream_tarball(repo=REPO) -> pathlib.Path:
    """bin/fetch-upstream's verified copy of the pinned tarball."""
    return pathlib.Path(repo) / "build" / "cache" / \
        upstream_pin(repo)["QEMU_ORIG_TARBALL"]


# A host path in one word of a command line: the word itself, or after
# "NAME=" or "--option=" (--binary qemu=/x; file=/x,format=raw).
_PATH_WORD = re.compile(r"((?:--)?[\w-]+=)?(/[^,\s]*)(,\S*)?")
# The kernel's file systems, named alike on every machine.
_SAME_EVERYWHERE = ("/dev/", "/proc/", "/sys/")


def repo_relative(path) -> str:
    """@path relative to this repository (build/qemu/..., or
    ../shared/... beside it), so that what is recorded does not name the
    folders of the machine it ran on."""
    path = str(path)
    if not os.path.isabs(path) or path.startswith(_SAME_EVERYWHERE):
        return path
    return os.path.relpath(path, REPO)


def repo_relative_command(command: str) -> str:
    """@command, a shell command line, with every host path in it made
    repo_relative(); the guest's kernel command line (the word after
    -append: root=/dev/vda rdinit=/tlb-bench) and words with blanks in
    them are left as they are."""
    words = shlex.split(command)
    relative = []
    for i, word in enumerate(words):
        m = _PATH_WORD.fullmatch(word)
        if m and not (i and words[i - 1] == "-append"):
            word = (m.group(1) or "") + repo_relative(m.group(2)) + \
                (m.group(3) or "")
        relative.append(word)
    return command if relative == words else shlex.join(relative)


COVER_LETTER = "0000-cover-letter.patch"


def series(repo=REPO):
    """The patches of @repo's series in order: patches/*.patch but the
    cover letter, which 'git am' would take for an empty patch."""
    return sorted(p for p in (pathlib.Path(repo) / "patches").glob("*.patch")
                  if p.name != COVER_LETTER)
