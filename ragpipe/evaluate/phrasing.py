"""Proposed questions reworded by the configured model (`ragpipe golden suggest --phrase`). The model only rewords:
absence, the trap and its value are decided before it is asked, and a rewording that drops the qualifier asked for,
any number or name of the question, or is not one question, is rejected (the template stays, and the sheet says so)."""

from __future__ import annotations

import re
from typing import Any, Callable

from ragpipe.core import RagpipeError
from ragpipe.rag import chat
from ragpipe.settings import Settings

PROMPT = (
    "Reword the question the user sends so that it reads like a question a person would type into a search box or a "
    "chat. Keep every name, number, date and version exactly as written, and do not answer it. Reply with the "
    "reworded question only, on one line."
)
_KEPT = re.compile(r"\d[\d.,]*\d|\d|\b[A-Z][\w-]*[A-Z0-9][\w-]*\b")  # numbers, versions, names like HR-400 or DB-API


def _asker(settings: Settings) -> Callable[[str], str]:
    """A function from a question to the model's rewording, for [answerer].kind openai or smollm2."""
    kind = settings.answerer.kind
    messages: Callable[[str], list[dict[str, str]]] = lambda q: [  # noqa: E731
        {"role": "system", "content": PROMPT},
        {"role": "user", "content": q},
    ]
    if kind == "openai":
        cfg = settings.answerer.openai
        return lambda q: chat(cfg, messages(q), max_tokens=96).text
    if kind == "smollm2":
        from ragpipe.rag import SmolLM2Answerer

        model: Any = SmolLM2Answerer(settings.answerer)
        return lambda q: model.reply(messages(q))
    raise RagpipeError(
        f"--phrase rewords with the configured model: set [answerer].kind to openai (an OpenAI-compatible endpoint) "
        f"or smollm2 in {settings.source} (it is {kind!r}); without --phrase the questions stay templates"
    )


def kept(template: str, reworded: str, qualifier: str) -> str | None:
    """Why a rewording is rejected, or None when it keeps the qualifier and every number and name of the template."""
    if "\n" in reworded.strip() or not reworded.strip().endswith("?"):
        return "not one question"
    low = reworded.lower()
    if qualifier.strip("`").lower() not in low:
        return f"dropped the qualifier {qualifier!r}"
    lost = [t for t in _KEPT.findall(template) if t.lower() not in low]
    return f"dropped {', '.join(lost)}" if lost else None


def rephrase(settings: Settings, proposals: list[Any], log: Callable[[str], None]) -> tuple[int, int]:
    """Reword each proposal's question in place; returns (accepted, rejected). The template is kept in the evidence."""
    ask = _asker(settings)
    accepted = rejected = 0
    for p in proposals:
        reply = ask(p.question).strip().strip('"').strip()
        why = kept(p.question, reply, p.asked_for)
        if why:
            p.evidence["phrasing_rejected"] = f"{why}: {reply[:200]!r}"
            rejected += 1
        else:
            p.evidence["template"] = p.question
            p.question = reply
            accepted += 1
    log(f"reworded {accepted} question(s) with the {settings.answerer.kind} answerer; {rejected} kept as templates")
    return accepted, rejected
