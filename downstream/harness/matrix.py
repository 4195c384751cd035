"""bin/bench's matrix: each binary under each configuration, round by
round in the same order (A B A B ...), so that drift of the host hits all
pairs alike, or in an order drawn afresh each round (--shuffle); then
results.json and results.csv.

Paths and command lines in results.json are relative to the repository
(paths.repo_relative, paths.repo_relative_command): the results are committed, and must not name the
folders of the machine they were measured on."""

import csv
import datetime
import itertools
import json
import os
import pathlib
import platform
import random
import shlex
import subprocess
import sys
import time
from typing import Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

from . import HarnessError, paths
from .machine import VIRT
from .workloads import BusyHost, build_metric, probe, run_once

# (name, value) pairs of the command line: binaries, configurations.
Named = List[Tuple[str, str]]


class Job(NamedTuple):
    """One cell of the matrix: a binary under a configuration."""
    binary: str
    path: str
    config: str
    args: List[str]


def plan(binaries: Named, configs: Named) -> List[Job]:
    """Start every (binary, configuration) paused once: one that QEMU
    refuses is left out with a note on stderr, a configuration of
    NAME@BIN runs on binary BIN only, and one that no binary accepts is
    a HarnessError."""
    jobs = []
    for cname, cargs in configs:
        cname, _, only = cname.partition("@")
        if only and only not in dict(binaries):
            raise HarnessError(f"configuration {cname} names unknown "
                               f"binary {only}")
        accepted = []
        for bname, path in binaries:
            if only and bname != only:
                continue
            _, error = probe(path, shlex.split(cargs))
            if error is None:
                accepted.append(bname)
                jobs.append(Job(bname, path, cname, shlex.split(cargs)))
            else:
                print(f"bench: {bname} does not run {cname}: {error}",
                      file=sys.stderr)
        if not accepted:
            raise HarnessError(f"no binary accepts configuration {cname}")
    return jobs


def reference_pairs(given: Named, configs: Sequence[str],
                    ref_configs: Set[str]) -> Dict[str, str]:
    """Map each configuration to the reference binary's configuration it
    is compared with: the one given (NAME, REF pairs), else its namesake."""
    pairs: Dict[str, str] = {}
    for name, ref_config in given:
        if name not in configs:
            raise HarnessError(f"--pair {name}={ref_config} names no "
                               "configuration")
        if name in pairs:
            raise HarnessError(f"configuration {name} is paired twice")
        pairs[name] = ref_config
    for name in configs:
        ref_config = pairs.setdefault(name, name)
        if ref_config not in ref_configs:
            raise HarnessError(
                f"configuration {name} has no reference run: the reference "
                f"binary does not run {ref_config}; give --pair "
                f"{name}=CONFIG")
    return pairs


def run_rounds(jobs: List[Job], rounds: int, guest_args: Sequence[str],
               workload: dict, timeout: float, barrier_waits: bool,
               busy: int, busy_load: str = "hogs",
               shuffle: bool = False) -> List[dict]:
    """Every job once per round, with a progress line per run; the rows
    of results.json's "runs".  With @shuffle, each round runs the jobs in
    an order drawn from one generator seeded once, with 0, and
    each row says its place in the round ("position", from 1): a load
    whose period is near a round's length would otherwise meet every
    configuration at the same phase of its period in every round."""
    rows: List[dict] = []
    total = rounds * len(jobs)
    began = time.monotonic()
    orders = random.Random(0)
    with BusyHost(busy, busy_load):
        for rnd in range(1, rounds + 1):
            order = list(jobs)
            if shuffle:
                orders.shuffle(order)
            for position, job in enumerate(order, 1):
                row = run_once(job.path, [*job.args, *guest_args], workload,
                               timeout, barrier_waits)
                rows.append({"round": rnd, "binary": job.binary,
                             "config": job.config,
                             **({"position": position} if shuffle else {}),
                             **row})
                eta = (time.monotonic() - began) / len(rows) * \
                    (total - len(rows))
                phases = "".join(f"  {p} {row[build_metric(p)]:.2f} s"
                                 for p in workload.get("build", ()))
                print(f"[{len(rows)}/{total}] round {rnd} {job.binary:10} "
                      f"{job.config:22} wall {row['wall_s']:7.2f} s"
                      f"{phases}  ETA {eta / 60:5.1f} min", flush=True)
    return rows


def meson_info(path) -> Optional[dict]:
    """meson-info.json of the build directory a binary sits in, or None
    for a binary outside a meson build (a copy, another build system)."""
    info = pathlib.Path(path).resolve().parent / "meson-info" / "meson-info.json"
    try:
        return json.loads(info.read_text())
    except (OSError, ValueError):
        return None


def build_binary(path) -> None:
    """Bring a meson-built binary up to date with its source tree (ninja
    does nothing where it is), so that binary_source() names the commit
    that runs; a binary outside a meson build is left as it is."""
    info = meson_info(path)
    if info is None:
        return
    build_dir = pathlib.Path(info["directories"]["build"])
    target = pathlib.Path(path).resolve().relative_to(build_dir.resolve())
    proc = subprocess.run(["ninja", "-C", str(build_dir), str(target)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise HarnessError(f"ninja -C {build_dir} {target} failed:\n"
                           f"{(proc.stdout + proc.stderr)[-2000:]}")


def binary_source(path) -> Optional[str]:
    """The source tree commit a meson-built binary came from, with
    "-dirty" if the tree had uncommitted changes, or None if unknown.
    Only true of a binary that build_binary() has brought up to date."""
    try:
        source = meson_info(path)["directories"]["source"]
    except (TypeError, KeyError):
        return None
    proc = subprocess.run(["git", "-C", source, "describe", "--always",
                           "--abbrev=40", "--dirty", "--match", "NONE"],
                          capture_output=True, text=True, check=False)
    return proc.stdout.strip() or None


def host_description() -> dict:
    """The host the matrix runs on: CPU, memory, kernel, THP setting."""
    cpu = "unknown"
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    thp = pathlib.Path("/sys/kernel/mm/transparent_hugepage/enabled")
    meminfo = pathlib.Path("/proc/meminfo").read_text().split()
    return {"cpu": cpu, "cpus": os.cpu_count(),
            "cpus_usable": len(os.sched_getaffinity(0)),
            "memory_gib": round(int(meminfo[1]) / 2 ** 20, 1),
            "kernel": f"Linux {platform.release()}",
            "thp": thp.read_text().strip() if thp.exists() else "absent",
            "python": platform.python_version()}


def layout_grid(binaries: Named, smps: Sequence[int],
                tb_sizes: Sequence[int]) -> List[dict]:
    """The code buffer layout of each binary at each -smp and tb-size."""
    grid = []
    for (bname, path), smp, tb in itertools.product(binaries, smps, tb_sizes):
        fields, error = probe(path, ["-smp", str(smp),
                                     "-accel", f"tcg,tb-size={tb}"])
        grid.append({"binary": bname, "smp": smp, "tb_size_mib": tb,
                     "error": error, **(fields or {})})
    return grid


class Setup(NamedTuple):
    """What bin/bench was asked to run."""
    command: List[str]          # bin/bench and its arguments
    workload: str
    guest: pathlib.Path         # the folder of the guest's files
    guest_args: List[str]       # the QEMU arguments that boot it
    binaries: Named
    configs: Named
    busy: int                   # BusyHost's host CPUs
    busy_load: str = "hogs"     # and what keeps them busy


def results(setup: Setup, pairs: Dict[str, str], metrics: List[str],
            runs: List[dict], layout: List[dict]) -> dict:
    """results.json, its paths relative to the repository."""
    return {
        "workload": setup.workload,
        "command": paths.repo_relative_command(shlex.join(setup.command)),
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": host_description(),
        "busy_host_processes": setup.busy,
        "busy_host_load": setup.busy_load,
        "guest": paths.repo_relative(setup.guest),
        "qemu_args": paths.repo_relative_command(
            shlex.join([*VIRT, *setup.guest_args])),
        "binaries": {n: paths.repo_relative(p) for n, p in setup.binaries},
        "binary_sources": {n: binary_source(p) for n, p in setup.binaries},
        "pairs": pairs,
        "configs": {c.partition("@")[0]: paths.repo_relative_command(a)
                    for c, a in setup.configs},
        "metrics": metrics,
        "runs": runs,
        "layout": layout,
    }


def write_results(out: pathlib.Path, data: dict) -> None:
    """results.json, and results.csv with a line per run."""
    (out / "results.json").write_text(json.dumps(data, indent=1) + "\n")
    rows = data["runs"]
    columns = list(dict.fromkeys(k for r in rows for k in r))
    with open(out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
