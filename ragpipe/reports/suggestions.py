"""The review sheet of proposed tests: for each, the question, the quote with its value and qualifier marked, the
evidence that the answer is absent (or in one place), and the quote's rank; the commands that accept or reject."""

from __future__ import annotations

from ragpipe.evaluate import Proposal, Suggestions


def _marked(quote: str, *parts: str) -> str:
    for part in parts:
        if part and part in quote:
            quote = quote.replace(part, f"**{part}**", 1)
    return quote


def _rank(p: Proposal) -> str:
    return f"rank {p.rank} of {p.k}" if p.rank else f"NOT in the top {p.k}: this test would not run from its first day"


def _one(p: Proposal) -> list[str]:
    ev = p.evidence
    negative = p.kind == "negative"
    lines = [
        f"### {p.suggestion_id} · {p.kind} · {p.qualifier_kind} · {'trap' if negative else 'evidence'} {_rank(p)}",
        "",
        f"- **Question:** {p.question}",
        f"- **{'Trap' if negative else 'Evidence'}** ({p.source}, chunk `{p.chunk_id}`): "
        + _marked(p.quote, p.value, p.qualifier),
        f"- **{'Trap value' if negative else 'Expected answer'}:** {p.value}"
        + (f"; asked of {p.asked_for!r} instead of {p.qualifier!r}" if negative else ""),
        f"- **{'Absence' if negative else 'One answer'}:** {ev.get('why', '')}; searched {ev.get('search', '')}",
        *([f"- **Why fair:** {ev['fair']}"] if ev.get("fair") else []),
    ]
    for c in ev.get("closest", []):
        lines.append(f"  - closest ({c['share']:.0%} of the question's words): {c['sentence']}")
    for t in ev.get("tried", []):
        lines.append(f"  - tried {t['qualifier']!r} first: answered by {t['answered_by']!r}")
    retrieved = ", ".join(
        f"{r['rank']}. `{r['chunk_id']}`" + (" (the quote)" if r["holds_quote"] else "")
        for r in ev.get("retrieved", [])
    )
    lines += [f"- **Retrieved for the question:** {retrieved or 'nothing'}", ""]
    return lines


def render_sheet(s: Suggestions, chunker_tag: str) -> str:
    """Markdown for a person deciding which proposals become tests."""
    negatives = [p for p in s.proposals if p.kind == "negative"]
    positives = [p for p in s.proposals if p.kind == "positive"]
    dropped = "; ".join(f"{n} {why}" for why, n in s.dropped.items() if n) or "none"
    top = sum(1 for p in s.proposals if p.rank)
    out = [
        "# Proposed golden tests",
        "",
        f"{len(negatives)} negative and {len(positives)} positive proposal(s) from {s.candidates} candidate "
        f"sentence(s) in {s.chunks} chunks (chunker `{chunker_tag}`, embedder `{s.embedder_tag}`), "
        f"{top} with their quote in the top k; {s.seconds:.1f} s. Dropped: {dropped}.",
        "",
        "Each negative asks for the value its trap sentence states, under a qualifier (a period, a version, a name) the "
        "corpus never pairs with what is asked: the evidence says what was searched and what came closest. Read each "
        "one against the documents before accepting it: a proposal is a draft, the decision is yours.",
        "",
        "Accept: `ragpipe golden suggest --accept ID [ID ...]` (appends them to the golden file, stamped, tagged and "
        "dated). Reject: `ragpipe golden suggest --reject ID [ID ...]` (never proposed again).",
        "",
    ]
    for title, group in (("Negatives", negatives), ("Positives", positives)):
        if group:
            out += [f"## {title}", ""]
            for p in group:
                out += _one(p)
    return "\n".join(out)
