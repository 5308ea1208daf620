"""Regenerates the Philly and Alibaba PAI samples: ``python tests/data/traces/make_samples_philly_pai.py``.

Written from the published layouts, not copied from the traces (which are not shipped):

* ``philly_cluster_job_log.json`` — msr-fiddle/philly-traces ``cluster_job_log``: a JSON array of jobs
  ``{status, vc, jobid, attempts: [{start_time, end_time, detail: [{ip, gpus: [...]}]}],
  submitted_time, user}``; times ``YYYY-MM-DD HH:MM:SS`` without a zone; a missing time is ``null``.
* ``pai_job_table.csv`` and ``pai_task_table.csv`` — alibaba/clusterdata cluster-trace-gpu-v2020: CSVs
  with no header line (the columns are in separate ``.header`` files), times in seconds since a
  hidden origin, a missing value an empty field:
  ``job_name,inst_id,user,status,start_time,end_time`` and
  ``job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type``.

Each file opens with hand-made jobs whose import the tests work out by hand (see HAND_* below), then
random jobs (seed 1314) that include the odd rows the real traces have: Philly jobs with no attempts,
attempts without an end time (a logging gap, or a job still running when the log was taken), Pass /
Killed / Failed / Running statuses; PAI jobs Terminated / Failed / Running / Waiting, parameter-server
tasks with no GPU (plan_gpu empty), fractional GPUs (plan_gpu 25 and 50), CPU-only jobs.
"""

from __future__ import annotations

import csv
import json
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
SEED = 1314
FMT = "%Y-%m-%d %H:%M:%S"


# ----------------------------------------------------------------------------------------- Philly
def _t(text: str) -> datetime:
    return datetime.strptime(text, FMT)


def _detail(machines: list[tuple[str, int]]) -> list[dict]:
    return [{"ip": ip, "gpus": [f"gpu{g}" for g in range(n)]} for ip, n in machines]


def _attempt(start: str | None, end: str | None, machines: list[tuple[str, int]]) -> dict:
    return {"start_time": start, "end_time": end, "detail": _detail(machines)}


# The first jobs, checked by hand in tests/traces/test_philly.py (hour 0 = 2017-10-02 08:00:00).
HAND_PHILLY = [
    # 8 GPUs on one machine, 2 h, waited 6 min: submit_h 0, gpus 8, duration_h 2, delay 0.1.
    {"status": "Pass", "vc": "vc-hand", "jobid": "application_hand_0001",
     "attempts": [_attempt("2017-10-02 08:06:00", "2017-10-02 10:06:00", [("m1", 8)])],
     "submitted_time": "2017-10-02 08:00:00", "user": "u-hand"},
    # Two machines × 4 GPUs, two attempts of 0.5 h and 2 h: gpus 8, duration_h 2.5, delay 0.25.
    {"status": "Killed", "vc": "vc-hand", "jobid": "application_hand_0002",
     "attempts": [_attempt("2017-10-02 08:30:00", "2017-10-02 09:00:00", [("m2", 4), ("m3", 4)]),
                  _attempt("2017-10-02 09:10:00", "2017-10-02 11:10:00", [("m4", 4), ("m5", 4)])],
     "submitted_time": "2017-10-02 08:15:00", "user": "u-hand"},
    # No attempts: never ran, not imported.
    {"status": "Failed", "vc": "vc-hand", "jobid": "application_hand_0003", "attempts": [],
     "submitted_time": "2017-10-02 08:20:00", "user": "u-hand"},
    # A 4-GPU attempt of 1 h, then an 8-GPU one of 2 h: 20 GPU-hours on 8 GPUs = duration_h 2.5.
    {"status": "Pass", "vc": "vc-other", "jobid": "application_hand_0004",
     "attempts": [_attempt("2017-10-02 09:00:00", "2017-10-02 10:00:00", [("m6", 4)]),
                  _attempt("2017-10-02 10:00:00", "2017-10-02 12:00:00", [("m7", 8)])],
     "submitted_time": "2017-10-02 08:30:00", "user": "u-hand"},
    # An attempt with no end time before the last (a logging gap): skipped; the 1 h one counts.
    {"status": "Pass", "vc": "vc-other", "jobid": "application_hand_0005",
     "attempts": [_attempt("2017-10-02 09:00:00", None, [("m8", 2)]),
                  _attempt("2017-10-02 09:30:00", "2017-10-02 10:30:00", [("m8", 2)])],
     "submitted_time": "2017-10-02 09:00:00", "user": "u-hand"},
]


def philly_jobs(rng: np.random.Generator, n: int = 300) -> list[dict]:
    """``n`` random jobs after the hand-made ones, over about ten days; the last few still running."""
    vcs = [f"{rng.integers(16**6):06x}" for _ in range(6)]
    users = [f"{rng.integers(16**6):06x}" for _ in range(25)]
    start = _t("2017-10-02 10:00:00")
    snapshot = start + timedelta(days=10)
    submits = start + np.cumsum(rng.exponential(10 * 24 * 3600 / n, size=n)) * timedelta(seconds=1)
    jobs = []
    for i, submit in enumerate(submits):
        submit = min(submit.replace(microsecond=0), snapshot - timedelta(hours=1))
        gpus = int(rng.choice([1, 2, 4, 8, 16, 32], p=[0.3, 0.15, 0.15, 0.25, 0.1, 0.05]))
        per_machine = min(gpus, 8)
        machines = [(f"m{rng.integers(200)}", per_machine) for _ in range(gpus // per_machine)]
        status = str(rng.choice(["Pass", "Killed", "Failed"], p=[0.7, 0.15, 0.15]))
        n_attempts = 0 if rng.random() < 0.04 else int(rng.choice([1, 2, 3], p=[0.8, 0.15, 0.05]))
        t = submit + timedelta(seconds=int(rng.exponential(1800)))
        attempts = []
        for a in range(n_attempts):
            run = timedelta(seconds=int(max(60, rng.lognormal(np.log(3 * 3600), 1.2))))
            end = t + run
            if end >= snapshot:  # still running when the log was taken
                attempts.append(_attempt(t.strftime(FMT), None, machines))
                status = "Running"
                break
            gap = rng.random() < 0.05 and a < n_attempts - 1  # a time lost in the log
            lost_start = gap and rng.random() < 0.5
            attempts.append(_attempt(None if lost_start else t.strftime(FMT),
                                     None if gap and not lost_start else end.strftime(FMT), machines))
            t = end + timedelta(seconds=int(rng.exponential(300)))
        jobs.append({"status": status, "vc": str(rng.choice(vcs)),
                     "jobid": f"application_1506638472019_{10000 + i}", "attempts": attempts,
                     "submitted_time": submit.strftime(FMT), "user": str(rng.choice(users))})
    return jobs


def write_philly(path: Path, rng: np.random.Generator) -> int:
    jobs = HAND_PHILLY + philly_jobs(rng)
    path.write_text(json.dumps(jobs, indent=4) + "\n")
    return len(jobs)


# -------------------------------------------------------------------------------------------- PAI
JOB_COLUMNS = ["job_name", "inst_id", "user", "status", "start_time", "end_time"]
TASK_COLUMNS = ["job_name", "task_name", "inst_num", "status", "start_time", "end_time",
                "plan_cpu", "plan_mem", "plan_gpu", "gpu_type"]
NA = None  # written as an empty field, as the published CSVs show a missing value


def _task(job: str, name: str, inst: int, status: str, start, end, gpu, gpu_type="V100") -> list:
    return [job, name, float(inst), status, start, end, 600.0, 29.296875, gpu, gpu_type]


# The first jobs, checked by hand in tests/traces/test_alibaba_pai.py (hour 0 = second 100000).
HAND_PAI_JOBS = [
    ["hand000000000000000000a1", "i" * 60, "u-hand", "Terminated", 100000.0, 107600.0],
    ["hand000000000000000000a2", "j" * 60, "u-hand", "Terminated", 101800.0, 110000.0],
    ["hand000000000000000000a3", "k" * 60, "u-hand", "Failed", 103600.0, 105400.0],
    ["hand000000000000000000a4", "l" * 60, "u-hand", "Terminated", 104000.0, 120000.0],
    ["hand000000000000000000a5", "m" * 60, "u-cpu", "Terminated", 104500.0, 105000.0],
    ["hand000000000000000000a6", "n" * 60, "u-hand", "Waiting", 105000.0, NA],
]
HAND_PAI_TASKS = [
    # One whole GPU, launched after 6 min, 2 h: submit_h 0, gpus 1, duration_h 2, delay 0.1.
    _task("hand000000000000000000a1", "worker", 1, "Terminated", 100360.0, 107560.0, 100.0),
    # A parameter server (no GPU) and 4 workers at half a GPU: 2 GPUs. Runs from the first
    # launch (ps, 102700) to the last end (109900): 2 h; delay 0.25 h.
    _task("hand000000000000000000a2", "ps", 1, "Terminated", 102700.0, 109900.0, NA),
    _task("hand000000000000000000a2", "worker", 4, "Terminated", 102760.0, 109800.0, 50.0),
    # 3 instances at a quarter GPU each, 0.75 GPU: 1 GPU for 0.25 h rounded up, for 0.1875 h
    # pooled; failed.
    _task("hand000000000000000000a3", "tensorflow", 3, "Failed", 104500.0, 105400.0, 25.0, "T4"),
    # Two instances of two GPUs each: 4 GPUs either way; 4 h.
    _task("hand000000000000000000a4", "worker", 2, "Terminated", 104000.0, 118400.0, 200.0),
    # CPU only: not imported.
    _task("hand000000000000000000a5", "tensorflow", 1, "Terminated", 104500.0, 105000.0, NA),
    # Waiting: never launched, not imported.
    _task("hand000000000000000000a6", "worker", 1, "Waiting", NA, NA, 100.0),
]


def pai_rows(rng: np.random.Generator, n: int = 300) -> tuple[list[list], list[list]]:
    """``n`` random jobs after the hand-made ones over about a week, and their tasks."""
    users = [f"{rng.integers(16**12):012x}" for _ in range(30)]
    snapshot = 110000.0 + 7 * 86400
    submits = 110000.0 + np.cumsum(rng.exponential(7 * 86400 / n, size=n))
    jobs, tasks = [], []
    for submit in np.floor(submits):
        name = f"{rng.integers(16**12):012x}{rng.integers(16**12):012x}"
        inst_id = "".join(f"{rng.integers(16**12):012x}" for _ in range(5))
        status = str(rng.choice(["Terminated", "Failed", "Waiting"], p=[0.8, 0.17, 0.03]))
        gpu_type = str(rng.choice(["MISC", "T4", "P100", "V100", "V100M32"], p=[0.3, 0.2, 0.15, 0.25, 0.1]))
        cpu_only = rng.random() < 0.05
        plan_gpu = NA if cpu_only else float(rng.choice([25.0, 50.0, 100.0, 200.0, 800.0],
                                                        p=[0.15, 0.25, 0.4, 0.1, 0.1]))
        inst = int(rng.choice([1, 2, 4, 8], p=[0.7, 0.1, 0.1, 0.1]))
        start = submit + float(np.floor(rng.exponential(600)))
        end = start + float(np.floor(max(30.0, rng.lognormal(np.log(1800), 1.5))))
        if status == "Waiting":
            start = end = NA
        elif end >= snapshot:
            status, end = "Running", NA
        roles = [("worker", inst, plan_gpu)] if rng.random() < 0.8 else [("ps", 1, NA), ("worker", inst, plan_gpu)]
        if len(roles) == 1 and rng.random() < 0.5:
            roles = [("tensorflow", inst, plan_gpu)]
        jobs.append([name, inst_id, str(rng.choice(users)), status, submit, end])
        for role, k, gpu in roles:
            tasks.append(_task(name, role, k, status, start, end, gpu, NA if cpu_only else gpu_type))
    return jobs, tasks


def _write_csv(path: Path, rows: list[list]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        for row in rows:
            w.writerow(["" if v is None else v for v in row])


def write_pai(folder: Path, rng: np.random.Generator) -> tuple[int, int]:
    jobs, tasks = pai_rows(rng)
    jobs, tasks = HAND_PAI_JOBS + jobs, HAND_PAI_TASKS + tasks
    _write_csv(folder / "pai_job_table.csv", jobs)
    _write_csv(folder / "pai_task_table.csv", tasks)
    return len(jobs), len(tasks)


if __name__ == "__main__":
    philly_rng, pai_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(SEED).spawn(2))
    print(f"philly_cluster_job_log.json: {write_philly(HERE / 'philly_cluster_job_log.json', philly_rng)} jobs")
    n_jobs, n_tasks = write_pai(HERE, pai_rng)
    print(f"pai_job_table.csv: {n_jobs} jobs; pai_task_table.csv: {n_tasks} tasks")
