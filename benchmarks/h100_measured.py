"""The H100 that parsim measured, predicted with the ``h100-sxm`` preset, uncalibrated.

Every row of ``parsim/data/measured/h100-sxm-2026-11-25.json`` (CuPy 14.2 on an H100 SXM, timed
with CUDA events around each call) is predicted with exactly the parameters it records (conv2d as
the ``algorithm=tap-gemm`` shifted GEMMs that ran, the tf32 rows as the ``math=ieee`` runs they
were) and compared per class against issue 30's targets: MAPE <= 15 % over the points of at least
100 us, and 90 % of the smaller points within 5 us or 30 %. Pageable copies depend on the host's
memory system, not on the GPU: they are scored apart, with the link that ``parsim calibrate`` fits
from the grid's own copies (``copy, pageable (calibrated link)``). Rows whose program parsim no
longer runs (``superseded``: the MLP steps measured before the step was made the one the model
describes) are listed, not scored.

    PYTHONPATH=. python benchmarks/h100_measured.py
"""

from __future__ import annotations

import json
from importlib import resources

import attrs

import parsim
from parsim.base.errors import ParsimError

MEASURED = "h100-sxm-2026-11-25.json"
DEVICE = "h100-sxm"
LARGE_S = 100e-6  # points at least this long are scored by MAPE
MAPE_TARGET = 0.15
SMALL_ABS_S = 5e-6  # a smaller point is a hit within 5 us or 30 %
SMALL_REL = 0.30
SMALL_TARGET = 0.90


@attrs.frozen
class Point:
    """One measured row and its prediction (``predicted_s`` None where parsim refused it)."""

    workload: str
    params: dict
    measured_s: float
    predicted_s: float | None
    why: str = ""

    @property
    def error(self) -> float | None:
        if self.predicted_s is None:
            return None
        return (self.predicted_s - self.measured_s) / self.measured_s

    @property
    def large(self) -> bool:
        return self.measured_s >= LARGE_S

    @property
    def hit(self) -> bool:
        """Within 5 us or 30 % (a refused point is a miss)."""
        if self.predicted_s is None:
            return False
        error = self.error
        assert error is not None
        return abs(self.predicted_s - self.measured_s) <= SMALL_ABS_S or abs(error) <= SMALL_REL


@attrs.frozen
class ClassScore:
    """A class's score against the targets."""

    name: str
    large: int
    mape: float | None  # over the large points (None without any); a refused point counts 100 %
    small: int
    hits: int

    @property
    def hit_rate(self) -> float | None:
        return self.hits / self.small if self.small else None

    @property
    def passed(self) -> bool:
        mape_ok = self.mape is None or self.mape <= MAPE_TARGET
        return mape_ok and (self.hit_rate is None or self.hit_rate >= SMALL_TARGET)


PAGEABLE = "copy, pageable (calibrated link)"
CALIBRATED_LAUNCH_S = 7.3e-6  # the CuPy call that calibrate_gpu measured on that host (issue 30)


def class_of(workload: str, params: dict) -> str:
    """The class a row is scored in (pageable copies with the calibrated link)."""
    if workload == "copy" and not params.get("pinned", True):
        return PAGEABLE
    return workload


def calibrated_link():
    """The host link ``parsim calibrate`` fits from the grid's own copies (pinned and pageable, both
    ways), with the CuPy call that calibration measured on that host."""
    from parsim.measure import gpu_calibrate

    times = {
        (r["params"]["direction"], r["params"]["pinned"], 4 * int(r["params"]["n"])): r["measured_s"]
        for r in rows()
        if r["workload"] == "copy"
    }
    sizes = tuple(sorted({size for _, _, size in times}))
    raw = gpu_calibrate.fit_copies(sizes, lambda d, pinned, size: times[d, pinned, size], CALIBRATED_LAUNCH_S)
    if isinstance(raw, str):
        raise ParsimError(f"the recorded copies do not fit a link: {raw}")
    return gpu_calibrate.link_spec({**raw, "launch_s": CALIBRATED_LAUNCH_S})


def rows() -> list[dict]:
    """The shipped rows of the H100 measurement (validation-report format)."""
    text = (resources.files("parsim") / "data" / "measured" / MEASURED).read_text()
    return json.loads(text)["rows"]


def predict_row(row: dict, link=None) -> Point:
    """The row predicted with the preset (and ``link``, if given) and exactly its recorded parameters."""
    try:
        predicted = parsim.predict(row["workload"], dict(row["params"]), device=DEVICE, link=link).latency_s
    except ParsimError as error:
        return Point(row["workload"], row["params"], row["measured_s"], None, str(error))
    return Point(row["workload"], row["params"], row["measured_s"], predicted)


def superseded() -> list[dict]:
    """Rows whose program parsim no longer runs (their ``superseded`` says why)."""
    return [row for row in rows() if row.get("superseded")]


def points() -> dict[str, list[Point]]:
    """Every scored row's point, by class, in file order."""
    scored: dict[str, list[Point]] = {}
    link = calibrated_link()
    for row in rows():
        if row.get("superseded"):
            continue
        name = class_of(row["workload"], row["params"])
        scored.setdefault(name, []).append(predict_row(row, link if name == PAGEABLE else None))
    return scored


def score(name: str, members: list[Point]) -> ClassScore:
    large = [p for p in members if p.large]
    small = [p for p in members if not p.large]
    errors = [1.0 if p.error is None else abs(p.error) for p in large]
    return ClassScore(
        name,
        len(large),
        sum(errors) / len(errors) if errors else None,
        len(small),
        sum(p.hit for p in small),
    )


def _params(params: dict) -> str:
    return " ".join(
        f"{key}={value:g}" if isinstance(value, float) else f"{key}={value}" for key, value in params.items()
    )


def main() -> None:
    scored = points()
    print(f"{'row':<70} {'measured':>11} {'predicted':>11} {'error':>8}")
    for name, members in scored.items():
        for p in members:
            label = f"{name} {_params(p.params)}"[:70]
            predicted = "refused" if p.predicted_s is None else f"{p.predicted_s * 1e6:9.1f} us"
            error = "" if p.error is None else f"{p.error * 100:+7.1f}%"
            print(f"{label:<70} {p.measured_s * 1e6:8.1f} us {predicted:>11} {error:>8}")
    print()
    print(f"{'class':<34} {'points>=100us':>13} {'MAPE':>7} {'smaller':>8} {'hits':>6}  target")
    for name, members in scored.items():
        s = score(name, members)
        mape = "-" if s.mape is None else f"{s.mape * 100:.1f}%"
        rate = "-" if s.hit_rate is None else f"{s.hit_rate * 100:.0f}%"
        verdict = "met" if s.passed else "MISSED"
        print(f"{name:<34} {s.large:>13} {mape:>7} {s.small:>8} {rate:>6}  {verdict}")
    for row in superseded():
        print(f"not scored: {row['workload']} {_params(row['params'])}: {row['superseded']}")
    refused = [p for members in scored.values() for p in members if p.predicted_s is None]
    for p in refused:
        print(f"refused: {p.workload} {_params(p.params)}: {p.why}")


if __name__ == "__main__":
    main()
