"""Write the importer samples in this folder (synthetic; each in its source's real layout).

    .venv/bin/python tests/data/traces/make_samples.py

- ``slurm_sacct.txt``: ``sacct --parsable2 --format JobID,JobIDRaw,JobName,Partition,Account,User,
  Submit,Start,End,Elapsed,State,AllocTRES,ReqTRES`` of a 64-GPU lab over four days (local times),
  its start times scheduled by the reference scheduler of ``benchmarks/replay_validation.py``;
- ``k8s_openb_pod_list.csv``: Alibaba 2023 ``openb_pod_list`` layout (times in seconds from the start);
- ``helios_cluster_log.csv``: Helios ``cluster_log.csv`` layout (``queue`` is the delay in seconds).

The random rows come from one seeded generator; the odd rows the tests check by hand are written
literally (``ODD_*``) so that they stay put when the random part changes.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
T0 = datetime(2024, 3, 1, 8, 0, 0)  # the first submit of the SLURM and Helios samples (local time)


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S")


def _elapsed(seconds: int) -> str:
    """SLURM's [D-]HH:MM:SS."""
    d, rest = divmod(int(seconds), 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    return f"{d}-{h:02d}:{m:02d}:{s:02d}" if d else f"{h:02d}:{m:02d}:{s:02d}"


SLURM_HEADER = "JobID|JobIDRaw|JobName|Partition|Account|User|Submit|Start|End|Elapsed|State|AllocTRES|ReqTRES"
# Written before the random rows, in this order; the tests read them by hand.
ODD_SLURM = [
    # 1000: the first submit (hour 0), 8 H100s, 1 day 2 h 3 min 4 s, waited 10 min.
    "1000|1000|pretrain|h100|llm|alice|2024-03-01T08:00:00|2024-03-01T08:10:00|2024-03-02T10:13:04|1-02:03:04|COMPLETED|"
    "billing=64,cpu=64,gres/gpu:h100=8,gres/gpu=8,mem=512G,node=1|billing=64,cpu=64,gres/gpu=8,mem=512G,node=1",
    "1000.batch|1000.batch|batch||llm||2024-03-01T08:10:00|2024-03-01T08:10:00|2024-03-02T10:13:04|1-02:03:04|COMPLETED|"
    "cpu=64,gres/gpu:h100=8,gres/gpu=8,mem=512G,node=1|",
    "1000.extern|1000.extern|extern||llm||2024-03-01T08:10:00|2024-03-01T08:10:00|2024-03-02T10:13:04|1-02:03:04|COMPLETED|"
    "billing=64,cpu=64,gres/gpu:h100=8,gres/gpu=8,mem=512G,node=1|",
    # 1001: cancelled before it started: dropped.
    "1001|1001|sweep|h100|vision|bob|2024-03-01T08:30:00|None|2024-03-01T09:00:00|00:00:00|CANCELLED by 1234||"
    "billing=8,cpu=8,gres/gpu=1,mem=64G,node=1",
    # 1002: cancelled while running after 45 min: replayed 0.75 h, 4 A100s (AllocTRES), waited 30 min.
    "1002|1002|finetune|a100|vision|bob|2024-03-01T09:00:00|2024-03-01T09:30:00|2024-03-01T10:15:00|00:45:00|CANCELLED by 0|"
    "billing=32,cpu=32,gres/gpu:a100=4,gres/gpu=4,mem=256G,node=1|billing=32,cpu=32,gres/gpu=4,mem=256G,node=1",
    # 1003_1, 1003_2: array tasks, 2 GPUs (untyped) each, 1 h and 2 h; 1003_[3-5] still pending: dropped.
    "1003_1|1004|array|a100|rl|carol|2024-03-01T09:15:00|2024-03-01T09:15:00|2024-03-01T10:15:00|01:00:00|COMPLETED|"
    "billing=16,cpu=16,gres/gpu=2,mem=64G,node=1|billing=16,cpu=16,gres/gpu=2,mem=64G,node=1",
    "1003_1.batch|1004.batch|batch||rl||2024-03-01T09:15:00|2024-03-01T09:15:00|2024-03-01T10:15:00|01:00:00|COMPLETED|"
    "cpu=16,gres/gpu=2,mem=64G,node=1|",
    "1003_2|1005|array|a100|rl|carol|2024-03-01T09:15:00|2024-03-01T09:20:00|2024-03-01T11:20:00|02:00:00|FAILED|"
    "billing=16,cpu=16,gres/gpu=2,mem=64G,node=1|billing=16,cpu=16,gres/gpu=2,mem=64G,node=1",
    "1003_[3-5]|1003|array|a100|rl|carol|2024-03-01T09:15:00|Unknown|Unknown|00:00:00|PENDING||"
    "billing=16,cpu=16,gres/gpu=2,mem=64G,node=1",
    # 1077: a heterogeneous job: a CPU launcher (+0) and 16 H100s (+1), 3 h: one job of 16 GPUs.
    "1077+0|1077|hetjob|cpu|rl|dave|2024-03-01T10:00:00|2024-03-01T10:05:00|2024-03-01T13:05:00|03:00:00|COMPLETED|"
    "billing=4,cpu=4,mem=16G,node=1|billing=4,cpu=4,mem=16G,node=1",
    "1077+1|1078|hetjob|h100|rl|dave|2024-03-01T10:00:00|2024-03-01T10:05:00|2024-03-01T13:05:00|03:00:00|COMPLETED|"
    "billing=128,cpu=128,gres/gpu:h100=16,gres/gpu=16,mem=1T,node=2|billing=128,cpu=128,gres/gpu=16,mem=1T,node=2",
    "1077+1.0|1078.0|python||rl||2024-03-01T10:05:00|2024-03-01T10:05:00|2024-03-01T13:05:00|03:00:00|COMPLETED|"
    "cpu=128,gres/gpu:h100=16,gres/gpu=16,mem=1T,node=2|",
    # 1080: a CPU-only job: dropped.
    "1080|1080|preprocess|cpu|data|erin|2024-03-01T10:30:00|2024-03-01T10:30:00|2024-03-01T12:30:00|02:00:00|COMPLETED|"
    "billing=32,cpu=32,mem=128G,node=1|billing=32,cpu=32,mem=128G,node=1",
    # 1081: End Unknown but Elapsed given (the accounting daemon lost the end): 1.5 h replayed.
    "1081|1081|eval|h100|llm|alice|2024-03-01T11:00:00|2024-03-01T11:00:00|Unknown|01:30:00|NODE_FAIL|"
    "billing=8,cpu=8,gres/gpu:h100=1,gres/gpu=1,mem=64G,node=1|",
    # 1082: preempted after 20 min; 1083: timed out at its 4 h limit.
    "1082|1082|rollout|h100|rl|dave|2024-03-01T11:10:00|2024-03-01T11:12:00|2024-03-01T11:32:00|00:20:00|PREEMPTED|"
    "billing=16,cpu=16,gres/gpu:h100=2,gres/gpu=2,mem=128G,node=1|",
    "1083|1083|train|a100|vision|bob|2024-03-01T11:20:00|2024-03-01T11:20:00|2024-03-01T15:20:00|04:00:00|TIMEOUT|"
    "billing=64,cpu=64,gres/gpu:a100=8,gres/gpu=8,mem=512G,node=1|",
    # 1084: still running: dropped (its duration is not known yet).
    "1084|1084|longrun|h100|llm|alice|2024-03-01T11:30:00|2024-03-01T11:31:00|Unknown|00:10:00|RUNNING|"
    "billing=32,cpu=32,gres/gpu:h100=4,gres/gpu=4,mem=256G,node=1|",
]
SLURM_STATES = ["COMPLETED"] * 14 + ["FAILED", "FAILED", "TIMEOUT", "CANCELLED by 1001", "NODE_FAIL", "PREEMPTED"]


SLURM_NODES, SLURM_GPUS_PER_NODE = 8, 8  # the sample's cluster: 64 GPUs


def _seconds(text: str) -> float:
    return (datetime.fromisoformat(text) - T0).total_seconds()


def _placed_odd_jobs() -> list:
    """The literal rows' GPU allocations as already-placed jobs of the reference scheduler: each
    holds its GPUs from its Start for its Elapsed time (steps, pending, CPU-only rows skipped)."""
    from replay_validation import RefJob

    jobs = []
    for line in ODD_SLURM:
        f = line.split("|")
        jid, start, elapsed, tres = f[0], f[7], f[9], f[11]
        gpus = [int(x.split("=")[1]) for x in tres.split(",") if x.startswith("gres/gpu=")]
        if "." in jid or start in ("None", "Unknown") or not gpus:
            continue
        d, _, hms = elapsed.rpartition("-")
        h, m, sec = (int(x) for x in hms.split(":"))
        jobs.append(RefJob(_seconds(f[6]), gpus[0], (int(d or 0) * 24 + h) * 3600 + m * 60 + sec, f[4],
                           fixed_start_s=_seconds(start)))
    return jobs


def slurm(rng: np.random.Generator, jobs: int = 240) -> list[str]:
    """The SLURM sample's lines: the odd rows, then ``jobs`` random jobs (some with steps) whose
    Start times come from the reference scheduler of benchmarks/replay_validation.py (FIFO with a
    40-GPU limit per account on the 64-GPU cluster; the odd rows already placed): the recorded
    queueing delays are those of a schedule costsim did not make. Jobs cancelled while pending
    leave the queue at their cancel time (if the scheduler started them first, they are cancelled
    while running then)."""
    import sys

    sys.path.insert(0, str(HERE.parent.parent.parent / "benchmarks"))
    from replay_validation import QUOTA, RefJob, reference_schedule

    drawn = []
    t = T0 + timedelta(hours=4)
    for k in range(jobs):
        t += timedelta(seconds=int(rng.exponential(900)))
        part = str(rng.choice(["h100", "a100"]))
        gpus = int(rng.choice([1, 2, 4, 8, 8, 16]))
        state = str(rng.choice(SLURM_STATES))
        patience = int(rng.exponential(1200))  # how long a user cancelling a pending job waits
        run = max(60, int(rng.lognormal(np.log(3600), 1.0)))
        pending_cancel = state.startswith("CANCELLED") and rng.random() < 0.5
        drawn.append((2000 + k, t, part, gpus, state, patience, run, pending_cancel))
    odd = _placed_odd_jobs()
    ref = [RefJob((t - T0).total_seconds(), gpus, np.inf if cancel else float(run), f"{part}-lab",
                  cancel_s=(t - T0).total_seconds() + patience if cancel else None)
           for _, t, part, gpus, _, patience, run, cancel in drawn]
    schedule = reference_schedule(odd + ref, SLURM_NODES, SLURM_GPUS_PER_NODE, QUOTA)[len(odd):]
    lines = [SLURM_HEADER, *ODD_SLURM]
    for k, ((jid, t, part, gpus, state, _, _, _), (start_s, end_s)) in enumerate(zip(drawn, schedule, strict=True)):
        head = f"{jid}|{jid}|job{k}|{part}|{part}-lab|u{k % 7}|{_iso(t)}"
        req = f"billing={gpus * 8},cpu={gpus * 8},gres/gpu={gpus},node=1"
        if start_s is None:  # cancelled while pending
            lines.append(f"{head}|None|{_iso(T0 + timedelta(seconds=end_s))}|00:00:00|{state}||{req}")
            continue
        start, end = T0 + timedelta(seconds=start_s), T0 + timedelta(seconds=end_s)
        tres = f"billing={gpus * 8},cpu={gpus * 8},gres/gpu:{part}={gpus},gres/gpu={gpus},mem={gpus * 64}G,node=1"
        common = f"{_iso(start)}|{_iso(end)}|{_elapsed(end_s - start_s)}|{state}|{tres}"
        lines.append(f"{head}|{common}|{req}")
        if k % 3 == 0:
            lines.append(f"{jid}.batch|{jid}.batch|batch||{part}-lab||{_iso(start)}|{common}|")
    return lines


K8S_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"
ODD_K8S = [
    "openb-pod-0000,8000,32768,2,1000,V100M32,LS,Succeeded,0,7260,60",  # hour 0; 2 GPUs for 2 h; waited 1 min
    "openb-pod-0001,4000,16384,1,250,,BE,Succeeded,100,3700,100",  # a quarter GPU for 1 h
    "openb-pod-0002,2000,4096,0,0,,BE,Succeeded,200,1200,210",  # no GPU: dropped
    "openb-pod-0003,4000,16384,1,1000,T4,Burstable,Pending,300,,",  # never scheduled: dropped
    "openb-pod-0004,4000,16384,1,500,A10|T4,LS,Failed,400,2200,400",  # half a GPU, failed after 30 min
    "openb-pod-0005,16000,65536,8,1000,V100M16|V100M32,Guaranteed,Running,500,,560",  # running: dropped
]


def k8s(rng: np.random.Generator, pods: int = 300) -> list[str]:
    lines = [K8S_HEADER, *ODD_K8S]
    t = 600
    for k in range(6, 6 + pods):
        t += int(rng.exponential(300))
        num = int(rng.choice([0, 1, 1, 1, 2, 4, 8]))
        milli = int(rng.choice([100, 250, 500, 1000])) if num == 1 else (1000 if num else 0)
        spec = str(rng.choice(["", "", "V100M16|V100M32", "A10", "T4", "P100"]))
        phase = str(rng.choice(["Succeeded"] * 8 + ["Failed"]))
        wait = int(rng.exponential(120))
        run = max(30, int(rng.lognormal(np.log(1800), 1.0)))
        qos = str(rng.choice(["LS", "BE", "Burstable", "Guaranteed"]))
        lines.append(f"openb-pod-{k:04d},{num * 4000 + 1000},{num * 16384 + 2048},{num},{milli},{spec},{qos},{phase},"
                     f"{t},{t + wait + run},{t + wait}")
    return lines


HELIOS_HEADER = "job_id,user,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"
ODD_HELIOS = [
    "hJ0000,u001,8,48,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:05:00,2020-04-01 02:05:00,7200,300",  # hour 0
    "hJ0001,u002,1,6,1,CANCELLED,2020-04-01 00:10:00,,2020-04-01 00:20:00,0,",  # cancelled pending: dropped
    "hJ0002,u002,0,4,1,COMPLETED,2020-04-01 00:20:00,2020-04-01 00:20:00,2020-04-01 00:50:00,1800,0",  # CPU job
    "hJ0003,u003,16,96,2,NODE_FAIL,2020-04-01 00:30:00,2020-04-01 01:30:00,2020-04-01 02:00:00,1800,3600",
    "hJ0004,u001,4,24,1,TIMEOUT,2020-04-01 01:00:00,2020-04-01 01:00:10,2020-04-02 01:00:10,86400,10",
]


def helios(rng: np.random.Generator, jobs: int = 300) -> list[str]:
    lines = [HELIOS_HEADER, *ODD_HELIOS]
    t = datetime(2020, 4, 1, 2, 0, 0)
    for k in range(5, 5 + jobs):
        t += timedelta(seconds=int(rng.exponential(600)))
        gpus = int(rng.choice([0, 1, 1, 2, 4, 8, 8, 16, 32]))
        state = str(rng.choice(["COMPLETED"] * 6 + ["CANCELLED", "FAILED", "FAILED", "TIMEOUT"]))
        wait = int(rng.exponential(900))
        run = max(1, int(rng.lognormal(np.log(2400), 1.2)))
        user = f"u{int(rng.integers(1, 40)):03d}"
        nodes = max(1, gpus // 8)
        if state == "CANCELLED" and rng.random() < 0.4:
            lines.append(f"hJ{k:04d},{user},{gpus},{gpus * 6 or 4},{nodes},{state},{t:%Y-%m-%d %H:%M:%S},,"
                         f"{t + timedelta(seconds=wait):%Y-%m-%d %H:%M:%S},0,")
            continue
        start, end = t + timedelta(seconds=wait), t + timedelta(seconds=wait + run)
        lines.append(f"hJ{k:04d},{user},{gpus},{gpus * 6 or 4},{nodes},{state},{t:%Y-%m-%d %H:%M:%S},"
                     f"{start:%Y-%m-%d %H:%M:%S},{end:%Y-%m-%d %H:%M:%S},{run},{wait}")
    return lines


def main() -> None:
    rng = np.random.default_rng(14)
    for name, lines in (("slurm_sacct.txt", slurm(rng)), ("k8s_openb_pod_list.csv", k8s(rng)),
                        ("helios_cluster_log.csv", helios(rng))):
        (HERE / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"{name}: {len(lines) - 1} rows")


if __name__ == "__main__":
    main()
