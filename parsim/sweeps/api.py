"""Parameter sweeps: every combination of some fields, predicted (and optionally measured) into a table.

``parsim.sweep(source, grid=...)`` takes a scenario (file or object) or a dict of predict
arguments, expands the grid over every case, evaluates the points — serially, on a process
pool, on any map-like executor, or on a Dask cluster — and returns a tidy DataFrame: one row
per point, one column per grid field (named exactly as the field), the other inputs, every
prediction figure, and an ``error`` column for points that could not be predicted. With
``out`` the rows are saved as they finish and a rerun resumes; with ``method=analytic`` and
single-op workloads the grid is evaluated vectorised with NumPy.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pandas

from parsim.errors import ParsimError
from parsim.scenarios import Scenario, load_scenario, resolve
from parsim.sweeps.fast import fast_rows
from parsim.sweeps.grid import make_grid, point_id
from parsim.sweeps.points import evaluate_many
from parsim.sweeps.store import Store, check_output

Progress = Callable[[int, int], None]
BATCH = 64  # points per task handed to a worker


def sweep(
    source: str | Path | Scenario | dict | None = None,
    grid: dict | None = None,
    *,
    zip: bool = False,
    workers: int | Callable | None = None,
    measure: bool = False,
    out: str | Path | None = None,
    progress: Progress | None = None,
    method: str | None = None,
) -> pandas.DataFrame:
    """Evaluate ``source`` at every point of ``grid``.

    Args:
        source: a scenario file or ``Scenario`` (every case is swept), a dict of predict arguments
            (``{"workload": "vector_add", "params": {...}, "device": "t4"}``), or None when the grid
            sets the workload and device itself.
        grid: ``{field: values}``; values as lists or ``"a,b"``, ``"logspace:1e3:1e9:25"``...
        zip: pair the i-th values of all fields instead of taking every combination.
        workers: None or 1 (serial), an int (a process pool of that size), or a map-like callable
            ``f(function, iterable)`` such as ``Client(...).get_executor().map``.
        measure: also measure each point on this machine (sequentially) and add measured columns.
        out: ``.csv``, ``.parquet`` or ``.jsonl`` written as rows finish; rerunning resumes.
        progress: called as ``progress(done, total)``.
        method: ``engine`` or ``analytic`` for every case (a grid field ``method`` overrides it).

    Returns:
        The tidy DataFrame of all points (resumed rows included).

    Raises:
        ParsimError: unknown fields, an empty or malformed grid, a bad output path.
    """
    cases = _cases(source, method)
    checked = make_grid(grid or {}, zip)
    store = Store(check_output(out))
    points = checked.points()
    done = store.done
    tasks = [
        (label, point, base)
        for label, base in cases
        for point in points
        if point_id(label, point, base) not in done
    ]
    total, count = len(tasks), 0
    finished = False
    try:
        if progress is not None:
            progress(0, total)
        for row in _execute(tasks, workers):
            if isinstance(row, pandas.DataFrame):
                store.add_frame(row)
                count += len(row)
            else:
                store.add(row)
                count += 1
            if progress is not None:
                progress(count, total)
        if measure:
            _measure_rows(store)
        finished = True
    finally:
        store.close(finished)
    frame = store.frame()
    frame.attrs.update({"grid": list(checked.fields), "log": sorted(checked.log_fields)})
    return frame


def _cases(source, method: str | None) -> list[tuple[str, dict]]:
    if source is None:
        source = {}
    if isinstance(source, dict):
        return [("", {**source, **({"method": method} if method else {})})]
    scenario = source if isinstance(source, Scenario) else load_scenario(source)
    from parsim.scenarios import case_labels

    cases = []
    for label, raw in zip(case_labels(scenario), scenario.cases, strict=True):
        base = resolve(scenario, raw).model_dump(exclude={"label"})
        if method:
            base["method"] = method
        cases.append((label, base))
    return cases


def _execute(tasks: list, workers) -> Iterator[dict | pandas.DataFrame]:
    """Rows of every task: the vectorised fast path where it applies, then the chosen executor."""
    remaining = []
    by_case: dict[tuple, list] = {}
    for task in tasks:
        by_case.setdefault((task[0], id(task[2])), []).append(task)
    for group in by_case.values():
        frames = fast_rows(group[0][0], group[0][2], [task[1] for task in group])
        if frames is None:
            remaining.extend(group)
        else:
            yield from frames
    batches = [remaining[i : i + BATCH] for i in range(0, len(remaining), BATCH)]
    if not batches:
        return
    if workers is None or workers == 1:
        for batch in batches:
            yield from evaluate_many(batch)
    elif isinstance(workers, int):
        if workers < 1:
            raise ParsimError(f"'workers' must be >= 1: {workers}")
        with concurrent.futures.ProcessPoolExecutor(max_workers=workers) as pool:
            for rows in pool.map(evaluate_many, batches):
                yield from rows
    elif callable(workers):
        for rows in workers(evaluate_many, batches):
            yield from rows
    else:
        raise ParsimError(f"'workers' must be an int or a map-like callable: {workers!r}")


def dask_map(address: str, workers: int = 2, timeout_s: float = 10.0):
    """A map-like callable on Dask ``distributed``: ``local`` starts a LocalCluster of processes.

    Returns ``(map_function, close)``; results arrive as tasks finish.
    """
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise ParsimError("Dask is not installed: pip install 'parsim[dask]'") from None
    cluster = None
    try:
        if address == "local":
            cluster = LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            )
            client = Client(cluster)
        else:
            client = Client(address, timeout=timeout_s)
    except (OSError, TimeoutError) as exc:
        if cluster is not None:
            cluster.close()
        raise ParsimError(f"no Dask scheduler answered at {address} within {timeout_s:g} s ({exc})") from None

    def map_function(function, iterable: Iterable):
        futures = client.map(function, list(iterable), pure=False)
        for _, result in as_completed(futures, with_results=True):
            yield result

    def close():
        client.close()
        if cluster is not None:
            cluster.close()

    return map_function, close


def _measure_rows(store: Store) -> None:
    """Measure each predicted point here, one at a time, and add measured and error columns."""
    from parsim.hardware import registry
    from parsim.measure import measure as run_measure
    from parsim.measure.backends import available_backends

    present = available_backends()
    frames, store.frames = store.frames, []
    for frame in frames:  # vectorised rows become plain rows to gain measured columns
        for row in frame.to_dict("records"):
            store.add(row)
    for row in list(store.rows):
        if row.get("error") or "measured_s" in row and row["measured_s"] == row["measured_s"]:
            continue
        params = {k.split(".", 1)[1]: v for k, v in row.items() if k.startswith("workload.") and v == v}
        try:
            gpu = registry.processor(row["device"]).is_gpu
            backend = "cupy" if gpu else "numpy"
            if backend not in present:
                row["measure_note"] = f"no {backend} backend here"
                continue
            result = run_measure(
                row["workload"], params, backend=backend, mode=None if gpu else row["mode"], budget_s=0.2
            )
            row.update(
                {
                    "measured_s": result.median_s,
                    "measured_p25_s": result.p25_s,
                    "measured_p75_s": result.p75_s,
                    "relative_error": (row["latency_s"] - result.median_s) / result.median_s,
                }
            )
        except ParsimError as exc:
            row["measure_note"] = str(exc)
        store.add(row)
