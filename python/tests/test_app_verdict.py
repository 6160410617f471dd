"""The vadd study's verdict: the report prints who won as the run wrote it (v2), and reads a v1 file's bottom
line by the sign the C++ tool gave it (the CPU's time minus the accelerated program's), whatever its name said."""

import json

from xferbench_report.studies import load_study, study_findings


def _row(strategy, n, saves_s, winner, text):
    return {"backend": "gpu-api", "device": "dev", "strategy": strategy, "elements": n // 4, "bytes_per_vector": n,
            "status": "ok", "reason": "", "verified": True,
            "phases": {"cpu_vadd": {"samples_s": [0.1] * 3, "median_s": 0.1}},
            "accelerator_saves_s": saves_s, "accelerator_saves_algorithm_s": saves_s,
            "verdict": {"winner": winner, "text": text}}


def _write(tmp_path, name, schema, rows):
    path = tmp_path / name
    path.write_text(json.dumps({"schema": schema, "system": {"hostname": "h"}, "config": {}, "results": rows}))
    return path


def test_the_report_says_what_the_run_judged_at_each_size(tmp_path):
    """The accelerator wins at the large size and loses at the small one: the finding (the largest size) says
    it won, with the run's own words; nothing is judged again from a sign."""
    won = "the accelerated program beats the CPU's loop by 12.000 ms (median of 3 repeats)"
    lost = "the CPU's loop beats the accelerated program by 3.000 ms (median of 3 repeats)"
    rows = [_row("pinned", 1 << 20, -0.003, "cpu", lost), _row("pinned", 1 << 26, 0.012, "accelerator", won),
            _row("pageable", 1 << 26, -0.020, "cpu", "the CPU's loop beats the accelerated program by 20.000 ms")]
    found = study_findings([load_study(_write(tmp_path, "app.json", "xferbench/app/v2", rows))])
    assert len(found) == 1
    assert found[0].title == "vadd on gpu-api: best strategy pinned"
    assert won in found[0].text and "pageable) takes 32.00 ms longer" in found[0].text


def test_a_v1_file_is_read_by_the_sign_its_writer_gave(tmp_path):
    """app/v1's accel_minus_cpu_s held CPU minus accelerator: positive means the accelerator won."""
    rows = [dict(_row("pinned", 1 << 26, 0, "", ""), accel_minus_cpu_s=0.181),
            dict(_row("managed", 1 << 26, 0, "", ""), accel_minus_cpu_s=-0.053)]
    for r in rows:
        for k in ("accelerator_saves_s", "accelerator_saves_algorithm_s", "verdict"):
            del r[k]
    found = study_findings([load_study(_write(tmp_path, "app1.json", "xferbench/app/v1", rows))])
    assert found[0].title == "vadd on gpu-api: best strategy pinned"
    assert "the accelerated program beats the CPU's loop by 181.000 ms" in found[0].text
    rows.reverse()
    for r in rows:
        r["accel_minus_cpu_s"] = -r["accel_minus_cpu_s"]
    found = study_findings([load_study(_write(tmp_path, "app2.json", "xferbench/app/v1", rows))])
    assert found[0].title == "vadd on gpu-api: best strategy managed"
    assert "the accelerated program beats the CPU's loop by 53.000 ms" in found[0].text
