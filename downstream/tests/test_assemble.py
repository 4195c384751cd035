"""bin/assemble and bin/export-patches keep build/src and patches/ in step,
and refuse to lose work. Runs on a scratch copy of this repository."""

import shutil

import pytest

from conftest import run
from harness.paths import COVER_LETTER, REPO, series, upstream_tarball


# git's automatic gc runs in the foreground, so that no detached gc still
# writes to a tree the test is removing.
NO_DETACHED_GC = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "gc.autoDetach",
                  "GIT_CONFIG_VALUE_0": "false"}


def git(*args, cwd):
    proc = run(["git", "-c", "gc.autoDetach=false", "-C", cwd, *args])
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A copy of bin/ and patches/ in a new git repo, assembled once."""
    repo = tmp_path_factory.mktemp("repo")
    for d in ("bin", "patches"):
        shutil.copytree(REPO / d, repo / d)
    git("init", "-q", cwd=repo)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(repo),
           "QEMU_TARBALL": str(upstream_tarball()),
           "GIT_CONFIG_GLOBAL": "/dev/null", **NO_DETACHED_GC}
    proc = run([repo / "bin" / "assemble"], env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return repo, env


def assemble(scratch):
    repo, env = scratch
    return run([repo / "bin" / "assemble"], env=env, timeout=600)


def test_series_and_baseline(scratch):
    repo, _ = scratch
    src = repo / "build" / "src"
    patches = series(repo)
    assert git("rev-list", "--count", "upstream..HEAD", cwd=src) == \
        str(len(patches))
    assert git("log", "-1", "--format=%an", "HEAD", cwd=src) != "QEMU upstream"
    assert git("rev-parse", "HEAD", cwd=repo / "build" / "baseline-src") == \
        git("rev-parse", "baseline", cwd=src)
    assert "Downstream-Baseline: yes" in \
        git("log", "-1", "--format=%B", "baseline", cwd=src)


def test_reassemble_is_a_no_op(scratch):
    src = scratch[0] / "build" / "src"
    head = git("rev-parse", "HEAD", cwd=src)
    assert assemble(scratch).returncode == 0
    assert git("rev-parse", "HEAD", cwd=src) == head


def test_unexported_commits_are_kept(scratch):
    repo, env = scratch
    src = repo / "build" / "src"
    version = (src / "VERSION").read_text().strip()
    (src / "VERSION").write_text(f"{version}-work\n")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam",
        "work: not exported yet", cwd=src)
    work = git("rev-parse", "HEAD", cwd=src)
    first = series(repo)[0]
    first.write_text(first.read_text() + "\n")

    proc = assemble(scratch)
    assert proc.returncode != 0
    assert "commits that patches/ lacks" in proc.stderr
    assert git("rev-parse", "HEAD", cwd=src) == work

    proc = run([repo / "bin" / "export-patches"], env=env)
    assert proc.returncode == 0, proc.stderr
    assert "work: not exported yet" in \
        series(repo)[-1].read_text()
    # The cover letter keeps its text and lists the new commit.
    cover = (repo / "patches" / COVER_LETTER).read_text()
    assert "*** BLURB HERE ***" not in cover
    assert "  work: not exported yet\n" in cover
    assert assemble(scratch).returncode == 0
    assert git("rev-parse", "HEAD", cwd=src) == work


def test_a_new_file_travels_in_the_series(scratch):
    """A file added in build/src is exported, and assembled again from
    patches/ alone."""
    repo, env = scratch
    src = repo / "build" / "src"
    (src / "tcg" / "ours.c").write_text("/* ours */\n")
    git("add", "tcg/ours.c", cwd=src)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm",
        "tcg: add ours.c", cwd=src)
    tree = git("rev-parse", "HEAD^{tree}", cwd=src)
    proc = run([repo / "bin" / "export-patches"], env=env)
    assert proc.returncode == 0, proc.stderr
    assert "new file mode" in \
        series(repo)[-1].read_text()

    shutil.rmtree(repo / "build" / "src")
    shutil.rmtree(repo / "build" / "baseline-src")
    assert assemble(scratch).returncode == 0
    assert (src / "tcg" / "ours.c").read_text() == "/* ours */\n"
    assert git("rev-parse", "HEAD^{tree}", cwd=src) == tree
