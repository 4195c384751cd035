"""patches/ is the whole series: 'git am' of it onto a fresh extraction of
the pinned tarball gives exactly the tree we build, build/src, and no QEMU
file of ours lives outside it. The docs, our pages included, build
without a warning."""

from conftest import run
from harness.paths import BUILD, REPO, SRC, series

# This repository's tooling; everything else of ours is in patches/.
TOOLING = {".ci", ".gitignore", "Makefile", "README.md", "bin", "downstream",
           "patches", "python-requirements.txt"}
GIT_ENV = {"PATH": "/usr/bin:/bin", "GIT_CONFIG_GLOBAL": "/dev/null",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def git(cwd, *args, **kwargs):
    proc = run(["git", "-C", cwd, *args], env=GIT_ENV, **kwargs)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_git_am_onto_the_tarball_gives_build_src(tmp_path):
    tarball = run([REPO / "bin" / "fetch-upstream"], timeout=600)
    assert tarball.returncode == 0, tarball.stderr
    tree = tmp_path / "qemu"
    tree.mkdir()
    untar = run(["tar", "-xf", tarball.stdout.strip(), "-C", tree,
                 "--strip-components=1"], timeout=600)
    assert untar.returncode == 0, untar.stderr
    git(tree, "init", "-q")
    git(tree, "add", "-A", "-f", timeout=600)
    git(tree, "commit", "-q", "-m", "pristine")
    patches = [str(p) for p in series()]
    git(tree, "am", "-q", *patches, timeout=600)

    # Equal trees are equal bytes, file modes included; build/src must
    # hold nothing beside its commits.
    assert git(tree, "rev-parse", "HEAD^{tree}") == \
        git(SRC, "rev-parse", "HEAD^{tree}")
    assert git(SRC, "status", "--porcelain", "--untracked-files=all") == ""


def test_no_qemu_file_outside_the_series():
    ours = set(git(REPO, "ls-files", "--cached", "--others",
                   "--exclude-standard").split("\n")) - {""}
    assert {path.split("/")[0] for path in ours} <= TOOLING
    upstream = set(git(SRC, "ls-tree", "--name-only", "upstream").split())
    # Our Makefile and .gitignore are this repository's, not QEMU's.
    assert TOOLING & upstream == {"Makefile", ".gitignore"}


def test_docs_build_without_warnings():
    """bin/build docs: Sphinx with -W, so a warning fails the build."""
    proc = run([REPO / "bin" / "build", "docs"], timeout=3000)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    manual = BUILD / "docs" / "docs" / "manual"
    for page, title in (("tcg-regions", "TCG code buffer regions"),
                        ("tcg-tlb-relaxed", "Relaxed broadcast TLB")):
        assert title in (manual / "devel" / f"{page}.html").read_text()
    index = (manual / "devel" / "index-tcg.html").read_text()
    assert "tcg-regions.html" in index and "tcg-tlb-relaxed.html" in index
    removed = (manual / "about" / "removed-features.html").read_text()
    assert "-tb-size" not in removed
