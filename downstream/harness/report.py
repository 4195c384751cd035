"""bin/bench-report: summarise a bin/bench results folder: summary.md with mean and 95%
confidence interval (Student t) of every metric and each pair's ratio to the
reference binary, and, with matplotlib, a bar chart per metric and
regions.png, the code buffer's region layout over -smp x tb-size.  For the
tlb workload also the tails (each operation's 99th percentile over its
median, per run) and scaling.png, each operation's cost against -smp per
binary and mode, where the configurations are named smpN[-MODE] for two or
more N.  summary.md names the charts but does not show them: a folder is
committed as results.json and summary.md, and bin/bench-report redraws the
charts from results.json.

A ratio is the mean of the per-round ratios of a pair to the reference
binary's run of the configuration results.json pairs it with ("pairs",
from bin/bench --pair) in the same round, with their 95% confidence
interval.  A configuration without a pair is an error.
"""

import argparse
import json
import math
import pathlib
import re
import statistics
import sys

from . import HarnessError, stats
from .stats import mean_ci

# Per-run columns averaged in the detail table: column -> heading.
DETAILS = {
    "kernel_s": "kernel starts (s)",
    "userspace_s": "userspace (s)",
    "booted_s": "booted (s)",
    "user_s": "user CPU (s)",
    "sys_s": "sys CPU (s)",
    "code_mib": "code (MiB)",
    "tb_flushes": "TB flushes",
    "regions_in_use": "regions in use",
    "tlb_full_flushes": "TLB full flushes",
    "tlb_partial_flushes": "TLB partial flushes",
    "tlb_relaxed_flushes": "relaxed broadcasts",
    "tlb_filtered_out": "remote parts filtered out",
    "tlb_barrier_waits": "DSB waits",
    "tlb_parks": "parks",
    "buffer_rss_mib": "buffer RSS (MiB)",
    "huge_share": "on huge pages (%)",
}


# A configuration of the tlb workload: -smp and mode (empty: the default).
SMP_CONFIG = re.compile(r"^smp(\d+)(?:-(.+))?$")


def operations(results):
    """The tlb workload's operations: the metrics OP_ns with OP_p50_ns and
    OP_p99_ns beside them (barrier_wait too, with bench --barrier-waits)."""
    metrics = results["metrics"]
    return [m[:-3] for m in metrics if f"{m[:-3]}_p99_ns" in metrics]


def scaling_lines(results):
    """{(binary, mode): [(smp, config)]} of the smpN[-MODE]
    configurations, when they cover two or more -smp values."""
    lines = {}
    for r in results["runs"]:
        m = SMP_CONFIG.match(r["config"])
        if m:
            key = (r["binary"], m[2] or "default")
            entry = (int(m[1]), r["config"])
            if entry not in lines.setdefault(key, []):
                lines[key].append(entry)
    smps = {smp for line in lines.values() for smp, _ in line}
    return {k: sorted(v) for k, v in lines.items()} if len(smps) > 1 else {}


def by_round(runs, binary, config, metric):
    return {r["round"]: r[metric] for r in runs
            if r["binary"] == binary and r["config"] == config
            and r.get(metric) is not None}


def reference_config(results, config):
    """The reference's configuration that config is compared with."""
    if "pairs" not in results:
        raise HarnessError("results.json has no 'pairs' of configurations "
                           "with the reference's; rerun bin/bench")
    try:
        return results["pairs"][config]
    except KeyError:
        raise HarnessError(f"results.json pairs configuration {config} "
                           "with no reference configuration") from None


def pair_ratio_ci(results, runs, binary, config, metric):
    """Mean ± CI of the per-round ratios of (binary, config) to the
    reference's run of its paired configuration, or None for the
    reference's own run."""
    ref = next(iter(results["binaries"]))
    ref_config = reference_config(results, config)
    if (binary, config) == (ref, ref_config):
        return None
    return stats.ratio_ci(by_round(runs, binary, config, metric),
                          by_round(runs, ref, ref_config, metric))


def derived(run):
    """Columns computed from a run's raw columns."""
    run = dict(run)
    if run.get("code_bytes") is not None:
        run["code_mib"] = run["code_bytes"] / 2 ** 20
    if run.get("buffer_rss_kib"):
        run["buffer_rss_mib"] = run["buffer_rss_kib"] / 1024
        run["huge_share"] = 100 * run["buffer_anon_huge_kib"] / run["buffer_rss_kib"]
    return run


def fmt(value, digits):
    return "—" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def busy_host(results) -> str:
    """What kept the host busy, as the machine line says it."""
    n = results.get("busy_host_processes")
    if not n:
        return ""
    if results.get("busy_host_load") == "compile":
        return f"; a compile of QEMU's sources (make -j {n}) kept host " \
            "CPUs busy"
    return f"; {n} other processes kept host CPUs busy"


def charts(results):
    """{chart: file name} of the charts drawn from @results: a bar chart
    per metric, scaling.png and regions.png where they apply."""
    names = {metric: f"{metric}.png" for metric in results["metrics"]}
    if operations(results) and scaling_lines(results):
        names["scaling"] = "scaling.png"
    if results.get("layout"):
        names["regions"] = "regions.png"
    return names


def charts_section(results):
    """The summary's last section: the charts, by name, that
    bin/bench-report draws from results.json and summary.md leaves out."""
    names = charts(results)
    bars = [names[metric] for metric in results["metrics"]]
    described = [", ".join(bars) + " (a bar chart per metric: mean ± 95% "
                 "CI per configuration and binary)"]
    if "scaling" in names:
        described.append("scaling.png (each operation's mean time per "
                         "binary and mode against -smp, mean ± 95% CI over "
                         "rounds)")
    if "regions" in names:
        described.append(
            "regions.png (the code buffer's regions over -smp and "
            "tb-size, from each binary started paused: the usable bytes of "
            "a region, from x-query-jit, or the size of one executable "
            "mapping where guard pages split the buffer; green cells hold "
            "whole 2 MiB huge pages)")
    return ["", "## Charts", "",
            "`bin/bench-report FOLDER` draws these charts into FOLDER from "
            "its results.json, with matplotlib: " + "; ".join(described) +
            "."]


def summary(results):
    runs = [derived(r) for r in results["runs"]]
    binaries = list(results["binaries"])
    ref = binaries[0]
    pairs = list(dict.fromkeys((r["config"], r["binary"]) for r in runs))
    sources = results.get("binary_sources", {})
    for config, _ in pairs:
        reference_config(results, config)
    rounds = max(r["round"] for r in runs)
    m = results["machine"]
    lines = [
        f"# {results['workload']}: {rounds} interleaved rounds",
        "",
        f"- command: `{results['command']}` ({results['date']})",
        f"- machine: {m['cpu']}, {m['cpus']} CPUs"
        + (f" ({m['cpus_usable']} usable: QEMU's CPU affinity)"
           if m.get("cpus_usable", m["cpus"]) != m["cpus"] else "")
        + f", {m['memory_gib']} GiB, "
        f"{m['kernel']}, THP {m['thp']}"
        + busy_host(results),
        f"- guest: {results['guest']}; every run adds `{results['qemu_args']}`",
        "- binaries: " + ", ".join(
            f"{n}=`{p}` ({sources.get(n) or 'source unknown'})"
            for n, p in results["binaries"].items()),
        "- compared with the reference's: " + ", ".join(
            f"{c} with {r}" for c, r in results["pairs"].items()),
        "- configurations: " + ", ".join(f"{n}=`{a}`" for n, a in
                                         results["configs"].items()),
    ]
    for metric in results["metrics"]:
        digits = 3 if metric.endswith("_s") else 0
        lines += ["", f"## {metric}", "",
                  *(["Bogo-ops per second: higher is better.", ""]
                    if metric.endswith("_ops_s") else []),
                  f"| configuration | binary | {metric}, mean ± 95% CI "
                  f"| ratio to {ref}, mean ± 95% CI |",
                  "|---|---|---|---|"]
        for config, binary in pairs:
            samples = list(by_round(runs, binary, config, metric).values())
            if not samples:     # e.g. barrier_wait under strict maintenance
                continue
            mean, ci = mean_ci(samples)
            ratio = pair_ratio_ci(results, runs, binary, config, metric)
            lines.append(f"| {config} | {binary} | {fmt(mean, digits)} ± "
                         f"{fmt(ci, digits)} | " +
                         (f"{ratio[0]:.3f} ± {ratio[1]:.3f}" if ratio else "—")
                         + " |")
    lines += mode_ratios(results, runs)
    lines += guest_progress(results, runs)
    lines += ["", "## CPU time, ratio to " + ref, "",
              "QEMU's user and system CPU time per run, as per-round ratios "
              "(mean ± 95% CI) like the wall time's.", "",
              "| configuration | binary | user CPU | system CPU |",
              "|---|---|---|---|"]
    for config, binary in pairs:
        cells = [pair_ratio_ci(results, runs, binary, config, c)
                 for c in ("user_s", "sys_s")]
        if any(cells):
            lines.append(f"| {config} | {binary} | " + " | ".join(
                f"{r[0]:.3f} ± {r[1]:.3f}" if r else "—" for r in cells) + " |")
    columns = [c for c in DETAILS if any(r.get(c) is not None for r in runs)]
    lines += ["", "## Per run, mean", "",
              "Phases are the times, from QEMU's start, at which the console "
              "printed the kernel's first line, `Run ... as init process` and "
              "`booted`. TLB counters are QEMU's, summed over vCPUs; the "
              "buffer's RSS and its share on huge pages are read from "
              "/proc/PID/smaps at power-off.", "",
              "| configuration | binary | " + " | ".join(DETAILS[c] for c in columns) + " |",
              "|---|---|" + "---|" * len(columns)]
    for config, binary in pairs:
        cells = []
        for c in columns:
            values = [r[c] for r in runs if r["config"] == config and
                      r["binary"] == binary and r.get(c) is not None]
            digits = 1 if c.endswith(("_s", "_mib", "_share")) else 0
            cells.append(fmt(statistics.fmean(values), digits)
                         if values else "—")
        lines.append(f"| {config} | {binary} | " + " | ".join(cells) + " |")
    ops = operations(results)
    if ops:
        lines += ["", "## Tails", "",
                  "Each run's 99th percentile of one operation over its "
                  "median (from the guest's samples of every operation; "
                  "barrier_wait's from QEMU's trace of every waiting DSB), "
                  "mean ± 95% CI over rounds.", "",
                  "| configuration | binary | " +
                  " | ".join(f"{op} p99 / p50" for op in ops) + " |",
                  "|---|---|" + "---|" * len(ops)]
        for config, binary in pairs:
            cells = []
            for op in ops:
                p50 = by_round(runs, binary, config, f"{op}_p50_ns")
                p99 = by_round(runs, binary, config, f"{op}_p99_ns")
                tails = [p99[k] / p50[k] for k in p50 if k in p99 and p50[k]]
                cells.append("{:.2f} ± {:.2f}".format(*mean_ci(tails))
                             if len(tails) > 1 else "—")
            lines.append(f"| {config} | {binary} | " + " | ".join(cells) +
                         " |")
    lines += charts_section(results)
    return "\n".join(lines) + "\n"


def strict_pairs(runs):
    """(config, binary, strict, n, variant) for each smpN (variant None)
    or smpN-relaxed configuration whose binary also ran smpN-strict."""
    for config, binary in dict.fromkeys((r["config"], r["binary"])
                                        for r in runs):
        m = SMP_CONFIG.match(config)
        if not m or m[2] not in (None, "relaxed"):
            continue
        strict = f"smp{m[1]}-strict"
        if any(r["config"] == strict and r["binary"] == binary
               for r in runs):
            yield config, binary, strict, int(m[1]), m[2]


def table_section(title, intro, columns, rows):
    """A summary section: its title, a paragraph, and a table of @rows
    under "configurations | binary | @columns"; nothing without rows."""
    if not rows:
        return []
    return ["", f"## {title}", "", intro, "",
            "| configurations | binary | " + " | ".join(columns) + " |",
            "|---|---|" + "---|" * len(columns), *rows]


def mode_ratios(results, runs):
    """Lines of a table: per binary, its smpN (default) and smpN-relaxed
    runs against its own smpN-strict run of the same round."""
    rows = []
    for config, binary, strict, _, _ in strict_pairs(runs):
        cells = []
        for metric in results["metrics"]:
            ratio = stats.ratio_ci(by_round(runs, binary, config, metric),
                                   by_round(runs, binary, strict, metric))
            cells.append(f"{ratio[0]:.3f} ± {ratio[1]:.3f}"
                         if ratio and not math.isnan(ratio[0]) else "—")
        rows.append(f"| {config} / {strict} | {binary} | " +
                    " | ".join(cells) + " |")
    return table_section(
        "Against strict on the same binary",
        "Per-round ratios (mean ± 95% CI) of the default (smpN) and of "
        "relaxed to strict maintenance, each binary against itself. "
        "Below 1 is faster for times, above 1 for bogo-ops/s.",
        results["metrics"], rows)


def guest_progress(results, runs):
    """Lines of a table: per binary, for each tlb operation that reports
    the other threads' accesses, the guest's progress in its smpN
    (default) run against its own smpN-strict run of the same round: the
    mean over the guest's N threads of each one's rate against strict
    mode's, where the operating thread's rate is operations per second
    and the N - 1 others' is their accesses per second together."""
    ops = [op for op in operations(results)
           if f"{op}_others_per_s" in results["metrics"]]
    rows = []
    for config, binary, strict, n, variant in strict_pairs(runs):
        if not ops or variant or n < 2:
            continue
        cells = []
        for op in ops:
            mine = by_round(runs, binary, config, f"{op}_ns")
            theirs = by_round(runs, binary, strict, f"{op}_ns")
            others = by_round(runs, binary, config, f"{op}_others_per_s")
            others_strict = by_round(runs, binary, strict,
                                     f"{op}_others_per_s")
            progress = [(theirs[k] / mine[k] + (n - 1) * others[k] /
                         others_strict[k]) / n
                        for k in mine if k in theirs and others.get(k) and
                        others_strict.get(k)]
            cells.append("%.3f ± %.3f" % mean_ci(progress) if progress
                         else "—")
        if any(c != "—" for c in cells):
            rows.append(f"| {config} / {strict} | {binary} | " +
                        " | ".join(cells) + " |")
    return table_section(
        "The guest's progress against strict",
        "Per round, the mean over the guest's N vCPU threads of each "
        "one's rate against its rate under strict maintenance on the "
        "same binary: the operating thread's operations per second, and "
        "the other N - 1 threads' accesses per second together. Above 1, "
        "the guest as a whole got more done; mean ± 95% CI.",
        ops, rows)


def bar_chart(results, metric, path):
    import matplotlib.pyplot as plt

    runs = results["runs"]
    configs = list(dict.fromkeys(r["config"] for r in runs))
    binaries = list(results["binaries"])
    width = 0.8 / len(binaries)
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(configs)), 4))
    for i, binary in enumerate(binaries):
        xs, means, cis = [], [], []
        for j, config in enumerate(configs):
            samples = list(by_round(runs, binary, config, metric).values())
            if samples:
                mean, ci = mean_ci(samples)
                xs.append(j + (i - (len(binaries) - 1) / 2) * width)
                means.append(mean)
                cis.append(ci)
        ax.bar(xs, means, width, yerr=cis, capsize=3, label=binary)
    ax.set_xticks(range(len(configs)), configs, rotation=20, ha="right")
    ax.set_ylabel(f"{metric}, mean ± 95% CI")
    ax.set_title(f"{results['workload']}: {metric}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def scaling_chart(results, path):
    import matplotlib.pyplot as plt

    ops = operations(results)
    lines = scaling_lines(results)
    fig, axes = plt.subplots(1, len(ops), squeeze=False,
                             figsize=(4.5 * len(ops), 4))
    for ax, op in zip(axes[0], ops):
        for (binary, mode), points in sorted(lines.items()):
            xs, means, cis = [], [], []
            for smp, config in points:
                samples = list(by_round(results["runs"], binary, config,
                                        f"{op}_ns").values())
                if len(samples) > 1:
                    mean, ci = mean_ci(samples)
                    xs.append(smp)
                    means.append(mean / 1000)
                    cis.append(ci / 1000)
            ax.errorbar(xs, means, yerr=cis, marker="o", capsize=3,
                        label=f"{binary} {mode}")
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted({smp for p in lines.values() for smp, _ in p}))
        ax.get_xaxis().set_major_formatter("{x:.0f}")
        ax.set_xlabel("-smp")
        ax.set_ylabel("µs per operation, mean ± 95% CI")
        ax.set_title(op)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def region_heatmap(layout, path):
    import matplotlib.pyplot as plt

    binaries = list(dict.fromkeys(cell["binary"] for cell in layout))
    smps = sorted({cell["smp"] for cell in layout})
    tbs = sorted({cell["tb_size_mib"] for cell in layout})
    fig, axes = plt.subplots(1, len(binaries), squeeze=False,
                             figsize=(1 + 0.9 * len(smps) * len(binaries),
                                      1.5 + 0.5 * len(tbs)))
    for ax, binary in zip(axes[0], binaries):
        grid = [[math.nan] * len(smps) for _ in tbs]
        for cell in layout:
            if cell["binary"] != binary or cell.get("error"):
                continue
            usable = cell.get("region_kib") or cell.get("buffer_mapping_kib")
            count = cell.get("regions") or cell.get("buffer_mappings")
            i, j = tbs.index(cell["tb_size_mib"]), smps.index(cell["smp"])
            grid[i][j] = 1.0 if usable % 2048 == 0 else 0.0
            label = f"{count}×\n{usable // 1024} MiB" if usable % 1024 == 0 \
                else f"{count}×\n{usable} KiB"
            ax.text(j, i, label, ha="center", va="center", fontsize=7)
        ax.imshow(grid, cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
        ax.set_xticks(range(len(smps)), smps)
        ax.set_yticks(range(len(tbs)), tbs)
        ax.set_xlabel("-smp")
        ax.set_ylabel("tb-size (MiB)")
        ax.set_title(f"{binary}: regions × usable size")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write(folder):
    """Write summary.md of folder/results.json and, with matplotlib, its
    charts; print the summary."""
    source = folder / "results.json"
    try:
        results = json.loads(source.read_text())
    except (OSError, ValueError) as e:
        raise HarnessError(f"cannot read {source}: {e}") from e
    text = summary(results)
    try:
        import matplotlib
    except ImportError:
        # A machine lent for one run (bin/device-harness) may lack it:
        # the summary is written, bin/bench-report draws the charts later.
        matplotlib = None
    if matplotlib:
        matplotlib.use("Agg")
        for chart, name in charts(results).items():
            if chart == "scaling":
                scaling_chart(results, folder / name)
            elif chart == "regions":
                region_heatmap(results["layout"], folder / name)
            else:
                bar_chart(results, chart, folder / name)
    (folder / "summary.md").write_text(text)
    print(text)
    print(f"bench-report: summary.md and charts in {folder}" if matplotlib
          else f"bench-report: summary.md in {folder}; no matplotlib, no "
          "charts")


def main():
    parser = argparse.ArgumentParser(
        prog="bin/bench-report", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=pathlib.Path,
                        help="a bin/bench output folder with results.json")
    try:
        write(parser.parse_args().folder)
    except HarnessError as e:
        sys.exit(f"bench-report: {e}")


if __name__ == "__main__":
    main()
