"""bin/bench and bin/bench-report (harness.bench, harness.matrix,
harness.workloads, harness.report, harness.stats): statistics, pairing,
reports, bad input, and one short real run."""

import json
import os
import pathlib
import re
import subprocess
import sys
import time

import pytest

from conftest import run
from harness import HarnessError, matrix, paths, report, stats, workloads
from harness.machine import Jit, Regions
from harness.paths import QEMU, REPO

BENCH = REPO / "bin" / "bench"
REPORT = REPO / "bin" / "bench-report"


def test_mean_ci_of_a_known_sample():
    # mean 3, s = sqrt(2.5), t(0.975, 4) = 2.776: 2.776 * 1.5811 / sqrt(5)
    mean, half = stats.mean_ci([1.0, 2.0, 3.0, 4.0, 5.0])
    assert mean == 3.0
    assert half == pytest.approx(1.9629, abs=1e-4)


def test_mean_ci_uses_the_t_quantile_of_its_sample_size():
    mean, half = stats.mean_ci([10.0, 12.0])
    assert (mean, half) == (11.0, pytest.approx(12.706))


@pytest.mark.parametrize("df, quantile", [
    (1, 12.706), (29, 2.045), (30, 2.042), (40, 2.021), (60, 2.000),
    (120, 1.980),
])
def test_t_quantiles_follow_the_table(df, quantile):
    # Values from the NIST/SEMATECH e-Handbook, table 1.3.6.7.2.
    assert stats.t975(df) == pytest.approx(quantile, abs=1e-3)


def synthetic_results():
    """Three rounds: base and fast on smp4, fast alone on smp4-relaxed."""
    runs = []
    for rnd, (base, fast, relaxed) in enumerate(
            [(10.0, 8.0, 6.0), (12.0, 9.0, 6.0), (11.0, 9.9, 5.5)], 1):
        for binary, config, wall in [("base", "smp4", base),
                                     ("fast", "smp4", fast),
                                     ("fast", "smp4-relaxed", relaxed)]:
            runs.append({"round": rnd, "binary": binary, "config": config,
                         "wall_s": wall, "booted_s": wall - 1,
                         "user_s": wall / 2,
                         "buffer_rss_kib": 4096,
                         "buffer_anon_huge_kib": 2048})
    layout = [{"binary": b, "smp": smp, "tb_size_mib": 64, "error": None,
               "buffer_mappings": 32, "buffer_mapping_kib": 2044,
               **({"regions": 32, "region_kib": 2048} if b == "fast" else {})}
              for b in ("base", "fast") for smp in (1, 4)]
    return {"workload": "debian", "command": "bin/bench", "date": "today",
            "machine": {"cpu": "cpu", "cpus": 2, "memory_gib": 1,
                        "kernel": "Linux", "thp": "madvise"},
            "guest": "build/image", "qemu_args": "-M virt",
            "binaries": {"base": "/b", "fast": "/f"},
            "configs": {"smp4": "-smp 4",
                        "smp4-relaxed": "-smp 4 -accel tcg,tlb-flush=relaxed"},
            "pairs": {"smp4": "smp4", "smp4-relaxed": "smp4"},
            "metrics": ["wall_s"], "runs": runs, "layout": layout}


# An absolute path in a JSON string: at its start, after a blank, "=" or
# ","; but for the guest's paths of the test's -append.
ABSOLUTE = re.compile(r"(?:\"|[\s=,])/(?!dev/vda|tlb-bench)")


def test_results_name_paths_relative_to_the_repository():
    """results.json is committed: its command, guest, QEMU arguments,
    binaries and configurations name no folder of the machine it ran on,
    and leave the guest's own paths (-append) alone."""
    setup = matrix.Setup(
        ["bin/bench", "--binary", f"a={paths.PATCHED}", "--binary",
         f"b={REPO.parent / 'shared' / 'qemu'}", "--guest", str(paths.GUEST),
         "--out", str(paths.BUILD / "bench" / "x")],
        "tlb", paths.GUEST,
        ["-kernel", str(paths.GUEST / "vmlinuz"),
         "-drive", f"file={paths.IMAGE / 'rootfs.ext4'},format=raw",
         "-append", "root=/dev/vda rdinit=/tlb-bench"],
        [("a", str(paths.PATCHED)), ("b", str(REPO.parent / "shared" / "qemu"))],
        [("smp2", f"-smp 2 -D {paths.BUILD / 'trace.log'}")], 0)
    results = matrix.results(setup, {"smp2": "smp2"}, ["wall_s"], [], [])
    assert results["command"] == \
        "bin/bench --binary a=build/qemu/qemu-system-aarch64 --binary " \
        "b=../shared/qemu --guest build/guest --out build/bench/x"
    assert results["guest"] == "build/guest"
    assert results["qemu_args"].endswith(
        "-kernel build/guest/vmlinuz -drive file=build/image/rootfs.ext4,"
        "format=raw -append 'root=/dev/vda rdinit=/tlb-bench'")
    assert results["binaries"] == {"a": "build/qemu/qemu-system-aarch64",
                                   "b": "../shared/qemu"}
    assert results["configs"] == {"smp2": "-smp 2 -D build/trace.log"}
    assert not ABSOLUTE.search(json.dumps(results)), results


def test_barrier_waits_come_from_the_trace_log():
    log = ("tlb_relaxed_barrier cpu 1 gen 13 waited 4000 ns\n"
           "tlb_relaxed_flush cpu 0 gen 14 addr 0x0 len 0x1000 idxmap 0x3 targets 1\n"
           "tlb_relaxed_barrier cpu 0 gen 14 waited 1000 ns\n"
           "4242@1763900000.123456:tlb_relaxed_barrier cpu 1 gen 15 waited 2000 ns\n")
    assert workloads.barrier_wait_columns(log) == {
        "barrier_waits_traced": 3, "barrier_wait_ns": 2333,
        "barrier_wait_p50_ns": 2000, "barrier_wait_p99_ns": 3960}
    assert workloads.barrier_wait_columns("") == {
        "barrier_waits_traced": 0, "barrier_wait_ns": None,
        "barrier_wait_p50_ns": None, "barrier_wait_p99_ns": None}


def test_quantiles_interpolate():
    assert stats.quantile([1, 2, 3, 4, 5], 0.5) == 3
    assert stats.quantile(range(1, 101), 0.99) == pytest.approx(99.01)


def test_ratios_are_per_round():
    results = synthetic_results()
    runs = results["runs"]
    # 8/10, 9/12, 9.9/11: mean 0.8167, s = 0.0764, t(2) = 4.303
    mean, half = report.pair_ratio_ci(results, runs, "fast", "smp4", "wall_s")
    assert mean == pytest.approx(0.81667, abs=1e-4)
    assert half == pytest.approx(4.303 * 0.076376 / 3 ** 0.5, abs=1e-3)
    assert report.pair_ratio_ci(results, runs, "base", "smp4", "wall_s") is None


def test_a_configuration_compares_with_its_explicit_pair():
    results = synthetic_results()
    mean, _ = report.pair_ratio_ci(results, results["runs"], "fast",
                                   "smp4-relaxed", "wall_s")
    assert mean == pytest.approx((0.6 + 0.5 + 0.5) / 3)


def test_the_report_refuses_a_configuration_without_a_pair(tmp_path):
    """No silent guess: smp4-relaxed must not pair with smp4 unasked."""
    results = synthetic_results()
    del results["pairs"]["smp4-relaxed"]
    (tmp_path / "results.json").write_text(json.dumps(results))
    proc = run([REPORT, tmp_path])
    assert proc.returncode != 0
    assert "pairs configuration smp4-relaxed with no reference" in proc.stderr
    assert not (tmp_path / "summary.md").exists()


def report_of(results, folder):
    """Run bench-report on @results in @folder; return summary.md."""
    (folder / "results.json").write_text(json.dumps(results))
    proc = run([REPORT, folder])
    assert proc.returncode == 0, proc.stderr
    return (folder / "summary.md").read_text()


def test_report_writes_summary_and_charts(tmp_path):
    summary = report_of(synthetic_results(), tmp_path)
    assert "| smp4 | fast | 8.967 ± 2.361 | 0.817 ± 0.190 |" in summary
    assert "| smp4-relaxed | fast | 5.833 ± 0.717 | 0.533 ± 0.143 |" in summary
    assert "| 50.0 |" in summary        # share of the buffer on huge pages
    # user CPU is half the wall time in every run: the same ratios
    assert "| smp4 | fast | 0.817 ± 0.190 | — |" in summary
    for chart in ("wall_s.png", "regions.png"):
        assert (tmp_path / chart).read_bytes().startswith(b"\x89PNG")
    assert "matplotlib: wall_s.png (a bar chart per metric" in summary
    assert "; regions.png (the code buffer's regions" in summary


def test_report_says_when_qemu_may_use_fewer_cpus_than_are_online(tmp_path):
    results = synthetic_results()
    assert "CPU affinity" not in report_of(results, tmp_path)
    results["machine"]["cpus_usable"] = 1
    assert "2 CPUs (1 usable: QEMU's CPU affinity)" in \
        report_of(results, tmp_path)


def tlb_results():
    """The tlb workload at -smp 1 and 2, two rounds: mprotect's mean,
    median and 99th percentile per run."""
    results = synthetic_results()
    runs = []
    for rnd in (1, 2):
        for binary, config, mean in [("base", "smp1", 100), ("fast", "smp1", 90),
                                     ("base", "smp2", 300), ("fast", "smp2", 120),
                                     ("fast", "smp2-relaxed", 110)]:
            runs.append({"round": rnd, "binary": binary, "config": config,
                         "wall_s": 1.0, "mprotect_ns": mean + rnd,
                         "mprotect_p50_ns": mean,
                         "mprotect_p99_ns": mean * (2 + rnd)})
    results.update(workload="tlb", runs=runs, layout=[],
                   configs={"smp1": "-smp 1", "smp2": "-smp 2",
                            "smp2-relaxed": "-smp 2 -accel tcg,tlb-flush=relaxed"},
                   pairs={"smp1": "smp1", "smp2": "smp2",
                          "smp2-relaxed": "smp2"},
                   metrics=["wall_s", "mprotect_ns", "mprotect_p50_ns",
                            "mprotect_p99_ns"])
    return results


def test_report_shows_tails_and_cost_against_smp(tmp_path):
    summary = report_of(tlb_results(), tmp_path)
    # p99 / p50 is 3 in round 1 and 4 in round 2: 3.5 ± 12.706 * 0.5
    assert "| smp2 | fast | 3.50 ± 6.35 |" in summary
    assert "; scaling.png (each operation's mean time per binary and mode " \
        "against -smp" in summary
    # (111 / 301 + 112 / 302) / 2
    assert "| smp2-relaxed | fast | 112 ± 6 | 0.370 ± 0.013 |" in summary
    assert (tmp_path / "scaling.png").read_bytes().startswith(b"\x89PNG")
    assert report.scaling_lines(tlb_results()) == {
        ("base", "default"): [(1, "smp1"), (2, "smp2")],
        ("fast", "default"): [(1, "smp1"), (2, "smp2")],
        ("fast", "relaxed"): [(2, "smp2-relaxed")]}


def test_the_summary_names_the_charts_and_shows_none(tmp_path):
    """A results folder is committed as results.json and summary.md:
    summary.md must not show charts that are not committed beside it."""
    summary = report_of(tlb_results(), tmp_path)
    assert not re.search(r"!\[|<img|\.\. image::", summary)
    assert summary.count("`bin/bench-report FOLDER` draws these charts") == 1
    section = summary.split("\n## Charts\n\n")[1]
    assert section.startswith("`bin/bench-report FOLDER` draws these charts "
                              "into FOLDER from its results.json, with "
                              "matplotlib: wall_s.png, mprotect_ns.png, "
                              "mprotect_p50_ns.png, mprotect_p99_ns.png (a "
                              "bar chart per metric")
    assert section.count("\n") == 1        # one line, the summary's last
    for chart in report.charts(tlb_results()).values():
        assert chart in summary
        assert (tmp_path / chart).read_bytes().startswith(b"\x89PNG")


def test_the_summary_is_the_same_without_matplotlib(tmp_path, monkeypatch,
                                                    capsys):
    """A machine lent for one run may lack matplotlib: the same summary.md,
    and no charts."""
    with_charts = report_of(tlb_results(), tmp_path)
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "results.json").write_text(json.dumps(tlb_results()))
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    report.write(bare)
    assert (bare / "summary.md").read_text() == with_charts
    assert not list(bare.glob("*.png"))
    assert "no matplotlib, no charts" in capsys.readouterr().out


def test_report_leaves_out_runs_without_a_metric(tmp_path):
    """The baseline's runs trace no barrier waits (strict maintenance)."""
    results = tlb_results()
    results["metrics"] += ["barrier_wait_ns", "barrier_wait_p50_ns",
                           "barrier_wait_p99_ns"]
    for r in results["runs"]:
        waited = r["binary"] == "fast"
        r.update(barrier_wait_ns=1000 if waited else None,
                 barrier_wait_p50_ns=500 if waited else None,
                 barrier_wait_p99_ns=9000 if waited else None)
    summary = report_of(results, tmp_path)
    table = summary.split("## barrier_wait_ns")[1].split("##")[0]
    assert "| smp2 | fast | 1000 ± 0 | — |" in table
    assert "| base |" not in table
    assert "| smp2 | fast | 3.50 ± 6.35 | 18.00 ± 0.00 |" in summary


def test_report_refuses_a_folder_without_results(tmp_path):
    proc = run([REPORT, tmp_path])
    assert proc.returncode != 0
    assert "cannot read" in proc.stderr


@pytest.mark.parametrize("args, message", [
    (["-n", "1"], "--runs must be at least 2"),
    (["--binary", "x=/nonexistent"], "is not an executable"),
    (["--config", "noequals"], "is not NAME=VALUE"),
    (["--workload", "boot", "--binary", "a=/bin/true", "--guest",
      "/nonexistent"], "run bin/guest-kernel"),
    (["--binary", "a=/bin/true", "--guest", "/nonexistent"], "run make image"),
    (["--layout-smp", "1,x"], "not a list of integers"),
    (["--workload", "boot", "--binary", "a=/bin/true", "--config",
      "x@nope=-smp 1"], "names unknown binary nope"),
    (["--binary", "a=/bin/true", "--pair", "x"], "is not NAME=VALUE"),
    (["--workload", "boot", "--smp", "1,2"],
     "--smp sets the tlb, stress and build"),
    (["--workload", "build", "--binary", "a=/bin/true", "--guest",
      "/nonexistent"], "run make build-image"),
    (["--stress-seconds", "0"], "--stress-seconds must be at least 1"),
    (["--busy", "-1"], "--busy must be at least 0"),
    (["--stress-groups", "mprotect:fork vm"], "is not stressor+stressor"),
    (["--workload", "tlb", "--smp", "0,2"], "--smp values must be distinct"),
    (["--workload", "tlb", "--smp", "2,2"], "--smp values must be distinct"),
])
def test_bad_input_is_refused(args, message, tmp_path):
    proc = run([BENCH, "--out", tmp_path / "out", *args])
    assert proc.returncode != 0
    assert message in proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_configuration_no_binary_accepts_is_refused(qemu, tmp_path):
    proc = run([BENCH, "--workload", "boot", "--binary", f"qemu={qemu}",
                "--config", "bad=-accel tcg,tlb-flush=lazy",
                "--out", tmp_path / "out"])
    assert proc.returncode != 0
    assert "no binary accepts configuration bad" in proc.stderr
    assert "does not accept value 'lazy'" in proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("pair, message", [
    ([], "configuration smp2-relaxed has no reference run: the reference "
     "binary does not run smp2-relaxed; give --pair smp2-relaxed=CONFIG"),
    (["--pair", "smp2-relaxed=smp4"], "the reference binary does not run smp4"),
    (["--pair", "nope=smp2"], "--pair nope=smp2 names no configuration"),
    (["--pair", "smp2-relaxed=smp2", "--pair", "smp2-relaxed=smp2"],
     "configuration smp2-relaxed is paired twice"),
])
def test_pairs_are_explicit(qemu, tmp_path, pair, message):
    proc = run([BENCH, "--workload", "boot", "--binary", f"a={qemu}",
                "--binary", f"b={qemu}", "--config", "smp2=-smp 2",
                "--config", "smp2-relaxed@b=-smp 2 -accel tcg,tlb-flush=relaxed",
                *pair, "--out", tmp_path / "out"])
    assert proc.returncode != 0
    assert message in proc.stderr
    assert not (tmp_path / "out").exists()


def test_barrier_waits_that_miss_the_trace_stop_the_bench(qemu, tmp_path):
    """A configuration's own -D takes the trace away from bench."""
    proc = run([BENCH, "--workload", "boot", "-n", "2", "--binary",
                f"a={qemu}", "--config", "smp2=-smp 2 -D /dev/null",
                "--layout-smp", "1", "--layout-tb-size", "64",
                "--barrier-waits", "--out", tmp_path / "out"], timeout=600)
    assert proc.returncode != 0
    assert "but the trace has 0" in proc.stderr
    assert not (tmp_path / "out" / "results.json").exists()


def test_a_short_run_records_phases_jit_counters_and_layout(qemu, tmp_path):
    """Two rounds of the initramfs boot; the smoke test of the runner."""
    out = tmp_path / "out"
    proc = run([BENCH, "--workload", "boot", "-n", "2",
                "--binary", f"a={qemu}", "--binary", f"b={QEMU}",
                "--config", "smp2=-smp 2 -accel tcg,tb-size=64",
                "--layout-smp", "1,4", "--layout-tb-size", "64",
                "--barrier-waits", "--out", out], timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[4/4] round 2 b" in proc.stdout
    results = json.loads((out / "results.json").read_text())
    assert len(results["runs"]) == 4
    for r in results["runs"]:
        assert 0 < r["kernel_s"] < r["userspace_s"] < r["booted_s"] <= r["wall_s"]
        assert r["code_bytes"] > 0 and r["tb_count"] > 0
        assert r["regions"] * r["region_kib"] == 64 << 10
        assert r["region_kib"] % 2048 == 0
        assert 0 < r["buffer_anon_huge_kib"] <= r["buffer_rss_kib"]
        # The trace saw every DSB that x-query-jit counts as a wait.
        assert r["barrier_waits_traced"] == r["tlb_barrier_waits"] > 0
        assert 0 < r["barrier_wait_p50_ns"] <= r["barrier_wait_p99_ns"]
    assert [(c["smp"], c["regions"]) for c in results["layout"]] == \
        [(1, 1), (4, 32)] * 2
    summary = (out / "summary.md").read_text()
    assert "ratio to a" in summary
    assert "## barrier_wait_p99_ns" in summary
    assert results["pairs"] == {"smp2": "smp2"}
    # The binaries' commits: build/src's HEAD, without uncommitted changes.
    head = run(["git", "-C", REPO / "build" / "src", "rev-parse", "HEAD"])
    assert results["binary_sources"]["a"] == head.stdout.strip()
    assert (out / "results.csv").read_text().startswith("round,binary,config,wall_s")
    assert str(REPO) not in (out / "results.json").read_text()


STRESS_CONSOLE = """stress group mprotect+mremap
stress-ng: info:  [162] dispatching hogs: 2 mprotect, 2 mremap
stress-ng: metrc: [162] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s
stress-ng: metrc: [162]                           (secs)    (secs)    (secs)   (real time) (usr+sys time)
stress-ng: metrc: [162] mprotect         4100      3.05      2.90      3.11      1344.26         682.20
stress-ng: metrc: [162] mremap              2      3.10      0.26      0.30         0.65           3.57
stress-ng: metrc: [162] miscellaneous metrics:
stress-ng: metrc: [162] mremap           2365633.65 nanosecs per mremap call (geometic mean of 2 instances)
stress group mprotect+mremap exit {status}
stress done"""


def test_a_stress_group_sums_its_stressors_bogo_ops_per_second():
    console = STRESS_CONSOLE.format(status=0)
    assert workloads.stress_ops(console, "mprotect+mremap", "q", []) == 1344.91
    assert workloads.stress_metric("mprotect+mremap") == "mprotect_mremap_ops_s"
    assert workloads.stress_metric("tlb-shootdown") == "tlb_shootdown_ops_s"


@pytest.mark.parametrize("console, message", [
    (STRESS_CONSOLE.format(status=2), "stress-ng failed group mprotect+mremap"),
    ("stress done", "ran no stress group mprotect+mremap"),
])
def test_a_failed_or_missing_stress_group_stops_the_bench(console, message):
    with pytest.raises(HarnessError) as e:
        workloads.stress_ops(console, "mprotect+mremap", "q", [])
    assert message in str(e.value)


BUILD_CONSOLE = """[    2.1] Run /sbin/build-init as init process
BUILD configure 31.10 exit 0
BUILD make {make}
make: *** [Makefile:123: all] Error 2
build done"""


def test_a_build_phase_is_timed_by_the_guest():
    console = BUILD_CONSOLE.format(make="27.41 exit 0")
    assert workloads.build_columns(console, ("configure", "make"), "q",
                                   []) == {"configure_s": 31.1,
                                           "make_s": 27.41}


@pytest.mark.parametrize("console, message", [
    (BUILD_CONSOLE.format(make="3.02 exit 2"),
     "the build's make phase failed (exit 2)"),
    ("build done", "the guest ran no build phase configure"),
])
def test_a_failed_or_missing_build_phase_stops_the_bench(console, message):
    with pytest.raises(HarnessError) as e:
        workloads.build_columns(console, ("configure", "make"), "q", [])
    assert message in str(e.value)


def test_the_build_workload_builds_dash_in_the_guest(qemu, tmp_path):
    """Two runs of the build workload at -smp 2: each configures and
    makes dash in the guest, and records each phase's time by the guest's
    clock and what info jit says afterwards (make build-image first)."""
    out = tmp_path / "out"
    proc = run([BENCH, "--workload", "build", "-n", "2",
                "--binary", f"q={qemu}", "--config", "smp2=-smp 2",
                "--layout-smp", "2", "--layout-tb-size", "64",
                "--out", out], timeout=1200)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"\] round 1 q +smp2 +wall +[\d.]+ s  configure "
                     r"[\d.]+ s  make [\d.]+ s", proc.stdout), proc.stdout
    results = json.loads((out / "results.json").read_text())
    assert results["metrics"] == ["wall_s", "configure_s", "make_s"]
    for r in results["runs"]:
        assert 0 < r["configure_s"] + r["make_s"] < r["wall_s"], r
        assert r["regions_in_use"] >= 2 and r["tb_count"] > 0, r
    assert "| smp2 | q | " in (out / "summary.md").read_text()


def test_report_compares_the_default_with_strict_on_one_binary(tmp_path):
    results = tlb_results()
    for rnd in (1, 2):
        results["runs"].append({"round": rnd, "binary": "fast",
                                "config": "smp2-strict", "wall_s": 2.0,
                                "mprotect_ns": 240 + 2 * rnd,
                                "mprotect_p50_ns": 240,
                                "mprotect_p99_ns": 480})
    results["configs"]["smp2-strict"] = "-smp 2 -accel tcg,tlb-flush=strict"
    results["pairs"]["smp2-strict"] = "smp2"
    summary = report_of(results, tmp_path)
    table = summary.split("## Against strict on the same binary")[1] \
        .split("##")[0]
    # wall 1.0 / 2.0; mprotect (121 / 242 + 122 / 244) / 2 = 0.5
    assert "| smp2 / smp2-strict | fast | 0.500 ± 0.000 | 0.500 ± 0.000 |" \
        in table
    # (111 / 242 + 112 / 244) / 2
    assert "| smp2-relaxed / smp2-strict | fast | 0.500 ± 0.000 | 0.459 ± " \
        in table
    assert "| base |" not in table


def test_report_weighs_the_guest_progress_of_every_thread(tmp_path):
    results = tlb_results()
    results["metrics"].append("mprotect_others_per_s")
    for r in results["runs"]:
        r["mprotect_others_per_s"] = 1000.0
    for rnd, (ns, others) in enumerate([(242, 500.0), (366, 250.0)], 1):
        results["runs"].append({"round": rnd, "binary": "fast",
                                "config": "smp2-strict", "wall_s": 2.0,
                                "mprotect_ns": ns, "mprotect_p50_ns": ns,
                                "mprotect_p99_ns": ns,
                                "mprotect_others_per_s": others})
    results["configs"]["smp2-strict"] = "-smp 2 -accel tcg,tlb-flush=strict"
    results["pairs"]["smp2-strict"] = "smp2"
    summary = report_of(results, tmp_path)
    table = summary.split("## The guest's progress against strict")[1] \
        .split("##")[0]
    # smp2 runs 121 and 122 ns: ((242 / 121 + 1000 / 500) / 2
    # + (366 / 122 + 1000 / 250) / 2) / 2 = (2 + 3.5) / 2
    assert "| smp2 / smp2-strict | fast | 2.750 ± 9.529 |" in table
    assert "smp2-relaxed" not in table and "| base |" not in table


def children(pid):
    """The pids of @pid's child processes."""
    found = []
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def test_a_stopped_bench_leaves_no_load_behind(qemu, tmp_path):
    """kill or timeout (SIGTERM) stops bench's busy-host processes and its
    QEMU with it: they outlived it, and loaded the host of the next
    measurement.  Without the handler, this test fails."""
    proc = subprocess.Popen([BENCH, "--workload", "tlb", "-n", "3",
                             "--smp", "2", "--binary", f"q={qemu}",
                             "--busy", "2", "--layout-smp", "1",
                             "--layout-tb-size", "64",
                             "--out", tmp_path / "out"],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while len(children(proc.pid)) < 3 and time.monotonic() < deadline:
        time.sleep(0.2)     # two hogs and a QEMU
    started = children(proc.pid)
    assert len(started) >= 3
    proc.terminate()
    # 143, or 1 where stopping QEMU midway made bench say why
    assert proc.wait(timeout=60) != 0
    alive = [pid for pid in started if pathlib.Path(f"/proc/{pid}").exists()]
    assert not alive


def test_stress_runs_stress_ng_in_the_image_on_a_busy_host(qemu, tmp_path):
    """One short round of one group in each mode, with a host process
    keeping a host CPU busy: each run reports its group's bogo-ops/s."""
    out = tmp_path / "out"
    proc = run([BENCH, "--workload", "stress", "-n", "2", "--smp", "2",
                "--binary", f"q={qemu}", "--stress-groups", "mprotect",
                "--stress-seconds", "2", "--busy", "1",
                "--layout-smp", "1", "--layout-tb-size", "64",
                "--out", out], timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads((out / "results.json").read_text())
    assert results["busy_host_processes"] == 1
    assert results["metrics"] == ["wall_s", "mprotect_ops_s"]
    assert sorted({r["config"] for r in results["runs"]}) == \
        ["smp2", "smp2-strict"]
    assert all(r["mprotect_ops_s"] > 0 for r in results["runs"])
    summary = (out / "summary.md").read_text()
    assert "1 other processes kept host CPUs busy" in summary
    assert "| smp2 / smp2-strict | q |" in summary


INFO_JIT = """Accelerator settings:
one-insn-per-tb: off

Translation buffer state:
gen code size       1234/1073725440
code buffer         0x7f4ba3e00000-0x7f4be3e00000
code regions        16 x 65536 KiB, 3 in use, guard pages off
code huge pages     2048 KiB, 2048/2048 KiB resident
TB count            7
cross page TB count 0 (0%)

Statistics:
TB flush count      1
TLB full flushes    2
TLB partial flushes 3
TLB elided flushes  1792
TLB index flushes   250 (maintenance 11, address space 120, register 90, range 20, large page 9)
TLB fills           70000 (tables grown 5, shrunk 4)
TB jmp cache misses 33000 (cleared 3000, empty 20000, same page 6000, other page 3500, invalid 400, flags 90, cflags 10)
TB jmp cache wipes  300 (TLB flush 210, clean TLB flush 64, range 1, TB invalidate 23, other 2)
TB lookups          90000 (other 100, return 20000, jump 15000, call 14000, branch 30000, page end 5000, main loop 5900)
TB lookup misses    33000 (other 5, return 6000, jump 9000, call 7000, branch 8000, page end 1000, main loop 1995)
TLB flush mode      relaxed (auto: every CPU supports relaxed)
TLB relaxed flushes 40 (coalesced 0, escalated 0, queued for no other vCPU 9)
TLB remote flushes filtered out 30 (TLBs probed 21, of which held nothing 17)
TLB remote catch-ups 6 (kicks 4, inactive vCPUs skipped 0)
TLB barrier waits   5 (12 us in all)
TLB parks           3 (41 us in all; x-tlb-park=auto)
TLB barrier policy  poll up to 50 us while waits are that short, else sleep at once (1 of 2 vCPUs poll now)
"""


def test_info_jit_is_read_in_one_place():
    """harness.machine.Jit: the fields the harness and the tests use."""
    jit = Jit.parse(INFO_JIT.replace("\n", "\r\n"))
    assert jit.code_buffer == (0x7f4ba3e00000, 0x7f4be3e00000)
    assert jit.regions == Regions(16, 65536, guard_pages=False)
    assert jit.huge_pages == "2048 KiB, 2048/2048 KiB resident"
    assert (jit.tlb_flush_mode, jit.tlb_flush_reason) == \
        ("relaxed", "auto: every CPU supports relaxed")
    assert jit.polling_vcpus == (1, 2)
    assert jit.counters() == {
        "code_bytes": 1234, "code_capacity": 1073725440, "tb_count": 7,
        "tb_flushes": 1, "tlb_full_flushes": 2, "tlb_partial_flushes": 3,
        "tlb_elided_flushes": 1792, "tlb_index_flushes": 250,
        "tlb_flushes_maintenance": 11, "tlb_flushes_address_space": 120,
        "tlb_flushes_register": 90, "tlb_flushes_range": 20,
        "tlb_flushes_large_page": 9, "tlb_fills": 70000,
        "tlb_tables_grown": 5, "tlb_tables_shrunk": 4, "jc_misses": 33000,
        "jc_misses_cleared": 3000, "jc_misses_empty": 20000,
        "jc_misses_same_page": 6000, "jc_misses_other_page": 3500,
        "jc_misses_invalid": 400, "jc_misses_flags": 90,
        "jc_misses_cflags": 10,
        "jc_wipes": 300, "jc_wipes_tlb_flush": 210,
        "jc_wipes_clean_flush": 64, "jc_wipes_range": 1,
        "jc_wipes_tb_invalidate": 23, "jc_wipes_other": 2,
        "jc_lookups": 90000, "jc_lookups_other": 100,
        "jc_lookups_return": 20000, "jc_lookups_jump": 15000,
        "jc_lookups_call": 14000, "jc_lookups_branch": 30000,
        "jc_lookups_page_end": 5000, "jc_lookups_main_loop": 5900,
        "jc_lookup_misses": 33000, "jc_lookup_misses_other": 5,
        "jc_lookup_misses_return": 6000, "jc_lookup_misses_jump": 9000,
        "jc_lookup_misses_call": 7000, "jc_lookup_misses_branch": 8000,
        "jc_lookup_misses_page_end": 1000,
        "jc_lookup_misses_main_loop": 1995,
        "tlb_relaxed_flushes": 40,
        "tlb_alone": 9, "tlb_filtered_out": 30, "tlb_probed": 21,
        "tlb_probe_skipped": 17, "tlb_catch_ups": 6, "tlb_kicks": 4,
        "tlb_barrier_waits": 5, "tlb_barrier_wait_us": 12, "tlb_parks": 3,
        "tlb_parked_us": 41, "regions": 16, "regions_in_use": 3,
        "region_kib": 65536}
    # An upstream build has none of our lines.
    upstream = Jit.parse("gen code size       0/1073736704\nTB count            0\n")
    assert upstream.counters() == {"code_bytes": 0,
                                   "code_capacity": 1073736704, "tb_count": 0}
    assert upstream.regions is None and upstream.tlb_flush_mode is None


def fake_meson_build(tmp_path, ninja_script):
    """A meson build directory holding a 'binary', and a fake ninja on a
    PATH that logs its arguments; returns (binary, log, env)."""
    build = tmp_path / "build"
    (build / "meson-info").mkdir(parents=True)
    (build / "meson-info" / "meson-info.json").write_text(json.dumps(
        {"directories": {"source": str(tmp_path), "build": str(build)}}))
    binary = build / "qemu-system-aarch64"
    binary.write_text("#!/bin/sh\nexit 1\n")
    binary.chmod(0o755)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "ninja.log"
    ninja = bindir / "ninja"
    ninja.write_text(f'#!/bin/sh\necho "$@" >>{log}\n{ninja_script}\n')
    ninja.chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}
    return binary, log, env


def test_bench_builds_a_meson_built_binary_before_it_runs(tmp_path):
    """binary_sources names the source tree's commit: true only of a
    binary that is up to date with it, so bench runs ninja first."""
    binary, log, env = fake_meson_build(tmp_path, "exit 0")
    proc = run([BENCH, "--workload", "boot", "-n", "2",
                "--binary", f"a={binary}", "--out", tmp_path / "out"],
               env=env)
    assert proc.returncode != 0     # the fake binary runs nothing
    assert log.read_text() == f"-C {binary.parent} qemu-system-aarch64\n"


def test_a_binary_outside_a_meson_build_is_not_built(tmp_path, monkeypatch):
    binary, log, env = fake_meson_build(tmp_path, "exit 0")
    monkeypatch.setenv("PATH", env["PATH"])
    copy = tmp_path / "copy"
    copy.write_bytes(binary.read_bytes())
    matrix.build_binary(copy)
    assert not log.exists()


def test_a_failing_build_stops_bench_before_it_writes(tmp_path):
    binary, log, env = fake_meson_build(tmp_path, 'echo "no rule"; exit 1')
    proc = run([BENCH, "--workload", "boot", "-n", "2",
                "--binary", f"a={binary}", "--out", tmp_path / "out"],
               env=env)
    assert proc.returncode != 0
    assert "no rule" in proc.stderr and "failed" in proc.stderr
    assert not (tmp_path / "out").exists()


def write_layout_results(folder, rows, configs=("smp1",)):
    folder.mkdir()
    runs = [{"round": r, "binary": b, "config": c, "tb_ns": v}
            for r, b, v in rows for c in configs]
    (folder / "results.json").write_text(json.dumps(
        {"configs": {c: "" for c in configs}, "runs": runs}))


def test_layouts_compare_geometric_means_of_each_build_per_round(tmp_path):
    from harness import layouts
    # Round 1: qemu's layouts 100 and 400 (geomean 200) against the
    # baseline's 100 and 100; round 2 (second folder): 1 against 1.
    write_layout_results(tmp_path / "a", [
        (1, "baseline", 100), (1, "qemu", 100), (1, "baseline-1", 100),
        (1, "qemu-1", 400), (1, "qemu-2", 7)])
    write_layout_results(tmp_path / "b", [
        (1, "baseline", 5), (1, "qemu", 5), (1, "baseline-1", 5),
        (1, "qemu-1", 5)])
    rounds = layouts.read_rounds([tmp_path / "a", tmp_path / "b"])
    assert layouts.layout_names(rounds) == (["baseline", "baseline-1"],
                                            ["qemu", "qemu-1"])
    lines = layouts.report(rounds, "tb_ns")
    ratio = next(line for line in lines if "over 2 layouts" in line)
    assert "2 rounds): 1.5000 ± 6.3530" in ratio     # mean of 2 and 1
    assert lines[-1] == "  spread of layout means: baseline 52.5-52.5 " \
        "(1.000x), qemu 52.5-202 (3.857x)"


@pytest.mark.parametrize("rows, metric, message", [
    ([(1, "baseline", 1), (1, "qemu", 1), (2, "baseline", 1)], "tb_ns",
     "round 2 has no run of qemu"),
    ([(1, "baseline", 1), (1, "qemu", 1)], "svc_ns", "no column svc_ns"),
    ([(1, "baseline-1", 1), (1, "qemu-1", 1)], "tb_ns",
     "no baseline and qemu binaries"),
    ([(1, "baseline", 1), (1, "qemu", 1)], "tb_ns",
     "ran 2 configurations, not one"),
])
def test_layouts_refuse_results_they_cannot_compare(tmp_path, rows, metric,
                                                    message):
    configs = ("smp1", "smp2") if "configurations" in message else ("smp1",)
    write_layout_results(tmp_path / "a", rows, configs)
    proc = run([REPO / "bin" / "bench-layouts", "--metric", metric,
                tmp_path / "a"])
    assert proc.returncode == 1
    assert message in proc.stderr


PERF_SCRIPT = "".join(f"{ip:>16x} {sym} ({dso})\n" for ip, sym, dso, n in [
    (0x7f3e5c0012a4, "[unknown]", "perf-31736.map", 30),
    (0x7f3e5c0099f0, "[unknown]", "perf-31736.map", 10),
    (0x55d0c0a1b2c3, "tcg_optimize", "/usr/bin/qemu-system-aarch64", 20),
    (0x55d0c0a1b2c7, "tb_htable_lookup", "/usr/bin/qemu-system-aarch64", 10),
    (0xffffffff81636395, "clear_page_erms", "[kernel.kallsyms]", 8),
    (0x55d0c0a1b2d0, "helper_le_ldq_mmu", "/usr/bin/qemu-system-aarch64", 7),
    (0x55d0c0a1b2e0, "cpu_exec_loop", "/usr/bin/qemu-system-aarch64", 5),
    (0x7f0000001000, "__memset_avx2_unaligned_erms", "/lib/libc.so.6", 4),
    (0x55d0c0a1b2f0, "pauth_computepac", "/usr/bin/qemu-system-aarch64", 3),
    (0x55d0c0a1b300, "qemu_mutex_lock_impl", "/usr/bin/qemu-system-aarch64", 3),
] for _ in range(n))


def test_host_profile_sorts_samples_by_what_qemu_did():
    """Samples in translated code count together, whatever their
    address; the rest by symbol."""
    from harness import hostprofile
    rows = hostprofile.read_samples(PERF_SCRIPT)
    assert rows[0] == (40.0, "perf-31736.map", "[unknown]")
    assert (8.0, "[kernel]", "clear_page_erms") in rows
    assert hostprofile.shares(rows) == {
        "translated code": 40.0, "code generation": 20.0,
        "TB lookup and chaining": 10.0, "host kernel": 8.0,
        "softmmu TLB and memory": 7.0, "execution loop": 5.0,
        "other": 4.0, "pointer authentication": 3.0,
        "locks and waiting": 3.0}


def fake_runs(monkeypatch, shuffle):
    """run_rounds() over three jobs, 4 rounds, with run_once() recording
    the order instead of starting QEMU."""
    monkeypatch.setattr(matrix, "run_once",
                        lambda path, args, *rest: {"wall_s": 1.0})
    jobs = [matrix.Job("qemu", "q", name, []) for name in "abc"]
    return matrix.run_rounds(jobs, 4, [], {}, 10.0, False, 0,
                             shuffle=shuffle)


def test_rounds_run_in_the_same_order_unless_shuffled(monkeypatch):
    rows = fake_runs(monkeypatch, shuffle=False)
    assert [r["config"] for r in rows] == list("abc") * 4
    assert "position" not in rows[0]


def test_shuffled_rounds_run_every_job_once_in_a_seeded_order(monkeypatch):
    rows = fake_runs(monkeypatch, shuffle=True)
    orders = ["".join(r["config"] for r in rows if r["round"] == rnd)
              for rnd in range(1, 5)]
    assert all(sorted(order) == list("abc") for order in orders)
    assert len(set(orders)) > 1, orders
    assert [r["position"] for r in rows] == [1, 2, 3] * 4
    assert fake_runs(monkeypatch, shuffle=True) == rows
