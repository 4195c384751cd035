"""bin/assemble and bin/export-patches keep build/src and patches/ in step,
and refuse to lose work. Runs on a scratch copy of this repository."""

import shutil

import pytest

from conftest import BUILD, REPO, run


def git(*args, cwd):
    proc = run(["git", "-C", cwd, *args])
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A copy of bin/ and patches/ in a new git repo, assembled once."""
    repo = tmp_path_factory.mktemp("repo")
    for d in ("bin", "patches"):
        shutil.copytree(REPO / d, repo / d)
    git("init", "-q", cwd=repo)
    tarball = BUILD / "cache" / "qemu_10.0.13+ds.orig.tar.xz"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(repo),
           "QEMU_TARBALL": str(tarball),
           "GIT_CONFIG_GLOBAL": "/dev/null"}
    proc = run([repo / "bin" / "assemble"], env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return repo, env


def assemble(scratch):
    repo, env = scratch
    return run([repo / "bin" / "assemble"], env=env, timeout=600)


def test_series_and_baseline(scratch):
    repo, _ = scratch
    src = repo / "build" / "src"
    patches = sorted((repo / "patches").glob("*.patch"))
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


def test_overlay_is_linked_and_ignored(scratch):
    repo = scratch[0]
    (repo / "docs" / "devel").mkdir(parents=True)
    (repo / "docs" / "devel" / "ours.rst").write_text("Ours\n====\n")
    assert assemble(scratch).returncode == 0
    link = repo / "build" / "src" / "docs" / "devel" / "ours.rst"
    assert link.is_symlink() and link.read_text() == "Ours\n====\n"
    assert git("status", "--porcelain", cwd=repo / "build" / "src") == ""
    (repo / "docs" / "devel" / "ours.rst").unlink()
    assert assemble(scratch).returncode == 0
    assert not link.is_symlink()


def test_own_file_may_not_shadow_upstream(scratch):
    repo = scratch[0]
    shadow = repo / "tcg" / "tcg.c"
    shadow.parent.mkdir()
    shadow.write_text("/* ours */\n")
    proc = assemble(scratch)
    shutil.rmtree(shadow.parent)
    assert proc.returncode != 0
    assert "shadow upstream files" in proc.stderr and "tcg/tcg.c" in proc.stderr


def test_unexported_commits_are_kept(scratch):
    repo, env = scratch
    src = repo / "build" / "src"
    (src / "VERSION").write_text("10.0.13-work\n")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam",
        "work: not exported yet", cwd=src)
    work = git("rev-parse", "HEAD", cwd=src)
    first = sorted((repo / "patches").glob("*.patch"))[0]
    first.write_text(first.read_text() + "\n")

    proc = assemble(scratch)
    assert proc.returncode != 0
    assert "commits that patches/ lacks" in proc.stderr
    assert git("rev-parse", "HEAD", cwd=src) == work

    proc = run([repo / "bin" / "export-patches"], env=env)
    assert proc.returncode == 0, proc.stderr
    assert "work: not exported yet" in \
        sorted((repo / "patches").glob("*.patch"))[-1].read_text()
    assert assemble(scratch).returncode == 0
    assert git("rev-parse", "HEAD", cwd=src) == work
