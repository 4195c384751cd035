"""bin/lookup-bench: the wall time of downstream/guest/lookup-bench.S, a
lookup-bound bare-metal program, under each NAME=COMMAND, one run of each
a round in the order given (A B A B ...); writes OUT/results.json (every
sample) and OUT/summary.md (mean ± 95% CI of each, and of the per-round
ratio to the first)."""

import json
import pathlib
import shlex
import subprocess
import sys
import time
from typing import List, Tuple

from . import HarnessError
from .stats import mean_ci, round_ratios

GUEST_ARGS = ["-M", "virt", "-cpu", "max", "-display", "none",
              "-nodefaults", "-no-reboot"]


def parse(configs: List[str]) -> List[Tuple[str, List[str]]]:
    named = []
    for config in configs:
        name, sep, command = config.partition("=")
        if not sep or not name or not command.strip():
            raise HarnessError(f"not NAME=QEMU_AND_ARGS: {config!r}")
        named.append((name, shlex.split(command)))
    return named


def run_once(command: List[str], kernel: str, timeout: float = 600) -> float:
    began = time.monotonic()
    proc = subprocess.run([*command, *GUEST_ARGS, "-kernel", kernel],
                          capture_output=True, text=True, timeout=timeout)
    wall = time.monotonic() - began
    if proc.returncode != 0:
        raise HarnessError(f"{shlex.join(command)} failed: {proc.stderr}")
    return wall


def main(argv: List[str]) -> int:
    runs, out, kernel, *configs = argv
    out = pathlib.Path(out)
    named = parse(configs)
    walls = {name: {} for name, _ in named}
    for rnd in range(1, int(runs) + 1):
        for name, command in named:
            walls[name][rnd] = run_once(command, kernel)
            print(f"round {rnd} {name:12} wall {walls[name][rnd]:.3f} s",
                  flush=True)
    results = {"command": shlex.join(["bin/lookup-bench", *argv[:2],
                                      *configs]),
               "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
               "configs": {name: shlex.join(c) for name, c in named},
               "wall_s": {name: list(w.values()) for name, w in walls.items()}}
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    first = named[0][0]
    lines = [f"# lookup-bench: {runs} interleaved rounds", "",
             f"- command: `{results['command']}` ({results['date']})", "",
             f"| config | wall_s, mean ± 95% CI | ratio to {first} |",
             "|---|---|---|"]
    for name, _ in named:
        mean, ci = mean_ci(list(walls[name].values()))
        rmean, rci = mean_ci(round_ratios(walls[name], walls[first]))
        lines.append(f"| {name} | {mean:.3f} ± {ci:.3f} | "
                     f"{rmean:.3f} ± {rci:.3f} |")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except HarnessError as e:
        sys.exit(f"lookup-bench: {e}")
