"""Bad input to the bin/ scripts gives a clear error and changes nothing."""

import json
import os
import re
import shutil
import textwrap

import pytest

from conftest import run, tcg_tests
from harness.paths import REPO, upstream_pin


def test_fetch_rejects_a_wrong_tarball(tmp_path):
    shutil.copytree(REPO / "bin", tmp_path / "bin")
    bad = tmp_path / "qemu.tar.xz"
    bad.write_bytes(b"not qemu")
    proc = run([tmp_path / "bin" / "fetch-upstream"],
               env={"PATH": "/usr/bin:/bin", "QEMU_TARBALL": str(bad)})
    assert proc.returncode != 0
    assert f"expected {upstream_pin()['QEMU_ORIG_SHA256']}" in proc.stderr
    assert not list((tmp_path / "build" / "cache").glob("*.tar.xz"))


def test_the_pin_is_read_as_bash_reads_it():
    """harness.paths reads bin/common.sh's pin as the scripts see it."""
    pin = upstream_pin()
    assert sorted(pin) == ["QEMU_DEBIAN_PACKAGE", "QEMU_DEBIAN_SUITE",
                           "QEMU_DEBIAN_VERSION", "QEMU_ORIG_SHA256",
                           "QEMU_ORIG_TARBALL"]
    proc = run(["bash", "-c", '. "$0"; for n; do echo "${!n}"; done',
                REPO / "bin" / "common.sh", *pin])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == list(pin.values())


def test_fetch_rejects_a_missing_tarball(tmp_path):
    proc = run([REPO / "bin" / "fetch-upstream"],
               env={"PATH": "/usr/bin:/bin",
                    "QEMU_TARBALL": str(tmp_path / "absent.tar.xz")})
    assert proc.returncode != 0
    assert "does not exist" in proc.stderr


def write_security_sources(etc):
    """A deb822 sources file in @etc for bookworm's security archive."""
    (etc / "sources.list.d").mkdir()
    (etc / "sources.list.d" / "debian.sources").write_text(
        textwrap.dedent("""\
            Types: deb
            URIs: http://example.invalid/debian-security
            Suites: bookworm-security
            Components: main
            Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
            """))


def test_deb_src_entries_follow_the_machine(tmp_path):
    (tmp_path / "sources.list").write_text(
        "deb http://example.invalid/debian bookworm main contrib\n"
        "deb http://example.invalid/other stable main\n")
    write_security_sources(tmp_path)
    (tmp_path / "os-release").write_text('VERSION_CODENAME="bookworm"\n')
    proc = run([REPO / "bin" / "debian-apt-entries", "--etc", tmp_path,
                "--os-release", tmp_path / "os-release", "trixie"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "deb-src http://example.invalid/debian trixie main contrib",
        "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
        "http://example.invalid/debian-security trixie-security main",
    ]


@pytest.mark.parametrize("suite", ["sid", "unstable"])
def test_deb_src_entries_of_unstable_are_the_release_alone(tmp_path, suite):
    """Unstable has no -updates, -security or -backports suites, whose
    missing Release files would fail 'apt-get update'."""
    (tmp_path / "sources.list").write_text(
        "deb http://example.invalid/debian bookworm main\n"
        "deb http://example.invalid/debian bookworm-updates main\n"
        "deb http://example.invalid/debian bookworm-backports main\n")
    write_security_sources(tmp_path)
    (tmp_path / "os-release").write_text("VERSION_CODENAME=bookworm\n")
    for args, kind in (([], "deb-src"),
                       (["--arch", "arm64"], "deb [arch=arm64]")):
        proc = run([REPO / "bin" / "debian-apt-entries", "--etc", tmp_path,
                    "--os-release", tmp_path / "os-release", *args, suite])
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == \
            f"{kind} http://example.invalid/debian {suite} main\n"


def test_deb_src_entries_need_a_debian_entry(tmp_path):
    (tmp_path / "sources.list").write_text("deb http://example.invalid/x y z\n")
    (tmp_path / "os-release").write_text("VERSION_CODENAME=bookworm\n")
    proc = run([REPO / "bin" / "debian-apt-entries", "--etc", tmp_path,
                "--os-release", tmp_path / "os-release", "trixie"])
    assert proc.returncode != 0
    assert "no Debian 'bookworm' entry" in proc.stderr


def test_deb_entries_for_another_architecture(tmp_path):
    (tmp_path / "sources.list").write_text(
        "deb [signed-by=/k.gpg] http://example.invalid/debian bookworm main\n")
    (tmp_path / "os-release").write_text("VERSION_CODENAME=bookworm\n")
    proc = run([REPO / "bin" / "debian-apt-entries", "--etc", tmp_path,
                "--os-release", tmp_path / "os-release", "--arch", "arm64",
                "bookworm"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "deb [signed-by=/k.gpg arch=arm64] " \
        "http://example.invalid/debian bookworm main\n"


def test_guest_image_names_a_missing_tool(tmp_path):
    (tmp_path / "bin").mkdir()
    for tool in ("bash", "dirname", "id", "cat", "sha256sum", "cut"):
        (tmp_path / "bin" / tool).symlink_to(shutil.which(tool))
    proc = run([REPO / "bin" / "guest-image"],
               env={"PATH": str(tmp_path / "bin")})
    assert proc.returncode != 0
    assert "mmdebstrap is missing; run bin/install-deps" in proc.stderr


def test_guest_image_rejects_unknown_arguments():
    proc = run([REPO / "bin" / "guest-image", "--size", "1G"])
    assert proc.returncode == 2
    assert "Usage: bin/guest-image" in proc.stderr


def test_guest_build_image_rejects_unknown_arguments():
    proc = run([REPO / "bin" / "guest-build-image", "--size", "1G"])
    assert proc.returncode == 2
    assert "Usage: bin/guest-build-image" in proc.stderr


SCRIPTS = sorted(p.name for p in (REPO / "bin").iterdir()
                 if p.name != "common.sh")


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_script_explains_itself(script):
    proc = run([REPO / "bin" / script, "--help"])
    assert proc.returncode == 0, proc.stderr
    assert "usage" in proc.stdout.lower()


def test_time_check_needs_an_output_file():
    proc = run([REPO / "bin" / "time-check"])
    assert proc.returncode == 2
    assert "Usage: bin/time-check" in proc.stderr


def test_time_check_writes_each_stage_and_stops_at_a_failure(tmp_path):
    """bin/time-check with a make that fails at the qemu stage: a line
    for each stage run, the failed one included, and a total that says
    where it stopped."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "make").write_text('#!/bin/sh\n[ "$2" != qemu ]\n')
    (fake / "make").chmod(0o755)
    out = tmp_path / "times.txt"
    proc = run([REPO / "bin" / "time-check", out],
               env={**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"})
    assert proc.returncode == 1
    lines = [line.split() for line in out.read_text().splitlines()]
    assert [line[0] for line in lines] == ["deps", "assemble", "qemu", "total"]
    assert all(line[1].isdigit() for line in lines)
    assert lines[-1][2:] == ["(stopped:", "qemu", "failed)"]


def test_functional_rejects_unknown_arguments():
    proc = run([REPO / "bin" / "functional", "--bogus"])
    assert proc.returncode == 2
    assert "Usage: bin/functional" in proc.stderr


@pytest.mark.parametrize("args, message", [
    (["-n", "1"], "--runs must be at least 2"),
    (["--smp", "0"], "--smp must be at least 1"),
    (["--qemu", "/nonexistent"], "/nonexistent is not an executable"),
])
def test_compare_refuses_bad_input(args, message):
    proc = run([REPO / "bin" / "compare", *args])
    assert proc.returncode != 0
    assert message in proc.stderr


def test_compare_prints_both_modes_and_their_ratio(qemu):
    """bin/compare, make's main job, on the initramfs: two rounds."""
    proc = run([REPO / "bin" / "compare", "--qemu", qemu, "-n", "2",
                "--smp", "2", "--workload", "boot"], timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "Linux boot to power-off (an initramfs), -smp 2, " \
        "2 alternating rounds, mean ± 95% CI:"
    assert lines[1].split()[0] == "strict" and lines[1].endswith(
        "(QEMU's broadcast TLB maintenance)")
    assert lines[2].split()[0] == "relaxed" and \
        lines[2].endswith("of strict, per round")


def test_build_series_rejects_unknown_arguments():
    proc = run([REPO / "bin" / "build-series", "--bogus"])
    assert proc.returncode == 2
    assert "Usage: bin/build-series" in proc.stderr


@pytest.mark.parametrize("args, message", [
    (["--smp", "1"], "--smp must be at least 2"),
    (["--reps", "0"], "--reps at least 1"),
    (["--kernel", "/nonexistent"], "no /nonexistent"),
    (["--cflags=-DITERATIONS=("], "building tlb-broadcast failed"),
    (["--variant", "s3"], "invalid choice: 's3'"),
    (["--seed", "5"], "--rounds, --seed and --append are for tlb-random"),
    (["--variant", "random", "--rounds", "-1"], "--rounds must be at least 0"),
])
def test_tlb_scale_refuses_bad_input(args, message):
    proc = run([REPO / "bin" / "tlb-scale", *args])
    assert proc.returncode == 2
    assert message in proc.stderr


def test_tlb_scale_counts_a_negative_control(qemu):
    """Runs with a barrier that does not wait: every racing case must fail
    in one of them, which --expect-fail turns into success."""
    tcg_tests()
    proc = run([REPO / "bin" / "tlb-scale", "--qemu", qemu, "--smp", "2",
                "--reps", "3", "--mode", "relaxed,x-tlb-barrier=off",
                "--expect-fail", "--cflags=-DITERATIONS=50"], timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^  stores: made read-only, VALE1IS +[0-2] pass +"
                     r"[1-3] fail", proc.stdout, re.M), proc.stdout
    assert proc.stdout.endswith("tlb-scale: ok\n")


def test_tlb_scale_runs_tlb_random_with_a_seed_per_run(qemu):
    """--variant random-64k runs tlb-random-64k; a run that fails is listed
    with the command line that replays it, its seed included."""
    tcg_tests()
    proc = run([REPO / "bin" / "tlb-scale", "--qemu", qemu, "--smp", "2",
                "--reps", "2", "--mode", "relaxed", "--variant",
                "random-64k", "--rounds", "20"], timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("tlb-random-64k, 2 runs")
    assert re.search(r"^  random rounds +2 pass +0 fail", proc.stdout,
                     re.M), proc.stdout
    proc = run([REPO / "bin" / "tlb-scale", "--qemu", qemu, "--smp", "2",
                "--reps", "1", "--mode", "strict", "--variant", "random",
                "--rounds", "20", "--seed", "11", "--append", "drop-tlbi"],
               timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert 'failed at -smp 2 strict: -append "seed=11 drop-tlbi rounds=20"' \
        in proc.stdout


def test_tlb_scale_runs_the_el2_variants(qemu):
    """--variant builds and runs tlb-broadcast-s2 and -fb on a machine
    with EL2, and sums when the timer case's readers woke."""
    tcg_tests()
    for variant, case in [("s2", "stores: made read-only, VMALLS12E1IS"),
                          ("fb", "stores: made read-only, VALE1 under "
                                 "HCR_EL2.FB+BSU")]:
        proc = run([REPO / "bin" / "tlb-scale", "--qemu", qemu, "--smp", "2",
                    "--reps", "1", "--mode", "relaxed", "--variant", variant,
                    "--cflags=-DITERATIONS=20"], timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert proc.stdout.startswith(f"tlb-broadcast-{variant}, 1 runs")
        assert re.search(rf"^  {re.escape(case)} +1 pass +0 fail",
                         proc.stdout, re.M), proc.stdout
        assert re.search(r"^  timer case's wake-ups: \d+ before the TLBIs, "
                         r"\d+ before the DSB completed, \d+ after; not "
                         r"asleep: \d+$", proc.stdout, re.M), proc.stdout


@pytest.mark.parametrize("args, message", [
    (["--smp", "1"], "--smp values must be at least 2"),
    (["--smp", "x"], "--smp 'x' is not a list of integers"),
    (["--ops", "mprotect,bogus"], "unknown operations: bogus"),
])
def test_tlb_count_refuses_bad_input(args, message):
    proc = run([REPO / "bin" / "tlb-count", *args])
    assert proc.returncode != 0
    assert message in proc.stderr
    assert not proc.stdout


def test_tlb_count_counts_per_broadcast(qemu):
    """One row per -smp and operation: the adjacent shape's broadcasts
    queue for nobody, the summary's 4 KiB units ruling the other vCPU
    out without a probe of its TLB.  A boot where the other vCPU holds
    an entry (the kernel's, most likely) whose unit hashes like the
    mprotected page's probes it at every broadcast, as the summary's
    design allows: 2 of 20 runs of this command here, with the fixed
    layout.  So up to three boots, one of which must probe nothing.
    Without the units every boot probes at every broadcast."""
    rows = []
    for _ in range(3):
        proc = run([REPO / "bin" / "tlb-count", "--binary", qemu,
                    "--smp", "2", "--ops", "mprotect-adjacent-write"],
                   timeout=600)
        assert proc.returncode == 0, proc.stderr
        header, rule, row = proc.stdout.splitlines()
        assert header.split(" | ")[1:3] == ["op", "broadcasts"]
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[:2] == ["2", "mprotect-adjacent-write"]
        assert int(cells[2]) > 100
        assert float(cells[5]) < 0.1 and float(cells[8]) > 0.9, row
        rows.append(row)
        if float(cells[4]) < 0.1:
            break
    else:
        pytest.fail("every boot probed the other vCPU:\n" + "\n".join(rows))


def test_callgrind_ops_refuses_an_unknown_op(tmp_path):
    proc = run([REPO / "bin" / "callgrind-ops", "--keep", tmp_path / "keep",
                REPO / "build" / "qemu" / "qemu-system-aarch64", "nosuchop"])
    assert proc.returncode == 2
    assert "invalid choice: 'nosuchop'" in proc.stderr
    assert not (tmp_path / "keep").exists()


def test_callgrind_dump_total_is_read(tmp_path):
    from harness.callgrind import instructions
    dump = tmp_path / "cg.out.1"
    dump.write_text("events: Ir\nfn=main\n1 5\nsummary: 123456789012\n")
    assert instructions(dump) == 123456789012


def test_device_tlb_plan_refuses_an_unknown_step(tmp_path):
    proc = run([REPO / "bin" / "device-tlb-plan", "--steps", "idle,nosuch",
                tmp_path / "pack", tmp_path / "out"])
    assert proc.returncode == 2
    assert "no step 'nosuch'" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_device_tlb_plan_heap_needs_the_shim(tmp_path):
    (tmp_path / "pack").mkdir()
    proc = run([REPO / "bin" / "device-tlb-plan", "--steps", "idle,heap",
                tmp_path / "pack", tmp_path / "out"])
    assert proc.returncode == 2
    assert f"step heap needs {tmp_path}/pack/libheapshift.so" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_device_tlb_plan_build_needs_the_build_guest(tmp_path):
    (tmp_path / "pack").mkdir()
    proc = run([REPO / "bin" / "device-tlb-plan", "--steps", "build",
                tmp_path / "pack", tmp_path / "out"])
    assert proc.returncode == 2
    assert f"step build needs {tmp_path}/pack/build-initrd.cpio.xz" \
        in proc.stderr
    assert "bin/guest-build-image --slim" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_device_harness_refuses_an_older_unpack(tmp_path):
    """A folder that PACK's run unpacked from an older pack at the same
    path lacks what was packed since, a --file included: device-harness
    says so and runs nothing."""
    pack, unpacked = tmp_path / "pack", tmp_path / "unpacked"
    pack.mkdir()
    unpacked.mkdir()
    (pack / "run").write_text(f"#!/bin/sh\necho {unpacked}\n")
    (pack / "run").chmod(0o755)
    (pack / "libheapshift.so").write_text("")
    proc = run([REPO / "bin" / "device-harness", pack, "bench", "--help"])
    assert proc.returncode == 1
    assert f"{unpacked} has no libheapshift.so, or an older one, unpacked " \
        "from an older pack" in proc.stderr
    # ... or holds an older copy: a repack here once ran the old qemu.
    (unpacked / "libheapshift.so").write_text("")
    (unpacked / ".ready").write_text("")
    os.utime(unpacked / ".ready", (1, 1))
    proc = run([REPO / "bin" / "device-harness", pack, "bench", "--help"])
    assert proc.returncode == 1
    assert "or an older one" in proc.stderr


@pytest.fixture
def tiny_qemu(tmp_path):
    """A one-commit git repository that bin/check-master takes for QEMU's,
    and a bare clone of it: enough to reach each of its checks."""
    repo = tmp_path / "qemu"
    (repo / "accel" / "tcg").mkdir(parents=True)
    (repo / "accel" / "tcg" / "cputlb.c").write_text("/* QEMU */\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost"]
    for args in (["init", "-q", repo], ["-C", repo, "add", "-A"],
                 ["-C", repo, "commit", "-q", "-m", "c"],
                 ["clone", "-q", "--bare", repo, tmp_path / "qemu.git"]):
        proc = run([*git, *args])
        assert proc.returncode == 0, proc.stderr
    return repo


@pytest.mark.parametrize("args, message", [
    (["{tmp}"], "{tmp} is not a git repository"),
    (["{tmp}/qemu/accel"], "{tmp}/qemu/accel is not a git repository"),
    (["{tmp}/absent"], "{tmp}/absent is not a directory"),
    (["--base", "nosuch", "{tmp}/qemu.git"],
     "nosuch is not a commit of {tmp}/qemu.git"),
    (["--base", "HEAD^{{tree}}", "{tmp}/qemu"], "is not a commit of"),
])
def test_check_master_refuses_bad_input(tmp_path, tiny_qemu, args, message):
    work = tmp_path / "work"
    proc = run([REPO / "bin" / "check-master", "--work-dir", work,
                *[a.format(tmp=tmp_path) for a in args]])
    assert proc.returncode == 1, proc.stderr
    assert message.format(tmp=tmp_path) in proc.stderr
    assert not work.exists()


def test_check_master_refuses_a_tree_that_is_not_qemu(tmp_path, tiny_qemu):
    run(["git", "-C", tiny_qemu, "rm", "-q", "accel/tcg/cputlb.c"])
    run(["git", "-C", tiny_qemu, "-c", "user.name=t", "-c",
         "user.email=t@localhost", "commit", "-q", "-m", "not QEMU"])
    proc = run([REPO / "bin" / "check-master", "--base", "HEAD", tiny_qemu])
    assert proc.returncode == 1
    assert f"HEAD of {tiny_qemu} is not a QEMU source tree" in proc.stderr


def test_check_master_refuses_a_work_dir_in_use(tmp_path, tiny_qemu):
    work = tmp_path / "work"
    work.mkdir()
    (work / "keep").write_text("mine\n")
    proc = run([REPO / "bin" / "check-master", "--base", "HEAD",
                "--work-dir", work, tmp_path / "qemu.git"])
    assert proc.returncode == 1
    assert f"--work-dir {work} is neither new nor empty" in proc.stderr
    assert [p.name for p in work.iterdir()] == ["keep"]
    assert (work / "keep").read_text() == "mine\n"


@pytest.mark.parametrize("args", [
    [], ["--base"], ["--bogus", "x"], ["a", "b"], ["--work-dir"],
])
def test_check_master_rejects_bad_usage(args):
    proc = run([REPO / "bin" / "check-master", *args])
    assert proc.returncode == 2
    assert "Usage: bin/check-master" in proc.stderr
    assert not proc.stdout


def test_check_master_needs_build_src_and_a_cross_compiler(tmp_path,
                                                           tiny_qemu):
    """In a copy of bin/ beside no build/: no build/src is an error, not
    a wait; before it, a missing aarch64-linux-gnu-gcc is one."""
    shutil.copytree(REPO / "bin", tmp_path / "bin")
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in ("bash", "dirname", "git", "realpath", "ls"):
        (tools / tool).symlink_to(shutil.which(tool))
    work = tmp_path / "work"
    args = [tmp_path / "bin" / "check-master", "--base", "HEAD",
            "--work-dir", work, tiny_qemu]
    proc = run(args, env={"PATH": str(tools)})
    assert proc.returncode == 1
    assert "aarch64-linux-gnu-gcc is missing" in proc.stderr
    (tools / "aarch64-linux-gnu-gcc").symlink_to("/bin/true")
    proc = run(args, env={"PATH": str(tools)})
    assert proc.returncode == 1
    assert "no build/src; run bin/assemble" in proc.stderr
    assert not work.exists()


@pytest.mark.parametrize("args, message", [
    (["-n", "1", "a=/bin/true"], "--rounds must be at least 2"),
    (["a"], "config 'a' is not NAME=BINARY[,VAR=VALUE]"),
    (["a=/bin/true,X"], "config 'a=/bin/true,X': 'X' is not VAR=VALUE"),
    (["a=/no/such/qemu"], "/no/such/qemu is not executable"),
])
def test_tlb_range_bench_refuses_bad_input(tmp_path, args, message):
    proc = run([REPO / "bin" / "tlb-range-bench", "-o", tmp_path / "out",
                *args])
    assert proc.returncode != 0
    assert message in proc.stderr
    assert not (tmp_path / "out").exists()


def test_tlb_range_bench_times_every_size_and_range(qemu, tmp_path):
    """Two rounds of one build: every table size and range has a row,
    and a range flush costs more than none (the rows are the
    difference)."""
    proc = run([REPO / "bin" / "tlb-range-bench", "-n", "2", "-o", tmp_path,
                f"q={qemu}"], timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = re.findall(r"^\| (\d+) \| (\d+) \| ([\d.]+) ± ([\d.]+) \|$",
                      (tmp_path / "summary.md").read_text(), re.M)
    assert {(s, p) for s, p, _, _ in rows} == {
        (str(s), str(2 << i)) for s in (256, 1024, 4096) for i in range(16)}
    assert all(float(mean) > 0 for _, _, mean, _ in rows)
    results = json.loads((tmp_path / "results.json").read_text())
    assert [r["config"] for r in results["runs"]] == ["q", "q"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json",
                                                         "summary.md"]
