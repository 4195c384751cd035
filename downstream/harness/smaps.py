"""/proc/PID/smaps, parsed in one place."""

import pathlib
import re
from typing import Dict, List, NamedTuple

_HEADER = re.compile(r"([0-9a-f]+)-([0-9a-f]+) (\S+)")


class Mapping(NamedTuple):
    """One mapping: its address range, permissions ("rwxp") and its
    numeric fields in KiB ("Rss", "AnonHugePages", ...)."""
    start: int
    end: int
    perms: str
    fields: Dict[str, int]


def parse(text: str) -> List[Mapping]:
    mappings: List[Mapping] = []
    for line in text.splitlines():
        m = _HEADER.match(line)
        if m:
            mappings.append(Mapping(int(m.group(1), 16), int(m.group(2), 16),
                                    m.group(3), {}))
            continue
        key, sep, value = line.partition(":")
        words = value.split()
        if mappings and sep and len(words) == 2 and words[1] == "kB":
            mappings[-1].fields[key] = int(words[0])
    return mappings


def read(pid: int) -> List[Mapping]:
    return parse(pathlib.Path(f"/proc/{pid}/smaps").read_text())


def code_buffer(mappings: List[Mapping]) -> Dict[str, int]:
    """Rss and AnonHugePages (KiB) of the TCG code buffer, and its regions
    as the mappings show them: the buffer is QEMU's only writable and
    executable memory, and a guard page splits it into one mapping per
    region."""
    code = [m for m in mappings if m.perms == "rwxp"]
    return {
        "buffer_rss_kib": sum(m.fields.get("Rss", 0) for m in code),
        "buffer_anon_huge_kib": sum(m.fields.get("AnonHugePages", 0)
                                    for m in code),
        "buffer_mappings": len(code),
        "buffer_mapping_kib": max(((m.end - m.start) // 1024 for m in code),
                                  default=0),
    }
