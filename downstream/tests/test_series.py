"""patches/ is the whole series: 'git am' of it onto a fresh extraction of
the pinned tarball gives exactly the tree we build, build/src, and no QEMU
file of ours lives outside it. The docs, our pages included, build
without a warning. A chart is committed only where a document shows it:
every committed PNG is linked from a committed .md or .rst file that is
not a generated summary (bin/bench-report redraws the rest from
results.json), and every image link of those files is to a committed
file."""

import posixpath
import re

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


# The links of a Markdown or reStructuredText document: images first,
# ![alt](path), <img src="path">, .. image:: and .. figure:: path; then
# [text](path), [label]: path, `text <path>`_ and .. _label: path.
IMAGE_LINK = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)"
                        r"|<img\s[^>]*\bsrc=[\"']([^\"']+)"
                        r"|^\s*\.\. (?:image|figure)::\s*(\S+)", re.M)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(\s*<?([^)\s>]+)"
                  r"|^\s*\[[^\]]+\]:\s*<?([^\s>]+)"
                  r"|`[^`<]*<([^`>]+)>`__?"
                  r"|^\s*\.\. _[^:]+:\s*(\S+)", re.M)


def link_targets(pattern, document, text):
    """The repository paths that @document's links matching @pattern
    point to: relative links only, without their #fragment."""
    for match in pattern.finditer(text):
        target = next(g for g in match.groups() if g).split("#")[0]
        if target and ":" not in target and not target.startswith("/"):
            yield posixpath.normpath(
                posixpath.join(posixpath.dirname(document), target))


def chart_problems(files, texts):
    """What breaks the rule on charts, one line each: every PNG of @files
    (repository paths) that no document of @texts ({path: text}, the .md
    and .rst files) links, but for a generated summary (a summary.md
    beside a results.json), and every image link of @texts to none of
    @files; a generated summary shows no image at all."""
    files = set(files)
    linked = set()
    problems = []
    for document, text in sorted(texts.items()):
        generated = posixpath.basename(document) == "summary.md" and \
            posixpath.join(posixpath.dirname(document),
                           "results.json") in files
        images = list(link_targets(IMAGE_LINK, document, text))
        if generated:
            problems += [f"{document}: a generated summary shows {image}"
                         for image in images]
            continue
        problems += [f"{document}: {image} is not committed"
                     for image in images if image not in files]
        linked.update(images, link_targets(LINK, document, text))
    problems += [f"{png}: no document links it" for png in sorted(files)
                 if png.endswith(".png") and png not in linked]
    return problems


def test_every_committed_chart_is_one_a_document_shows():
    files = git(REPO, "ls-files", "-z").split("\0")
    texts = {path: (REPO / path).read_text() for path in files
             if path.endswith((".md", ".rst"))}
    assert chart_problems(files, texts) == []


def test_the_chart_check_sees_unlinked_charts_and_broken_links():
    """Negative control: a chart no document links, one linked only by a
    generated summary, and an image link to no committed file."""
    files = ["README.md", "doc/a.png", "doc/b.png", "doc/c.png",
             "run/results.json", "run/summary.md", "run/d.png"]
    texts = {"README.md": "![a](doc/a.png)\n[b](./doc/b.png#top)\n"
                          "![gone](doc/gone.png) [up](https://x/c.png)\n",
             "run/summary.md": "![d](d.png)\n"}
    assert chart_problems(files, texts) == [
        "README.md: doc/gone.png is not committed",
        "run/summary.md: a generated summary shows run/d.png",
        "doc/c.png: no document links it",
        "run/d.png: no document links it"]
    assert chart_problems(["docs/x.rst", "docs/img/e.png"], {
        "docs/x.rst": ".. image:: img/e.png\n"}) == []
