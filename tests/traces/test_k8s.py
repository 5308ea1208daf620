"""Kubernetes pod list importer (openb_pod_list layout): hand-checked rows, fractional GPUs
rounded up or pooled (GPU-hours kept), GPU types and malformed rows by file:line."""

from __future__ import annotations

import csv

import pytest
from paths import TRACE_SAMPLES

from costsim.scenario import ScenarioError
from costsim.traces import import_trace
from costsim.traces.common import ImportOptions

SAMPLE = TRACE_SAMPLES / "k8s_openb_pod_list.csv"
HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"


def _rows(frame):
    return {r["job_id"]: r for r in frame.to_dict("records")}


def test_sample_rows_checked_by_hand():
    rows = _rows(import_trace("k8s-pods", SAMPLE).frame)
    j = rows["openb-pod-0000"]  # created at 0 s, scheduled at 60 s, deleted at 7260 s: 2 h on 2 GPUs
    assert (j["submit_h"], j["gpus"], j["duration_h"], j["status"], j["job_class"]) == (0, 2, 2.0, "completed", "LS")
    assert j["observed_delay_h"] == pytest.approx(1 / 60)
    j = rows["openb-pod-0001"]  # a quarter GPU for 1 h, created at 100 s
    assert (j["gpus"], j["duration_h"]) == (1, 1.0) and j["submit_h"] == pytest.approx(100 / 3600)
    assert (rows["openb-pod-0004"]["duration_h"], rows["openb-pod-0004"]["status"]) == (0.5, "failed")
    for gone in ("openb-pod-0002", "openb-pod-0003", "openb-pod-0005"):  # no GPU, pending, running
        assert gone not in rows


def test_pool_keeps_gpu_hours_round_up_keeps_time():
    pooled = _rows(import_trace("k8s-pods", SAMPLE, ImportOptions(fractional="pool")).frame)
    assert pooled["openb-pod-0001"]["duration_h"] == 0.25  # 1 h × 250/1000
    assert pooled["openb-pod-0004"]["duration_h"] == 0.25  # 0.5 h × 500/1000
    assert pooled["openb-pod-0000"]["duration_h"] == 2.0  # whole GPUs unchanged
    # Independent truth: Σ num_gpu × gpu_milli/1000 × (deletion − scheduled) over the pods that ran.
    with open(SAMPLE, newline="") as f:
        truth = sum(int(p["num_gpu"]) * int(p["gpu_milli"]) / 1000 * (int(p["deletion_time"]) - int(p["scheduled_time"]))
                    for p in csv.DictReader(f) if p["deletion_time"] and p["scheduled_time"] and int(p["num_gpu"]))
    frame = import_trace("k8s-pods", SAMPLE, ImportOptions(fractional="pool")).frame
    assert (frame["gpus"] * frame["duration_h"]).sum() == pytest.approx(truth / 3600, rel=1e-12)
    rounded = import_trace("k8s-pods", SAMPLE).frame
    assert (rounded["gpus"] * rounded["duration_h"]).sum() > truth / 3600  # rounding up adds GPU-hours
    assert len(rounded) == len(frame)


def test_gpu_type_matches_any_listed_model():
    r = import_trace("k8s-pods", SAMPLE, ImportOptions(gpu_type="t4"))
    rows = _rows(r.frame)
    assert "openb-pod-0004" in rows and "openb-pod-0000" not in rows  # A10|T4 matches; V100M32 does not
    assert r.dropped["GPU type not recorded"] > 0  # empty spec: any GPU
    assert rows["openb-pod-0004"]["submit_h"] == 0.0  # hour 0 is the first pod kept


@pytest.mark.parametrize(("row", "field"), [
    ("p1,1000,1,1,1500,,LS,Succeeded,0,100,0", "gpu_milli"),
    ("p1,1000,1,1.5,1000,,LS,Succeeded,0,100,0", "num_gpu"),
    ("p1,1000,1,1,1000,,LS,Exploded,0,100,0", "pod_phase"),
    ("p1,1000,1,1,1000,,LS,Succeeded,soon,100,0", "creation_time"),
    ("p1,1000,1,1,1000,,LS,Succeeded,0,5,10", "deletion_time"),
    ("p1,1000,1,1,1000,,LS,Succeeded,20,50,10", "scheduled_time"),
    ("p1,1000,1,1,1000,,LS,Failed,0,,10", "deletion_time"),
    ("p1,1000,1,1,1000,,LS", "has 7 fields"),
])
def test_each_malformed_row_names_file_and_line(tmp_path, row, field):
    path = tmp_path / "pods.csv"
    path.write_text(f"{HEADER}\np0,1000,1,1,1000,,LS,Succeeded,0,3600,0\n{row}\n")
    with pytest.raises(ScenarioError) as err:
        import_trace("k8s-pods", path)
    assert str(err.value).startswith(f"{path}:3: {field}")
    r = import_trace("k8s-pods", path, ImportOptions(skip_bad=True))
    assert (len(r.frame), r.skipped) == (1, 1)


def test_duplicate_pod_names_get_new_ids_and_keep_the_source_id(tmp_path):
    path = tmp_path / "pods.csv"
    path.write_text(f"{HEADER}\np0,1,1,1,1000,,LS,Succeeded,0,3600,0\np0,1,1,1,1000,,LS,Succeeded,60,3600,60\n")
    frame = import_trace("k8s-pods", path).frame
    assert list(frame["job_id"]) == ["p0", "p0#2"] and list(frame["source_id"]) == ["p0", "p0"]


def test_num_gpu_gpus_each_of_gpu_milli(tmp_path):
    # 2 GPUs at 500 milli each for 2 h: two GPUs (not one); pooled, two GPUs for 1 h (2 GPU-hours
    # of half-used GPUs = 2 × 0.5 × 2 = 2 GPU-hours). 3 GPUs at 250 milli for 4 h: 3 GPUs for 1 h pooled.
    path = tmp_path / "pods.csv"
    path.write_text(f"{HEADER}\np0,1,1,2,500,,LS,Succeeded,0,7200,0\np1,1,1,3,250,,LS,Succeeded,0,14400,0\n")
    up = _rows(import_trace("k8s-pods", path).frame)
    assert (up["p0"]["gpus"], up["p0"]["duration_h"]) == (2, 2.0) and (up["p1"]["gpus"], up["p1"]["duration_h"]) == (3, 4.0)
    pooled = _rows(import_trace("k8s-pods", path, ImportOptions(fractional="pool")).frame)
    assert (pooled["p0"]["gpus"], pooled["p0"]["duration_h"]) == (2, 1.0)
    assert (pooled["p1"]["gpus"], pooled["p1"]["duration_h"]) == (3, 1.0)
