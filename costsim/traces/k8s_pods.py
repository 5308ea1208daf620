"""Kubernetes pod history in the layout of Alibaba's 2023 GPU-sharing trace (``openb_pod_list``).

Columns: name, num_gpu, gpu_milli, creation_time, scheduled_time, deletion_time, pod_phase
(required); gpu_spec, qos, cpu_milli, memory_mib (optional, the last two unused). Times are epoch
seconds (the trace's are seconds from its start, which is as good: hour 0 is the first creation)
or ISO 8601.

- a pod is a job: submitted at ``creation_time``, started at ``scheduled_time``, run until
  ``deletion_time`` (the replayed duration is deletion − scheduled);
- GPUs: ``num_gpu`` GPUs, each used for ``gpu_milli``/1000 of it (``gpu_milli`` is the share of
  each GPU, as in the trace's scheduler; 0 or empty: whole GPUs). A pod of ``num_gpu`` 1 and
  ``gpu_milli`` 250 uses a quarter of one GPU; ``num_gpu`` 2 and ``gpu_milli`` 500 uses half of each
  of two GPUs (one GPU's worth, spread over two: it still needs two). ``--fractional round-up``
  asks ``num_gpu`` whole GPUs for the same time; ``--fractional pool`` asks ``num_gpu`` whole GPUs
  for ``gpu_milli``/1000 of the time (the same GPU-hours: pods sharing GPUs are pooled onto them).
  Pods without GPUs are dropped;
- ``pod_phase`` → status: Succeeded → completed, Failed → failed, Running → running (replayed
  only when it has a deletion time), Pending or no ``scheduled_time`` → dropped (never ran);
- ``job_class``: ``qos`` (LS, BE, Burstable, Guaranteed), else ``trace``;
- ``--gpu-type T`` keeps pods whose ``gpu_spec`` (models separated by ``|``) names T
  (case-insensitive); pods with an empty spec (any GPU) are dropped as "GPU type not recorded".
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from costsim.traces.common import BadCell, ImportOptions, Job, Report, check_order, iter_csv, parse_number, parse_time

REQUIRED = ("name", "num_gpu", "gpu_milli", "creation_time", "scheduled_time", "deletion_time", "pod_phase")
PHASES = {"succeeded": "completed", "failed": "failed", "running": "running", "pending": "pending",
          "unknown": "unknown"}


def _job(line: int, row: dict[str, str], options: ImportOptions, report: Report) -> Job | None:
    """The job of one pod, or None (a bad row recorded, or the pod dropped)."""
    field = "pod_phase"
    try:
        phase = row["pod_phase"].strip().lower()
        if phase not in PHASES:
            raise BadCell(f"{row['pod_phase'].strip()!r} is not a pod phase (Succeeded, Failed, Running, Pending)")
        field = "num_gpu"
        num = parse_number(row["num_gpu"], "a whole number of GPUs >= 0", integer=True)
        field = "gpu_milli"
        milli_text = row["gpu_milli"].strip()
        milli = parse_number(milli_text, "thousandths of a GPU between 0 and 1000", integer=True) if milli_text else 0.0
        if milli > 1000:
            raise BadCell(f"{milli_text!r} is not thousandths of a GPU between 0 and 1000")
        times = {}
        for field in ("creation_time", "scheduled_time", "deletion_time"):
            times[field] = parse_time(row[field], options.tz)
    except BadCell as exc:
        report.bad(line, field, str(exc))
        return None
    created, scheduled, deleted = times["creation_time"], times["scheduled_time"], times["deletion_time"]
    if not check_order(report, line, [("creation_time", created), ("scheduled_time", scheduled),
                                      ("deletion_time", deleted)]):
        return None
    assert created is not None  # check_order refuses a row without one
    if phase in ("pending", "unknown") or scheduled is None:
        report.drop("never scheduled")
        return None
    if deleted is None:
        if phase == "running":
            report.drop("running (no end yet)")
            return None
        report.bad(line, "deletion_time", f"is missing for a pod that is {row['pod_phase'].strip()}")
        return None
    gpus, share = num, (milli / 1000 if milli > 0 else 1.0)
    if gpus == 0:
        report.drop("no GPUs")
        return None
    named = [s.strip() for s in row.get("gpu_spec", "").split("|") if s.strip()]
    if options.gpu_type is not None:
        specs = [s.lower() for s in named]
        if not specs:
            report.drop("GPU type not recorded")
            return None
        if options.gpu_type.lower() not in specs:
            report.drop("another GPU type")
            return None
    return Job(source_id=row["name"].strip(), submit_s=created, gpus=gpus, run_s=deleted - scheduled,
               status=PHASES[phase], job_class=row.get("qos", "").strip() or "trace", start_s=scheduled, line=line,
               share=share, gpu_types="|".join(named))


def jobs(path: Path, options: ImportOptions, report: Report) -> Iterator[Job]:
    """The GPU pods of an ``openb_pod_list`` CSV (see the module's docstring)."""
    for line, row in iter_csv(path, report, REQUIRED):
        job = _job(line, row, options, report)
        if job is not None:
            yield job
