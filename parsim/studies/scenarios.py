"""Running a scenario: every case predicted (at every sweep value), labels filled, crossovers found.

The file format and its checks are ``scenario_files``' (re-exported here: ``load_scenario``,
``loads_scenario``, ``resolve``, ``parse_values``, ``Scenario``, ``Case``). ``run_scenario``
predicts each case with ``methods.predict``; ``crossovers`` finds where a case overtakes the first
along a sweep; ``retarget`` moves a lesson to other hardware, sizes or operations (what the app's
controls do) and keeps its labels true; ``scenario_paths`` lists the shipped lessons.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.hardware.network import ClusterSpec
from parsim.hardware.specs import LinkSpec, ProcessorSpec
from parsim.methods.predict import predict
from parsim.results.prediction import Prediction
from parsim.studies import lessons
from parsim.studies.scenario_files import (
    MAX_BRACKETS,
    MAX_FILE_BYTES,
    MAX_VALUES,
    Case,
    Scenario,
    Sweep,
    load_scenario,
    loads_scenario,
    parse_values,
    resolve,
)
from parsim.workloads.registry import lookup

__all__ = [
    "MAX_BRACKETS",
    "MAX_FILE_BYTES",
    "MAX_VALUES",
    "Case",
    "CaseResult",
    "Scenario",
    "ScenarioResult",
    "Sweep",
    "case_labels",
    "crossovers",
    "fill_label",
    "lesson_text",
    "load_scenario",
    "loads_scenario",
    "parse_values",
    "resolve",
    "retarget",
    "run_scenario",
    "scenario_paths",
]


@attrs.frozen
class CaseResult:
    """One predicted case (at one sweep value when the scenario sweeps)."""

    label: str
    value: float | int | str | None
    prediction: Prediction


@attrs.frozen
class ScenarioResult:
    """All predictions of a scenario, in case order (and value order within a case)."""

    scenario: Scenario
    results: tuple[CaseResult, ...]

    @property
    def labels(self) -> list[str]:
        return list(dict.fromkeys(r.label for r in self.results))

    def series(self, label: str) -> list[CaseResult]:
        return [r for r in self.results if r.label == label]

    def crossovers(self) -> list[tuple[float | int | str, str, str]]:
        """Where each case overtakes (or falls behind) the first case along the sweep (see ``crossovers``)."""
        if self.scenario.sweep is None:
            return []
        series = {
            label: (
                [r.value for r in self.series(label)],
                [r.prediction.latency_s for r in self.series(label)],
            )
            for label in self.labels
        }
        return crossovers(series)

    def never_faster(self) -> list[str]:
        """Cases that never beat the first case anywhere in the sweep."""
        baseline, *others = self.labels
        reference = {r.value: r.prediction.latency_s for r in self.series(baseline)}
        return [
            label
            for label in others
            if all(r.prediction.latency_s >= reference[r.value] for r in self.series(label))
        ]


def crossovers(series: Mapping[str, tuple[Sequence, Sequence]]) -> list[tuple[float | int | str, str, str]]:
    """Where each series overtakes the first one (becomes lower) along x, or falls behind it again.

    Args:
        series: ``{label: (xs, ys)}``; the first is the baseline. Points are compared at equal x.

    Returns:
        ``(x, series, baseline)`` where a series becomes faster than the baseline, and
        ``(x, baseline, series)`` where it falls behind again: always ``(x, winner, loser)``.
    """
    if len(series) < 2:
        return []
    (baseline, (base_x, base_y)), *others = series.items()
    reference = dict(zip(base_x, base_y, strict=True))
    changes = []
    for label, (xs, ys) in others:
        ahead = None
        for x, y in zip(xs, ys, strict=True):
            if x not in reference:
                continue
            now = y < reference[x]
            if ahead is not None and now != ahead:
                changes.append((x, label, baseline) if now else (x, baseline, label))
            ahead = now
    return changes


def case_labels(scenario: Scenario) -> list[str]:
    """A label per case: its own (fields in braces filled in) or one made from its workload, device
    and mode; never twice."""
    labels = []
    for index, raw in enumerate(scenario.cases):
        case = resolve(scenario, raw)
        label = case.label or f"{case.workload} on {_short(case.device or case.cluster)}" + (
            f" ({case.mode})" if case.mode else ""
        )
        label = _fill(label, case)
        labels.append(label if label not in labels else f"{label} #{index + 1}")
    return labels


_FIELD = re.compile(r"\{(\w+)\}")


def fill_label(label: str, case: Case) -> str:
    """``label`` as written in a scenario (``"GPU: {op} ({device})"``) filled in for ``case``: a sweep
    that moves a case to other hardware or parameters names what each of its points ran on."""
    return _fill(label, case)


def _fill(label: str, case: Case) -> str:
    """``label`` with ``{device}``, ``{host}``, ``{link}``, ``{workload}`` and parameters filled in;
    other names and stray braces stay as written."""
    if "{" not in label:
        return label
    fields = {**case.params, "workload": case.workload, "device": _short(case.device)}
    if case.cluster is not None:
        fields["cluster"] = _short(case.cluster)
    if registry.kind_of(case.device) == "gpu":
        spec = registry.processor(case.device)
        fields["host"] = _short(case.host or registry.DEFAULT_HOST)
        fields["link"] = _short(case.link or spec.default_link)
    return _FIELD.sub(lambda match: str(fields.get(match.group(1), match.group(0))), label)


def lesson_text(scenario: Scenario) -> str:
    """The lesson's text with its first CPU's figures filled in, so that the words and the figures
    drawn from the same spec cannot disagree (a retargeted lesson says the new CPU's numbers):
    ``{cores}``, ``{lanes}`` (float32 lanes per core: SIMD width x the vector units issuing each
    cycle, as the Flynn grids draw them) and ``{all_lanes}``. Other names and braces stay as written.
    """
    text = scenario.lesson
    if "{" not in text:
        return text
    try:
        devices = [resolve(scenario, case).device for case in scenario.cases]
        specs = [d if isinstance(d, ProcessorSpec) else registry.processor(d) for d in devices if d]
    except ParsimError:
        return text
    cpus = [spec for spec in specs if spec.kind == "cpu"]
    if not cpus:
        return text
    spec = cpus[0]
    lanes = spec.lanes_per_core
    fields = {"cores": spec.cores, "lanes": lanes, "all_lanes": spec.cores * lanes}
    return _FIELD.sub(lambda match: str(fields.get(match.group(1), match.group(0))), text)


def _short(source) -> str:
    """A hardware source as a person names it: the spec's name without vendor and parenthesised details."""
    if source is None:
        return ""
    spec = source if isinstance(source, (ProcessorSpec, LinkSpec, ClusterSpec)) else None
    for find in (registry.processor, registry.link, registry.cluster):
        if spec is None:
            try:
                spec = find(source)
            except ParsimError:
                continue
    if spec is None:
        return str(source)
    short = spec.name.split(" (")[0].replace("PCI Express", "PCIe")
    vendor, _, rest = short.partition(" ")
    return rest if vendor in ("NVIDIA", "Intel", "AMD") and rest else short


def retarget(
    scenario: Scenario,
    *,
    cpu=None,
    gpu=None,
    host=None,
    params: Mapping | None = None,
    workloads: Mapping[str, str] | None = None,
    values: Sequence | None = None,
) -> Scenario:
    """The same lesson on other hardware, sizes or operations (what the app's controls change).

    Args:
        cpu, gpu: replace every case's device of that kind (preset id, path or spec). A GPU case
            whose link is an NVLink takes the new GPU's own NVLink, or none (peers over PCIe).
        host: the host CPU of every GPU case.
        params: set on every case whose workload takes them (``{"n": 1e7, "op": "relu"}``).
        workloads: replace workloads by name (``{"vector_add": "sigmoid"}``).
        values: the sweep's values instead of the file's.

    Returns:
        A scenario whose cases are complete (no defaults); cases that became identical are kept once.
    """
    cases: list[Case] = []
    for raw in scenario.cases:
        case = resolve(scenario, raw)
        update: dict = {"workload": (workloads or {}).get(case.workload, case.workload)}
        kind = registry.kind_of(case.device)
        replacement = {"cpu": cpu, "gpu": gpu}.get(kind)
        if replacement is not None:
            update["device"] = replacement
            if kind == "gpu" and case.link is not None and _is_nvlink(case.link):
                update["link"] = registry.processor(replacement, "device").peer_link
        if host is not None and kind == "gpu":
            update["host"] = host
        accepted = lookup(update["workload"]).params.model_fields
        update["params"] = {**case.params, **{k: v for k, v in (params or {}).items() if k in accepted}}
        moved = Case(**{**case.model_dump(), **update})
        if all(moved.model_dump(exclude={"label"}) != other.model_dump(exclude={"label"}) for other in cases):
            cases.append(moved)
    sweep = scenario.sweep
    if values is not None and sweep is not None:
        sweep = sweep.model_copy(update={"values": list(values)})
    return scenario.model_copy(update={"defaults": Case(), "cases": cases, "sweep": sweep})


def _is_nvlink(link) -> bool:
    try:
        return registry.link(link).is_peer
    except ParsimError:
        return False


def run_scenario(scenario: Scenario) -> ScenarioResult:
    """Predict every case (at every sweep value)."""
    results = []
    values = parse_values(scenario.sweep.values) if scenario.sweep else [None]
    for label, raw in zip(case_labels(scenario), scenario.cases, strict=True):
        case = resolve(scenario, raw)
        for value in values:
            params = dict(case.params)
            if value is not None:
                params.update(dict.fromkeys(scenario.sweep.params, value))
            prediction = predict(
                case.workload,
                params,
                device=case.device,
                cluster=case.cluster,
                host=case.host,
                link=case.link,
                mode=case.mode,
                method=case.method or "engine",
                overlap=case.overlap or "roofline",
                gpus=case.gpus,
            )
            results.append(CaseResult(label, value, prediction))
    return ScenarioResult(scenario, tuple(results))


def scenario_paths(folder: str | Path | None = None) -> list[Path]:
    """The scenario files of a folder (default: the lessons, ``parsim.studies.lessons.folder()``),
    sorted by name."""
    return lessons.lesson_paths(folder)
