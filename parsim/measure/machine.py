"""What the operating system says about this machine's CPU: caches, SIMD width, clock, memory.

Read, not measured (sysfs, ``/proc/cpuinfo``, psutil); calibration measures everything else.
"""

from __future__ import annotations

from pathlib import Path


def cache_levels(cpu: Path = Path("/sys/devices/system/cpu/cpu0")) -> list[tuple[str, float, bool]]:
    """Data/unified caches of one CPU as (name, size in bytes, private to one core).

    A cache is private when only this core's hardware threads share it (with SMT its
    ``shared_cpu_list`` names the sibling threads too, e.g. ``0,64``).
    """
    try:
        siblings = _cpus((cpu / "topology" / "thread_siblings_list").read_text())
    except OSError:
        siblings = {int(cpu.name[3:])} if cpu.name[3:].isdigit() else {0}
    levels = []
    for index in sorted((cpu / "cache").glob("index*")):
        try:
            kind = (index / "type").read_text().strip()
            if kind == "Instruction":
                continue
            level = int((index / "level").read_text())
            size = _bytes((index / "size").read_text().strip())
            shared = _cpus((index / "shared_cpu_list").read_text())
        except (OSError, ValueError):
            continue
        levels.append((f"L{level}", size, shared <= siblings))
    if not levels:  # no sysfs (not Linux): a generic hierarchy
        levels = [("L1", 32 * 1024, True), ("L2", 1024 * 1024, True), ("L3", 16 * 2**20, False)]
    return levels


def _cpus(text: str) -> set[int]:
    """``"0-3,8"`` -> {0, 1, 2, 3, 8}."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if "-" in part:
            low, high = part.split("-")
            cpus.update(range(int(low), int(high) + 1))
        elif part:
            cpus.add(int(part))
    return cpus


def _bytes(text: str) -> float:
    units = {"K": 1024, "M": 1024**2, "G": 1024**3}
    return float(text[:-1]) * units[text[-1]] if text[-1] in units else float(text)


def simd_lanes() -> int:
    """float32 lanes x 2 FMA pipes, from the CPU's instruction-set flags."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        flags = ""
    width = 16 if " avx512f" in flags else 8 if " avx2" in flags else 4
    return width * 2


def clock_Hz() -> float | None:
    """The clock the operating system reports for this CPU (its maximum, else the current one), or None."""
    import psutil

    frequency = psutil.cpu_freq()
    if frequency is None:
        return None
    megahertz = frequency.max or frequency.current
    return megahertz * 1e6 if megahertz > 0 else None


def total_memory_B() -> float:
    import psutil

    return float(psutil.virtual_memory().total)
