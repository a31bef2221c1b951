"""Documents change under the golden set: drift is per test (did_not_run with the reason), never per run.

Each scenario edits a copy of an evaluated project (the bundled example) and runs the real `ragpipe ci`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from faultkit import copy_project, evaluated_base, ragpipe_cli

pytestmark = [pytest.mark.slow, pytest.mark.dagster, pytest.mark.model]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return evaluated_base(tmp_path_factory)


def ci(p, *args: str) -> tuple[int, str]:
    code, out = ragpipe_cli(p.root, "ci", *args).finish(900)
    assert code in (0, 1) and "GATE:" in out and "Traceback" not in out, out[-4000:]
    return code, out


def verdicts(p) -> dict[str, tuple[str, str]]:
    return {r[0]: (r[1], r[2]) for r in p.sql("SELECT question_id, verdict, reason FROM latest_verdicts")}


def golden(p) -> dict[str, dict]:
    return {json.loads(x)["question_id"]: json.loads(x) for x in p.golden.read_text().splitlines() if x.strip()}


def test_a_deleted_trap_document_makes_only_its_tests_not_run(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = copy_project(base, tmp_path / "proj")
    before = verdicts(p)
    gone = "policies/password-policy-2020.txt"
    hit = [q for q, t in golden(p).items() if (t.get("trap_source") or t.get("evidence_source")) == gone]
    assert hit
    (p.corpus / gone).unlink()
    _, out = ci(p)
    after = verdicts(p)
    assert set(after) == set(before)
    for q in hit:
        assert after[q][0] == "did_not_run" and f"missing from corpus: {gone} deleted" in after[q][1], after[q]
        assert q in out
    # every other test was judged in this run as before. The corpus statistics did change (a document fewer for BM25),
    # so an anchor near the k-th rank may cross it: such a test may move to or from did_not_run, with the retrieval
    # reason, never with the deleted document's; a test whose anchor was retrieved both times keeps its verdict.
    others = [q for q in after if q not in hit]
    for q in others:
        assert gone not in after[q][1], after[q]
        if "did_not_run" in (before[q][0], after[q][0]) and before[q] != after[q]:
            moved = after[q] if after[q][0] == "did_not_run" else before[q]
            assert "not retrieved in top" in moved[1], (q, before[q], after[q])
        else:
            assert after[q] == before[q], (q, before[q], after[q])
    assert sum(after[q] == before[q] for q in others) >= len(others) - 2
    import dagster as dg

    # The project's own instance (its dagster.yaml's relative paths resolve from its root), whatever DAGSTER_HOME
    # says (`make test` sets it to the repository).
    monkeypatch.chdir(p.root)
    instance = dg.DagsterInstance.from_config(str(p.root))
    key = dg.AssetCheckKey(dg.AssetKey("stamps"), "anchors_found")
    record = instance.event_log_storage.get_latest_asset_check_execution_by_key([key])[key]
    evaluation = record.event.dagster_event.event_specific_data
    assert evaluation.passed is False and all(q in (evaluation.description or "") for q in hit)


def test_a_reworded_quote_says_where_and_proposes_the_closest_passage(base: Path, tmp_path: Path) -> None:
    p = copy_project(base, tmp_path / "proj")
    doc = p.corpus / "reports" / "q3-2023.md"
    old = "Halvorsen Robotics reported revenue of $48.7 million for the third quarter of 2023."
    new = "In the third quarter of 2023, Halvorsen Robotics posted revenue of $48.7 million."
    doc.write_text(doc.read_text().replace(old, new))
    hit = [q for q, t in golden(p).items() if t.get("trap_quote") == old or t.get("evidence_quote") == old]
    assert hit
    ci(p)
    after = verdicts(p)
    for q in hit:
        verdict, reason = after[q]
        assert verdict == "did_not_run" and "quote no longer in reports/q3-2023.md; closest passage now" in reason, (
            reason
        )
        assert new in reason and "(similarity 0." in reason
    code, out = ragpipe_cli(p.root, "golden", "restamp").finish(300)
    assert code == 0 and f"ragpipe golden restamp --accept {hit[0]}" in out, out
    code, out = ragpipe_cli(p.root, "golden", "restamp", "--accept", hit[0]).finish(300)
    assert code == 0 and out.count("+") >= 1 and "rewrote" in out, out
    assert golden(p)[hit[0]]["trap_quote" if hit[0].startswith("neg") else "evidence_quote"] == new
    ci(p)
    assert verdicts(p)[hit[0]][0] != "did_not_run" or "not retrieved" in verdicts(p)[hit[0]][1]


def test_a_renamed_document_keeps_its_tests_running(base: Path, tmp_path: Path) -> None:
    p = copy_project(base, tmp_path / "proj")
    before = verdicts(p)
    src = p.corpus / "reports" / "q2-2023.md"
    src.rename(p.corpus / "reports" / "second-quarter-2023.md")
    hit = [
        q for q, t in golden(p).items() if (t.get("trap_source") or t.get("evidence_source")) == "reports/q2-2023.md"
    ]
    assert hit
    ci(p)
    after = verdicts(p)
    for q in hit:
        assert after[q][0] == before[q][0] or "not retrieved" in after[q][1], (before[q], after[q])
    reasons = [
        r[0]
        for r in p.sql(
            "SELECT reason FROM latest_stamps WHERE question_id IN ({})".format(",".join(f"'{q}'" for q in hit))
        )
    ]
    assert any("now in reports/second-quarter-2023.md" in r for r in reasons), reasons


def test_quotes_copied_from_the_markdown_source_validate_and_stamp(base: Path, tmp_path: Path) -> None:
    p = copy_project(base, tmp_path / "proj")
    tests = golden(p)
    lines = []
    marked = {}
    for q, t in tests.items():
        field = "trap_quote" if t["kind"] == "negative" else "evidence_quote"
        src = t.get("trap_source") or t.get("evidence_source") or ""
        if src.endswith(".md") and t.get(field) and len(marked) < 3:
            words = t[field].split()
            # as copied from the source file: emphasis, code, an entity, curly quotes and a soft line break
            words[1] = f"**{words[1]}**"
            words[2] = f"`{words[2]}`"
            t[field] = " ".join(words[:4]) + "\n" + " ".join(words[4:]).replace("&", "&amp;")
            marked[q] = t[field]
        lines.append(json.dumps(t))
    p.golden.write_text("\n".join(lines) + "\n")
    assert len(marked) == 3
    code, out = ragpipe_cli(p.root, "golden", "validate").finish(300)
    assert code == 0 and "OK" in out and "drift" not in out, out
    ci(p)
    stamps = {r[0]: r[1] for r in p.sql("SELECT question_id, status FROM latest_stamps")}
    assert all(stamps[q] in ("unchanged", "moved") for q in marked), {q: stamps[q] for q in marked}
    assert golden(p)[next(iter(marked))][
        "trap_quote" if next(iter(marked)).startswith("neg") else "evidence_quote"
    ] == next(iter(marked.values()))


def test_a_broken_golden_file_still_fails_with_every_problem(base: Path, tmp_path: Path) -> None:
    p = copy_project(base, tmp_path / "proj")
    text = p.golden.read_text().splitlines()
    t = json.loads(text[5])
    t["trap_value"] = "a value that is not in the quote"
    text[5] = json.dumps(t)
    p.golden.write_text("\n".join(text) + "\n")
    code, out = ragpipe_cli(p.root, "ci").finish(900)
    assert code == 2  # the golden set file is broken: exit 2, not the gate's 1
    assert f":6 [{t['question_id']}] field 'trap_value': does not occur in trap_quote" in out, out[-3000:]
    text[2] = text[2][:-5]  # malformed JSON
    p.golden.write_text("\n".join(text) + "\n")
    junit, md = p.root / "report.xml", p.root / "summary.md"
    code, out = ragpipe_cli(p.root, "ci", "--junit", str(junit), "--markdown", str(md)).finish(900)
    assert code == 2 and ":3 malformed JSON" in out, out[-3000:]
    # the error in one line, no stack trace; the reports written anyway, with the error as a failed case
    assert "ragpipe: golden_set failed: GoldenSetError: " in out and "Stack Trace" not in out and "Traceback" not in out
    assert 'failures="1"' in junit.read_text() and 'name="golden_set"' in junit.read_text()
    assert "FAILED" in md.read_text() and "malformed JSON" in md.read_text()
    # no stale green: the previous verdicts say they are older than this failure
    stale = p.sql("SELECT count(*), count(stale_reason) FROM latest_verdicts")[0]
    assert stale[0] > 0 and stale[0] == stale[1]
    assert p.sql("SELECT failed_asset FROM evaluation_status")[0][0] == "golden_set"
    code, out = ragpipe_cli(p.root, "status").finish(300)
    assert "golden_set failed: GoldenSetError: " in out and "malformed JSON" in out, out
    code, out = ragpipe_cli(p.root, "ci", "--verbose").finish(900)
    assert code == 2 and "Stack Trace" in out
