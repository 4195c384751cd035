"""bin/tlb-range-bench: what a range TLBI costs QEMU, by the range's
length and the TLB's size.  Builds downstream/guest/tlb-range-bench.c on
tests/tcg's aarch64 boot.S and runs it under each CONFIG, once a round
in an order shuffled per round; writes OUT/results.json (every sample)
and OUT/summary.md: per table size and range, the mean ns per iteration
less the same round's iterations without a TLBI, with its 95% CI.

A CONFIG is NAME=BINARY or NAME=BINARY,VAR=VALUE,...: the variables are
set in that QEMU's environment (a scratch build may read them)."""

import argparse
import json
import os
import pathlib
import random
import subprocess
import sys

from . import HarnessError, paths
from .stats import mean_ci

GUEST_SRC = paths.REPO / "downstream" / "guest" / "tlb-range-bench.c"
CFLAGS = ["-nostdlib", "-ffreestanding", "-fno-stack-protector"]


def build_guest(out: pathlib.Path) -> pathlib.Path:
    """Compile the guest program with tests/tcg's boot.S and minilib."""
    system = paths.TCG_SRC / "aarch64" / "system"
    cc = ["aarch64-linux-gnu-gcc", *CFLAGS, "-O2",
          "-isystem", str(paths.TCG_SRC / "minilib")]
    objs = []
    for src, obj in ((system / "boot.S", "boot.o"),
                     (paths.TCG_SRC / "minilib" / "printf.c", "printf.o")):
        objs.append(str(out / obj))
        subprocess.run([*cc, "-c", str(src), "-o", objs[-1]], check=True)
    kernel = out / "tlb-range-bench"
    subprocess.run([*cc, str(GUEST_SRC), "-o", str(kernel),
                    f"-Wl,-T{system / 'kernel.ld'}", "-static", *objs,
                    "-lgcc"], check=True)
    return kernel


def parse_config(text: str):
    """NAME=BINARY[,VAR=VALUE...] as (name, binary, environment)."""
    name, sep, rest = text.partition("=")
    binary, *assignments = rest.split(",")
    if not sep or not name or not binary:
        raise HarnessError(f"config '{text}' is not NAME=BINARY[,VAR=VALUE]")
    env = {}
    for a in assignments:
        var, sep, value = a.partition("=")
        if not sep or not var:
            raise HarnessError(f"config '{text}': '{a}' is not VAR=VALUE")
        env[var] = value
    if not os.access(binary, os.X_OK):
        raise HarnessError(f"config '{text}': {binary} is not executable")
    return name, binary, env


def run_once(binary, env, kernel, timeout=300):
    """One run: {(size, pages): ns per iteration}."""
    out = subprocess.run(
        [binary, "-M", "virt", "-cpu", "max", "-display", "none",
         "-semihosting-config", "enable=on,target=native,chardev=output",
         "-chardev", "stdio,id=output", "-kernel", str(kernel)],
        env={**os.environ, **env}, capture_output=True, text=True,
        timeout=timeout, check=True).stdout
    samples = {}
    for line in out.splitlines():
        fields = line.split()
        if fields[:1] == ["RESULT"]:
            samples[int(fields[1]), int(fields[2])] = int(fields[3])
    if not samples:
        raise HarnessError(f"{binary} printed no RESULT line:\n{out}")
    return samples


def summary(configs, runs) -> str:
    """Markdown: ns per iteration less no TLBI's, mean ± 95% CI."""
    names = [c[0] for c in configs]
    keys = sorted(runs[0]["samples"], key=lambda k: tuple(map(int,
                                                             k.split())))
    lines = ["| entries | pages | " + " | ".join(names) + " |",
             "|---:|---:|" + "---:|" * len(names)]
    for key in keys:
        size, pages = map(int, key.split())
        if not pages:
            continue
        cells = []
        for name in names:
            deltas = [r["samples"][key] - r["samples"][f"{size} 0"]
                      for r in runs if r["config"] == name]
            mean, ci = mean_ci(deltas)
            cells.append(f"{mean / 1000:.2f} ± {ci / 1000:.2f}")
        lines.append(f"| {size} | {pages} | " + " | ".join(cells) + " |")
    return ("µs per iteration more than without a TLBI, mean ± 95% CI over "
            f"{len(runs) // len(names)} rounds\n\n" + "\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(prog="bin/tlb-range-bench",
                                     description=__doc__)
    parser.add_argument("config", nargs="+",
                        help="NAME=BINARY[,VAR=VALUE...]")
    parser.add_argument("-n", "--rounds", type=int, default=5,
                        help="rounds (default: %(default)s)")
    parser.add_argument("-o", "--output", required=True,
                        help="folder for results.json and summary.md")
    args = parser.parse_args()
    try:
        if args.rounds < 2:
            raise HarnessError("--rounds must be at least 2 for a CI")
        configs = [parse_config(c) for c in args.config]
        out = pathlib.Path(args.output)
        out.mkdir(parents=True, exist_ok=True)
        kernel = build_guest(out)
        runs = []
        for rnd in range(args.rounds):
            order = list(configs)
            random.shuffle(order)
            for name, binary, env in order:
                samples = run_once(binary, env, kernel)
                runs.append({"round": rnd, "config": name,
                             "samples": {f"{s} {p}": v for (s, p), v
                                         in samples.items()}})
                print(f"round {rnd} {name}", file=sys.stderr, flush=True)
        (out / "results.json").write_text(json.dumps(
            {"configs": [{"name": n, "binary": b, "env": e}
                         for n, b, e in configs], "runs": runs}, indent=1))
        (out / "summary.md").write_text(summary(configs, runs))
        for obj in ("tlb-range-bench", "boot.o", "printf.o"):
            (out / obj).unlink()
        print((out / "summary.md").read_text())
    except (HarnessError, subprocess.CalledProcessError,
            subprocess.TimeoutExpired) as e:
        sys.exit(f"tlb-range-bench: {e}")


if __name__ == "__main__":
    main()
