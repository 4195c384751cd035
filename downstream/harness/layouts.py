"""bin/bench-layouts: qemu against the baseline over link-order layouts.

Read the results.json of bench folders whose binaries are baseline, qemu
and their relinked layouts baseline-N, qemu-N (bin/relink-shuffled), run
in one configuration, and print for each METRIC (a column of
results.csv: tb_ns, munmap_ns, wall_s...)
each binary's mean ± 95% CI, then per round the geometric mean of the
qemu layouts over that of the baseline layouts, with its mean ± 95% CI
over the rounds: where the linker put the code moves both builds (by 8%
on the tb path, downstream/benchmarks/tlb-idle.md), so one as-built pair
compares two draws, this compares the builds.  Several folders pool
their rounds (each folder's run of the same binaries).

  bin/bench-layouts --metric tb_ns --metric svc_ns build/bench/layouts
"""

import argparse
import json
import math
import pathlib
import statistics
import sys
from typing import Dict, List, Tuple

from .stats import mean_ci

BUILDS = ("baseline", "qemu")


def read_rounds(folders) -> List[Dict[str, dict]]:
    """Each round of @folders' results.json files: binary -> run."""
    rounds = []
    for folder in folders:
        results = json.loads((folder / "results.json").read_text())
        if len(results["configs"]) != 1:
            raise ValueError(f"{folder} ran {len(results['configs'])} "
                             "configurations, not one")
        by_round: Dict[int, Dict[str, dict]] = {}
        for run in results["runs"]:
            by_round.setdefault(run["round"], {})[run["binary"]] = run
        rounds += [by_round[r] for r in sorted(by_round)]
    return rounds


def layout_names(rounds) -> Tuple[List[str], List[str]]:
    """The baseline's and qemu's binaries, as built first, then each
    layout N that both builds have."""
    names = set().union(*rounds)
    suffixes = sorted({n.partition("-")[2] for n in names
                       if n.partition("-")[0] in BUILDS},
                      key=lambda s: (s != "", s))
    suffixes = [s for s in suffixes
                if all((f"{b}-{s}" if s else b) in names for b in BUILDS)]
    if "" not in suffixes:
        raise ValueError("no baseline and qemu binaries in these results")
    return tuple([f"{b}-{s}" if s else b for s in suffixes] for b in BUILDS)


def geomean(xs) -> float:
    return math.exp(statistics.fmean(map(math.log, xs)))


def number(x: float) -> str:
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.4g}"


def report(rounds, metric: str) -> List[str]:
    base, ours = layout_names(rounds)
    for n, r in enumerate(rounds, 1):
        missing = [b for b in base + ours if b not in r]
        if missing:
            raise ValueError(f"round {n} has no run of {', '.join(missing)}")
    if rounds[0][base[0]].get(metric) is None:
        raise ValueError(f"no column {metric} in these results")
    value = lambda r, b: float(r[b][metric])
    lines = [f"== {metric}"]
    for pair in zip(base, ours):
        for b in pair:
            m, ci = mean_ci([value(r, b) for r in rounds])
            lines.append(f"  {b:12} {number(m):>9} ± {number(ci):>6}")
    m, ci = mean_ci([geomean([value(r, b) for b in ours]) /
                     geomean([value(r, b) for b in base]) for r in rounds])
    lines.append(f"  qemu / baseline over {len(base)} layouts each "
                 f"(geometric means per round, {len(rounds)} rounds): "
                 f"{m:.4f} ± {ci:.4f}")
    means = {b: [statistics.fmean(value(r, x) for r in rounds) for x in xs]
             for b, xs in zip(BUILDS, (base, ours))}
    lines.append("  spread of layout means: " + ", ".join(
        f"{b} {number(min(v))}-{number(max(v))} ({max(v) / min(v):.3f}x)"
        for b, v in means.items()))
    return lines


def main():
    parser = argparse.ArgumentParser(
        prog="bin/bench-layouts", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", type=pathlib.Path,
                        metavar="FOLDER")
    parser.add_argument("--metric", action="append", required=True,
                        help="a results.csv column (repeat for more)")
    args = parser.parse_args()
    for folder in args.folders:
        if not (folder / "results.json").is_file():
            parser.error(f"no {folder / 'results.json'}")
    try:
        rounds = read_rounds(args.folders)
        for metric in args.metric:
            print("\n".join(report(rounds, metric)))
    except ValueError as e:
        sys.exit(f"bench-layouts: {e}")


if __name__ == "__main__":
    main()
