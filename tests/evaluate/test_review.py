"""`ragpipe review` through a real `ragpipe ci`: a needs_review verdict blocks the gate, a person's decision settles it
at once, is reused by a later run that produces the same answer, and the manual correction rate counts the decisions
that overruled the rule."""

from __future__ import annotations

import pytest
from conftest import Project

from ragpipe.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.dagster, pytest.mark.model]


def _cli(p: Project, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["--settings", str(p.settings_file), *args])
    return code, capsys.readouterr().out


def _verdicts(p: Project) -> dict[str, tuple[str, str, str]]:
    rows = p.sql(
        "SELECT v.question_id, v.verdict, coalesce(v.matched_by, ''), a.answer "
        "FROM latest_verdicts v JOIN answers a USING (eval_run_id, question_id)"
    )
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def test_review_settles_needs_review_reuses_decisions_and_counts_corrections(
    project: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(project.root))
    code, out = _cli(project, capsys, "ci")
    assert code == 1
    before = _verdicts(project)
    unsure = sorted(q for q, v in before.items() if v[0] == "needs_review")
    failing = sorted(q for q, v in before.items() if v[0] == "fail")
    assert unsure and failing, out  # the baseline answerer leaves both on the bundled example
    assert "NEEDS REVIEW" in out and before[unsure[0]][2][:40] in out  # shown with its answer

    code, out = _cli(project, capsys, "review", "--list")
    assert code == 1 and unsure[0] in out

    # settle one unsure verdict, overrule one the rule had settled
    assert _cli(project, capsys, "review", "--decide", unsure[0], "fail", "--note", "not the asked date")[0] == 0
    assert _cli(project, capsys, "review", "--decide", failing[0], "pass", "--note", "states it")[0] == 0
    now = _verdicts(project)
    assert now[unsure[0]][:2] == ("fail", "review")
    assert now[failing[0]][:2] == ("pass", "review")
    run, tests, reviewed, overruled, rate = project.sql(
        "SELECT eval_run_id, tests, reviewed, overruled, correction_rate FROM manual_corrections "
        "ORDER BY started_at DESC LIMIT 1"
    )[0]
    assert (tests, reviewed, overruled) == (len(before), 2, 1)  # settling needs_review overrules nothing
    assert rate == pytest.approx(1 / len(before), abs=1e-4)
    # per kind of reason: the rule's reason is kept with the decision, its quoted parts and numbers blanked
    kinds = project.sql("SELECT reason_kind, decided, settled, overruled, correction_rate FROM corrections_by_reason")
    assert sum(k[1] for k in kinds) == 2 and sum(k[2] for k in kinds) == 1 and sum(k[3] for k in kinds) == 1
    overruled_kind = next(k for k in kinds if k[3] == 1)
    assert overruled_kind[4] == 1.0 and "'" not in overruled_kind[0] and not any(c.isdigit() for c in overruled_kind[0])

    # a later run that judges the same answers again reuses both decisions
    project.materialize(["verdicts"])
    again = _verdicts(project)
    newest = project.sql("SELECT eval_run_id FROM latest_eval_run")[0][0]
    assert newest != run
    for qid, decision in ((unsure[0], "fail"), (failing[0], "pass")):
        assert again[qid][2] == before[qid][2]  # the same answer text
        assert again[qid][:2] == (decision, "review")
    assert project.sql("SELECT overruled FROM manual_corrections WHERE eval_run_id = ?", [newest]) == [(1,)]

    # bad input: an unknown test, an unknown decision
    assert _cli(project, capsys, "review", "--decide", "no_such_test", "pass")[0] == 2
    assert _cli(project, capsys, "review", "--decide", unsure[0], "maybe")[0] == 2
