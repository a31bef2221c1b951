"""The CI summary of the latest eval run: counts, then FAIL / TEST DID NOT RUN / UNVERIFIED / STAMPS MOVED /
CHANGED SINCE LAST RUN, as text, JUnit XML and Markdown, and the gate's decision."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from xml.etree import ElementTree as ET

import duckdb

from ragpipe.core import NEEDS_ATTENTION, REWRITES_FILE
from ragpipe.evaluate import stamp_line


@dataclass
class Row:
    question_id: str
    kind: str
    verdict: str
    reason: str
    unverified: bool
    test_embedder_tag: str | None
    question: str
    matched_by: str | None = None  # how a pass was decided: refusal, refusal_citing_trap, judge, contains, numeric, ...
    answer: str = ""  # the answer judged (shown beside a needs_review verdict: a person decides from it)


@dataclass
class Change:
    """One row of the verdict_changes view: a test whose verdict, unverified flag or anchor rank changed."""

    question_id: str
    old_verdict: str | None
    new_verdict: str
    old_rank: int | None
    new_rank: int | None
    old_unverified: bool | None
    new_unverified: bool
    cause: str

    @property
    def verdicts(self) -> str:
        return f"{self.old_verdict or 'none'} -> {self.new_verdict}"

    @property
    def ranks(self) -> str:
        return f"{_rank(self.old_rank)} -> {_rank(self.new_rank)}"

    @property
    def flags(self) -> str:
        """'verified -> unverified', 'unverified -> verified' or '' when the unverified flag did not change."""
        if self.old_unverified == self.new_unverified or self.old_unverified is None:
            return ""
        return "verified -> unverified" if self.new_unverified else "unverified -> verified"


def _rank(rank: int | None) -> str:
    return "-" if rank is None else str(rank)


CHANGES_SQL = (
    "SELECT question_id, old_verdict, new_verdict, old_anchor_rank, new_anchor_rank, old_unverified, new_unverified, "
    "cause FROM verdict_changes WHERE eval_run_id = ? ORDER BY (old_verdict IS DISTINCT FROM new_verdict) DESC, question_id"
)


def load_changes(con: duckdb.DuckDBPyConnection, eval_run_id: str) -> list[Change]:
    return [Change(*r) for r in con.execute(CHANGES_SQL, [eval_run_id]).fetchall()]


@dataclass
class EvalSummary:
    eval_run_id: str
    chunker_tag: str
    embedder_tag: str
    answerer: str
    retriever: dict
    metrics: dict[str, float]
    rows: list[Row]
    stamp_changes: list[tuple[str, str, str, str]] = field(default_factory=list)  # qid, anchor, status, reason
    banner: str = "current"  # evaluation_status.banner: "current", or since when and why these verdicts are older
    changes: list[Change] = field(default_factory=list)  # since the previous run on the same golden set
    previous_run_id: str | None = None
    metric_tests: int | None = None  # the tests hit@k, MRR and recall@k are over (NULL: a run recorded before)
    not_returned: int | None = None  # of those, against the app: anchors in none of its contexts (each a miss)
    subject: str | None = None  # the app under test; None: ragpipe's own pipeline

    @property
    def metric_scope(self) -> str:
        """Which tests the retrieval figures are over, in words ('' for a run that did not record it)."""
        if self.metric_tests is None:
            return ""
        if self.subject is None:
            return f"over the {self.metric_tests} of {len(self.rows)} tests with a stamped anchor"
        missed = (
            f", {self.not_returned} of them not among the app's contexts (each a miss)" if self.not_returned else ""
        )
        return f"over the {self.metric_tests} of {len(self.rows)} tests with an anchor quote{missed}"

    def count(self, verdict: str) -> int:
        return sum(r.verdict == verdict for r in self.rows)

    @property
    def n_unverified(self) -> int:
        return sum(r.unverified for r in self.rows)

    def blocking(self, block: tuple[str, ...]) -> list[Row]:
        return [r for r in self.rows if r.verdict in block or ("unverified" in block and r.unverified)]


def load_summary(con: duckdb.DuckDBPyConnection) -> EvalSummary | None:
    run = con.execute(
        "SELECT eval_run_id, chunker_tag, embedder_tag, answerer_label, retriever, hit_at_k, mrr, recall_at_k, k, "
        "metric_tests, anchors_not_returned, subject FROM latest_eval_run"
    ).fetchone()
    if run is None:
        return None
    rows = [
        Row(*r)
        for r in con.execute(
            "SELECT v.question_id, v.kind, v.verdict, v.reason, v.unverified, v.test_embedder_tag, g.question, v.matched_by, "
            "coalesce(a.answer, '') FROM verdicts v LEFT JOIN golden_tests g USING (question_id) "
            "LEFT JOIN answers a ON a.eval_run_id = v.eval_run_id AND a.question_id = v.question_id "
            "WHERE v.eval_run_id = ? ORDER BY v.question_id",
            [run[0]],
        ).fetchall()
    ]
    changes = con.execute(
        "SELECT question_id, anchor, status, reason FROM latest_stamps WHERE chunker_tag = ? AND list_contains(?, status) "
        "ORDER BY question_id",
        [run[1], sorted({*NEEDS_ATTENTION, *REWRITES_FILE})],
    ).fetchall()
    status = con.execute("SELECT banner FROM evaluation_status").fetchone()
    previous = con.execute(
        "SELECT any_value(prev_eval_run_id) FROM verdict_timeline WHERE eval_run_id = ?", [run[0]]
    ).fetchone()
    return EvalSummary(
        changes=load_changes(con, run[0]),
        previous_run_id=previous[0] if previous else None,
        banner=status[0] if status else "current",
        eval_run_id=run[0],
        chunker_tag=run[1],
        embedder_tag=run[2],
        answerer=run[3] or "",
        retriever=json.loads(run[4]),
        metrics={"hit_at_k": run[5], "mrr": run[6], "recall_at_k": run[7], "k": run[8]},
        metric_tests=run[9],
        not_returned=run[10],
        subject=run[11],
        rows=rows,
        stamp_changes=[tuple(c) for c in changes],
    )


SECTIONS = (
    ("FAIL", lambda r: r.verdict == "fail"),
    ("NEEDS REVIEW", lambda r: r.verdict == "needs_review"),
    ("ERROR", lambda r: r.verdict == "error"),
    ("TEST DID NOT RUN", lambda r: r.verdict == "did_not_run"),
    ("UNVERIFIED UNDER CURRENT EMBEDDER", lambda r: r.unverified),
)


PASSING_NEGATIVES = "PASSING NEGATIVES, AND WHY"
CHANGED = "CHANGED SINCE LAST RUN"


def passing_negatives(s: EvalSummary) -> list[Row]:
    """Negatives that passed, each with how (refusal, refusal_citing_trap, judge): what a reviewer audits."""
    return [r for r in s.rows if r.kind == "negative" and r.verdict == "pass"]


def _reason(r: Row, s: EvalSummary, title: str) -> str:
    if title.startswith("UNVERIFIED"):
        return f"validated under {r.test_embedder_tag or 'no embedder'}, current is {s.embedder_tag}"
    if title == "NEEDS REVIEW":  # the answer itself: a person decides from it (ragpipe review)
        return f"{r.reason}; answer: {' '.join(r.answer.split())[:300]!r}"
    return r.reason


BASELINE_NOTE = (
    "the answerer is the extractive baseline (no language model: it copies the retrieved sentence closest to the "
    "question), so fails and refusals are expected: they show what the gate catches. Set [answerer] to a model to "
    "evaluate it"
)


def baseline_note(s: EvalSummary) -> str:
    """Why the verdicts of the extractive baseline fail, said where they are read ('' for any other answerer)."""
    return BASELINE_NOTE if s.answerer.startswith("extractive") else ""


def unverified_hint(s: EvalSummary) -> str:
    """What to do about tests unverified against the app: its embedder name may be another name for their model."""
    reported = s.retriever.get("embedder") if s.subject is not None else None
    tags = sorted({r.test_embedder_tag for r in s.rows if r.unverified and r.test_embedder_tag})
    if not reported or not tags:
        return ""
    return (
        f"the app reports its embedder as {reported!r}: if that is the model the tests were validated under, map "
        f"it ([subject.embedder_tags] {reported} = {tags[0]!r}); else re-validate them (`ragpipe golden revalidate "
        "--write`)"
    )


def _setup(s: EvalSummary) -> str:
    """What was evaluated: ragpipe's own chunker, embedder and retriever, or the app and the identity it reported."""
    if s.subject is not None:
        identity = ", ".join(f"{k} {v}" for k, v in s.retriever.items() if k != "subject" and v)
        return f"app {s.subject}{f' ({identity})' if identity else ''} | embedder tag {s.embedder_tag}"
    r = s.retriever
    return f"chunker {s.chunker_tag} | embedder {s.embedder_tag} | retriever {r.get('mode')} top-{r.get('k')}"


def render_text(s: EvalSummary, block: tuple[str, ...]) -> str:
    m = s.metrics
    lines = [
        *([f"NOT CURRENT: {s.banner}"] if s.banner != "current" else []),
        f"EVALUATION  run {s.eval_run_id}",
        f"  {_setup(s)} | answerer {s.answerer}",
        f"  {len(s.rows)} tests: {s.count('pass')} pass, {s.count('fail')} fail, {s.count('needs_review')} needs review, "
        f"{s.count('did_not_run')} did not run, {s.count('error')} error; {s.n_unverified} unverified under current "
        "embedder",
        f"  retrieval of anchors{' ' + s.metric_scope if s.metric_scope else ''}: hit@{m['k']}={m['hit_at_k']:.3f}  MRR={m['mrr']:.3f}  recall@{m['k']}={m['recall_at_k']:.3f}",
        *([f"  NOTE: {baseline_note(s)}."] if baseline_note(s) else []),
    ]
    for title, pred in SECTIONS:
        chosen = [r for r in s.rows if pred(r)]
        if chosen:
            lines.append(f"\n{title} ({len(chosen)})")
            lines += [f"  {r.question_id:<10} {_reason(r, s, title)}" for r in chosen]
            if title.startswith("UNVERIFIED") and unverified_hint(s):
                lines.append(f"  ({unverified_hint(s)})")
    passed = passing_negatives(s)
    if passed:
        lines.append(f"\n{PASSING_NEGATIVES} ({len(passed)})")
        lines += [f"  {r.question_id:<10} [{r.matched_by or '?'}] {r.reason}" for r in passed]
    moved = [c for c in s.stamp_changes if c[2] in NEEDS_ATTENTION]
    if moved:
        lines.append(f"\nSTAMPS MOVED ({len(moved)})")
        lines += [f"  {qid:<10} {anchor} {stamp_line(status, reason, ': ')}" for qid, anchor, status, reason in moved]
    if s.previous_run_id:
        lines.append(f"\n{CHANGED} (vs run {s.previous_run_id[:8]}: {len(s.changes)})")
        lines += [
            f"  {c.question_id:<10} {c.verdicts:<24} rank {c.ranks:<8} {c.flags + '; ' if c.flags else ''}"
            f"cause: {c.cause}"
            for c in s.changes
        ] or ["  (no verdict, flag or anchor rank changed)"]
    blocking = s.blocking(block)
    lines.append(
        f"\nGATE: {'BLOCKED' if blocking else 'OK'} ({len(blocking)} blocking test(s); blocking verdicts: {', '.join(block)})"
    )
    return "\n".join(lines)


def render_markdown(s: EvalSummary, block: tuple[str, ...]) -> str:
    m = s.metrics
    blocking = s.blocking(block)
    out = [
        f"## ragpipe evaluation: {'BLOCKED' if blocking else 'OK'}",
        "",
        *([f"> **Not current**: {s.banner}", ""] if s.banner != "current" else []),
        f"{_setup(s).replace(' | ', ', ')}, answerer {s.answerer}",
        "",
        "| pass | fail | needs review | did not run | error | unverified | hit@k | MRR |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {s.count('pass')} | {s.count('fail')} | {s.count('needs_review')} | {s.count('did_not_run')} | {s.count('error')} "
        f"| {s.n_unverified} | {m['hit_at_k']:.3f} | {m['mrr']:.3f} |",
        *(["", f"hit@{m['k']} and MRR {s.metric_scope}."] if s.metric_scope else []),
        *(["", f"> **Note**: {baseline_note(s)}."] if baseline_note(s) else []),
    ]
    for title, pred in SECTIONS:
        chosen = [r for r in s.rows if pred(r)]
        if chosen:
            out += ["", f"### {title} ({len(chosen)})", "", "| test | reason |", "|---|---|"]
            out += [f"| `{r.question_id}` | {_reason(r, s, title).replace('|', '/')} |" for r in chosen]
            if title.startswith("UNVERIFIED") and unverified_hint(s):
                hint = unverified_hint(s)
                out += ["", hint[0].upper() + hint[1:] + "."]
    passed = passing_negatives(s)
    if passed:
        out += ["", f"### {PASSING_NEGATIVES} ({len(passed)})", "", "| test | matched_by | reason |", "|---|---|---|"]
        out += [f"| `{r.question_id}` | {r.matched_by or ''} | {r.reason.replace('|', '/')} |" for r in passed]
    moved = [c for c in s.stamp_changes if c[2] in NEEDS_ATTENTION]
    if moved:
        out += ["", f"### STAMPS MOVED ({len(moved)})", "", "| test | anchor | status | detail |", "|---|---|---|---|"]
        out += [f"| `{q}` | {a} | {st} | {rs.replace('|', '/')} |" for q, a, st, rs in moved]
    if s.previous_run_id:
        out += ["", f"### {CHANGED} (vs run `{s.previous_run_id[:8]}`: {len(s.changes)})", ""]
        out += changes_table(s.changes) if s.changes else ["No verdict, unverified flag or anchor rank changed."]
    return "\n".join(out) + "\n"


def changes_table(changes: list[Change]) -> list[str]:
    """The Markdown table of flips, as in the CI summary and the verdicts materialization."""
    rows = ["| test | verdict | anchor rank | flag | cause |", "|---|---|---|---|---|"]
    return rows + [
        f"| `{c.question_id}` | {c.verdicts} | {c.ranks} | {c.flags} | {c.cause.replace('|', '/')} |" for c in changes
    ]


def render_junit(s: EvalSummary) -> str:
    """One testcase per golden test; did-not-run is a skipped test with its reason (never a pass)."""
    suite = ET.Element(
        "testsuite",
        name="ragpipe golden set",
        tests=str(len(s.rows)),
        failures=str(s.count("fail") + s.count("needs_review")),
        errors=str(s.count("error")),
        skipped=str(s.count("did_not_run")),
    )
    changed = {c.question_id: c for c in s.changes}
    for r in s.rows:
        case = ET.SubElement(suite, "testcase", classname=f"ragpipe.{r.kind}", name=r.question_id)
        props = {"matched_by": r.matched_by} if r.verdict == "pass" and r.matched_by else {}
        if r.question_id in changed:
            c = changed[r.question_id]
            props.update(previous_verdict=c.old_verdict or "none", anchor_rank=c.ranks, change_cause=c.cause)
        if props:
            el = ET.SubElement(case, "properties")
            for name, value in props.items():
                ET.SubElement(el, "property", name=name, value=value)
        if r.verdict == "fail":
            ET.SubElement(case, "failure", message=r.reason).text = r.question
        elif r.verdict == "needs_review":  # unsure never passes: a failure until a person decides
            msg = f"needs review: {r.reason}"
            ET.SubElement(case, "failure", message=msg, type="needs_review").text = f"{r.question}\nanswer: {r.answer}"
        elif r.verdict == "error":
            ET.SubElement(case, "error", message=r.reason).text = r.question
        elif r.verdict == "did_not_run":
            ET.SubElement(case, "skipped", message=f"test did not run: {r.reason}")
        if r.unverified:
            ET.SubElement(case, "system-out").text = f"unverified under current embedder {s.embedder_tag}"
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)


def render_failure_markdown(failures: list[str]) -> str:
    lines = "\n".join(f"- `{f.split(' failed: ', 1)[0]}` failed: {f.split(' failed: ', 1)[-1]}" for f in failures)
    return (
        "## ragpipe evaluation: FAILED\n\nThe evaluation did not complete, so no verdict of this run exists; "
        f"the latest verdicts in the warehouse are older.\n\n{lines}\n"
    )


def render_failure_junit(failures: list[str]) -> str:
    """One failed case per failed step: a CI system shows the error, never a green run."""
    suite = ET.Element(
        "testsuite",
        name="ragpipe golden set",
        tests=str(len(failures)),
        failures=str(len(failures)),
        errors="0",
        skipped="0",
    )
    for f in failures:
        step = f.split(" failed: ", 1)[0]
        case = ET.SubElement(suite, "testcase", classname="ragpipe.run", name=step)
        ET.SubElement(case, "failure", message=f).text = f
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)
