"""Reading a model's answer the way a careful grader does: does it refuse, and does it also answer anyway?

Deterministic and offline. An answer is split into clauses (sentences, and the parts around "but", "however",
"though", semicolons and dashes); each clause is read as one of

- **refusal**: it says the source does not hold the answer. The grammar (docs/verdicts.md lists it with examples):
  a negation and a verb of saying, containing or finding with a source noun or a first-person subject, in either
  order ("the documents don't say", "I couldn't find that in the context", "nothing in the provided passages
  mentions"); "no information / mention / data about ..."; a passive "not stated / specified / mentioned / covered";
  "I can't answer / determine that"; "unknown", "I don't know", "not available", "unanswerable"; an apology with a
  negation ("I'm sorry, but I don't have that"); plus any `[answerer].refusal_phrases`.
- **hedge**: it offers something as the likely answer ("probably", "likely", "my best guess", "I'd assume",
  "it may be") without pointing at the source;
- **citation**: it reports what the source does say ("the report only gives ...", "according to ...",
  "the closest figure is ...", "instead, it lists ...");
- **statement**: anything else.

The verdict rule (ragpipe.verdict) decides from these readings where the values of an answer stand.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

from ragpipe.reading.notation import with_carets

# (pattern, replacement, (a text every match holds, then texts one of which it holds)): a pattern is tried only where
# its texts are
_CONTRACTIONS = [
    (r"\bcan'?t\b", "can not", ("can", "cant", "can't")),
    (r"\bcannot\b", "can not", ("cannot",)),
    (r"\bwon'?t\b", "will not", ("won", "wont", "won't")),
    (r"\bshan'?t\b", "shall not", ("shan", "shant", "shan't")),
    (r"\b(\w+)n't\b", r"\1 not", ("n't",)),
    # written without the apostrophe, as small models and hurried people do ("docs dont say")
    (r"\b(do|does|did|is|are|was|were|has|have|had|could|would|should|must)nt\b", r"\1 not",
     ("nt", "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent", "hasnt", "havent", "hadnt", "couldnt", "wouldnt",
      "shouldnt", "mustnt")),
    (r"\bi'm\b", "i am", ("i'm",)),
    (r"\bi'd\b", "i would", ("i'd",)),
    (r"\bi've\b", "i have", ("i've",)),
    (r"\bit's\b", "it is", ("it's",)),
    (r"\bthat's\b", "that is", ("that's",)),
    (r"\bthere's\b", "there is", ("there's",)),
    (r"\bi\.e\.", "that is,", ("i.e.",)),  # not a sentence end
    (r"\be\.g\.", "for example,", ("e.g.",)),
    (r"\bwhat's\b", "what is", ("what's",)),
    (r"\b(\w+)'re\b", r"\1 are", ("'re",)),
    (r"\b(\w+)'ll\b", r"\1 will", ("'ll",)),
]  # fmt: skip
_CONTRACTED = [(n[0], n[1:], re.compile(p), r) for p, r, n in _CONTRACTIONS]  # compiled once: every answer is read
_MARKUP = re.compile(r"[`*_#>|{}\[\]\"]")
_BLANKS = re.compile(r"[ \t]+")

_NEG = r"(?:not|no|never|nothing|none|neither|nor|without)"
# Verbs of saying, containing, finding or knowing (any inflection: matched by stem).
_VERB = (
    r"(?:(?:say|said|stat|mention|contain|includ|provid|giv|gave|specif|list|cover|discuss|address|describ|"
    r"indicat|report|find|found|see|seen|saw|locat|show|offer|referenc|detail|answer|know|knew|determin|tell|"
    r"told|identif|appear|disclos|document|confirm|suppl|present|reveal|spell|record|note|clarif|hav|has|had|"
    r"explain|establish|narrow|extract|infer|deduc|defin|shar|publish|cit|break|broke|support|verif|ascertain|"
    r"speak|spoke|touch|reach|retriev|access|outlin|quot|refer|match|pertain|relat)\w*|"
    r"go|goes|went|get|gets|got|come|comes|came|pin|make|makes|made)"
)
# Nouns for where the answer would come from, and subjects that stand for the answerer.
_SOURCE = (
    r"(?:documents?|docs?|documentation|context|texts?|passages?|excerpts?|sources?|materials?|information|"
    r"info|provided|given|retrieved|supplied|available|reports?|files?|corpus|records?|data|pages?|manuals?|"
    r"snippets?|chunks?|sections?|content|references?|notes?|filings?|statements?|releases?|above|here|"
    r"knowledge|evidence|details?|input|guide|changelog|readme|policy|policies|contracts?|agreements?|"
    r"announcements?|articles?|they|it|this|these|there|that)"
)
_ME = r"(?:i|we)"
_PASSIVE = (
    r"stated|specified|mentioned|covered|given|provided|available|included|listed|found|disclosed|reported|"
    r"documented|indicated|addressed|present|contained|described|discussed|defined|shown|known|explained|"
    r"detailed|recorded|published|answered|answerable|named|identified|quoted|cited|noted|supplied|offered"
)
_WINDOW = r"(?:\W+\w+){0,12}?\W+"

_REFUSAL_RULES = [
    # negation + verb of saying/containing/finding, with a source noun or "I/we" before or after (either order)
    rf"\b(?:{_SOURCE}|{_ME})\b{_WINDOW}?{_NEG}\b(?:\W+\w+){{0,4}}?\W+{_VERB}\b",
    rf"\b{_NEG}\b(?:\W+\w+){{0,4}}?\W+{_VERB}\b{_WINDOW}(?:{_SOURCE})\b",
    r"\b(?:do|does|did)\s+not\s+(?:\w+\s+)?(?:say|state|mention|specify|list|give|provide|cover|discuss|address|"
    r"describe|indicate|report|detail|document|disclose|include|contain|spell|define|name|identify|reveal|offer|"
    r"show|break|quote|cite|record|publish|explain|set|assign|establish|fix|prescribe|recommend)\b",
    r"\b(?:i|we)\s+(?:\w+\s+)?(?:have|has|had|got|hold|see|find|found|saw)\s+(?:nothing|no\s+\w+)|"
    r"\bnothing\s+(?:on|about|regarding|for|concerning|specific|relevant|that)\b",
    rf"\b(?:nothing|none|no\s+(?:part|one|passage|document|section|source|excerpt|chunk))\b(?:\W+\w+){{0,6}}?\W+{_VERB}\b",
    # "no information / mention / data / details / figure about ..."
    r"\b(?:no|not\s+any|not\s+enough|insufficient|lack\s+of|lacks?|without)\s+(?:\w+\s+){0,2}?(?:information|info|mention|"
    r"data|details?|figures?|numbers?|records?|reference|indication|specifics|evidence|answer|statement|word|context|timings?|results?|benchmarks?|measurements?|statistics|"
    r"disclosure|value|date|version|entry|entries|listing|datasheet|documentation|coverage|note|notes|section)\b",
    # "the passages give no TLB cost", "the retrieved notes contain no byte length for ..."
    r"\b(?:documents?|docs|documentation|context|texts?|passages?|excerpts?|sources?|materials?|manuals?|notes|"
    r"sections?|pages?|snippets?|chunks?)\b(?:\W+\w+){0,12}?\W+(?:gives?|gave|contains?|includes?|mentions?|lists?|"
    r"provides?|states?|offers?|specif(?:y|ies)|shows?)\s+no\b",
    # "there is no X ... in the documents"
    rf"\bthere\s+(?:is|are|was|were)\s+no\b(?:\W+\w+){{0,10}}?\W+(?:in|among|within|across)\s+(?:\w+\s+)?{_SOURCE}\b",
    # passive: "not stated / specified / mentioned / covered / given ...", and "no X is given"
    rf"\b(?:not|never|nowhere)\s+(?:\w+\s+){{0,2}}?(?:{_PASSIVE}|possible\s+to\s+(?:say|tell|determine|answer)|clear|"
    r"in\s+(?:the|any|these|those|this)\b)",
    rf"\bno\b(?:\W+\w+){{1,5}}?\W+(?:is|are|was|were|has\s+been|have\s+been|gets?|got)\s+(?:\w+\s+)?(?:{_PASSIVE})\b",
    # "I can't answer / determine / tell that", "unable to ...", "not able to ..."
    r"\b(?:can\s+not|could\s+not|unable\s+to|not\s+able\s+to|no\s+way\s+to|impossible\s+to)\s+(?:\w+\s+){0,2}?"
    r"(?:answer|determine|tell|say|find|locate|confirm|provide|give|identify|verify|know|infer|pinpoint|specify|state|"
    r"recommend|suggest|offer|supply|pin|work|figure|derive|extract|report|quote|cite|name)",
    # "unknown", "I don't know", "unanswerable", "outside / beyond the scope", "n/a"
    r"\b(?:unknown|unanswerable|undetermined|unspecified|unstated|undisclosed|not\s+known|do\s+not\s+know|"
    r"does\s+not\s+know|did\s+not\s+know|no\s+idea|not\s+sure|not\s+certain|(?:outside|beyond)\s+(?:of\s+)?(?:the\s+)?"
    r"(?:scope|provided|given)|not\s+in\s+(?:the\s+|any\s+|these\s+|my\s+)?(?:documents?|docs|context|sources?|"
    r"text|passages?|materials?|data|information)|n/a|not\s+applicable|none\s+given|cannot\s+be\s+answered|"
    r"null(?![\s-]*(?:terminat|pointer|byte|char|input|value|string|device|separat|data|root|offset|argument)))\b",
]
# Any rule that matches settles it, so they are tried with the plain absences first ("unknown", "not in the documents"):
# the rule most refusals meet, which would otherwise come after ten searches that fail.
_REFUSAL = [re.compile(r) for r in _REFUSAL_RULES[-1:] + _REFUSAL_RULES[:-1]]
_APOLOGY = re.compile(r"\b(?:sorry|apologi[sz]e|apologies|unfortunately|regrettably|afraid)\b")
_NEGATION = re.compile(rf"\b{_NEG}\b")

_HEDGE = re.compile(
    r"\b(?:probably|prob|prolly|likely|presumably|perhaps|possibly|maybe|plausibl[ey]|conceivabl[ey]|supposedly|apparently|"
    r"my\s+(?:best\s+)?guess|best\s+guess|i\s+would\s+(?:guess|assume|say|estimate|expect|think|go\s+with)|"
    r"i\s+(?:think|believe|suspect|assume|expect|estimate|imagine|reckon|guess)|"
    r"(?:may|might|could|(?<!that\s)would)\s+(?:well\s+)?(?:be|have\s+been)|(?:it\s+)?(?:seems|appears)\s+(?:to\s+be|that|like)|"
    r"it\s+seems|"
    r"an?\s+(?:rough\s+)?estimate|extrapolat\w*|if\s+(?:it|this|that|you|we|they)\s+(?:is|was|were|are|mean|meant|refer)|"
    r"(?<![a-z]\s)assuming)\b"  # "Assuming X, ..." is the answerer's; "falls back to assuming X" the subject's
)
# Approximations: a hedge in a negative's answer ("roughly 45 kg"), not in a positive's ("approximately 80,000" states
# the expected value as the documents do).
_APPROX = re.compile(
    r"\b(?:roughly|approximately|around|close\s+to|in\s+the\s+(?:range|ballpark|region)\s+of|"
    r"(?:on\s+the\s+)?order\s+of|somewhere)\b"
)
# Answering anyway beside a refusal: a verdict or conclusion of the answerer's own ("That said, the answer is 100",
# "Still, they held out for a month", "if I had to answer: ..."). Counts in any clause beside a refusal.
_ANSWERS_ANYWAY = re.compile(
    r"\b(?:that\s+said|the\s+answer\s+(?:is|would\s+be|should\s+be)|my\s+answer|therefore|thus|hence|which\s+means|"
    r"i\s+would\s+go\s+with|(?:you|one)\s+(?:should|can|could)\s+(?:use|assume|expect|go\s+with)|"
    r"so\s+(?:it|the\s+answer|that)\s+(?:is|was|would\s+be)|if\s+i\s+(?:had|have)\s+to|"
    r"^(?:still|anyway|regardless|nevertheless|nonetheless|even\s+so|all\s+the\s+same|in\s+any\s+case)\b)"
)
# What the answerer draws from a source it cited: a hedge after it is the answerer's own.
_CONCLUDES = re.compile(r"\b(?:so|therefore|thus|hence|which\s+means|meaning)\b")
# A self-correction settles on what follows it ("... actually, the settlers outnumbered them 20 to 1").
_SELF_CORRECTS = re.compile(r"^(?:actually|wait|on\s+second\s+thought|correction)\b")
# Reasoning towards a value: counts where a clause beside a refusal states one and cites nothing. "Based on the
# context" may also introduce what the context says about something else (ragpipe.verdict weighs that).
_INFERS = re.compile(
    r"\b(?:since(?!\s+(?:(?:v|version|release)\s*)?\d)|because|given\s+that|in\s+practice|typically|usually|generally|by\s+analogy|same\s+as|as\s+well|"
    r"too(?=\s*(?:[.,;!?]|$))|also|like\s+(?:for|the|in))\b"
)
_BASED_ON = re.compile(r"\b(?:based\s+on|going\s+by|from\s+what)\b")
# Attribution to something other than the retrieved text: the answerer's memory or general knowledge. Beside a
# refusal it introduces an answer from outside the context, whatever follows.
_OWN_KNOWLEDGE = re.compile(
    r"\b(?:(?:general|common|background|prior|outside|world|my\s+own|my|own)\s+knowledge|"
    r"(?:from|in)\s+(?:my\s+)?(?:own\s+)?(?:general\s+(?:[\w-]+\s+)?|past\s+)?experience|"  # "general Valgrind experience"
    r"(?:from|by|in|on)\s+general\s+(?:\w+\s+)?(?:practice|convention|usage|history|information|background)|"
    # a source the answer names that is not the retrieved text: "From the Debian news archive, 9.1 was released ..."
    r"(?:from|according\s+to|per)\s+(?:the\s+)?(?:[\w.-]+\s+){0,3}?(?:archives?|website|web\s+site|wiki|news|blog|"
    r"announcements?|mailing\s+lists?|forums?)|from\s+(?:what\s+)?(?:i|we)\s+"
    r"(?:remember|recall|know)|(?:i|we)\s+(?:remember|recall)|as\s+far\s+as\s+(?:i|we)\s+know|from\s+memory|"
    r"(?:outside|beyond)\s+(?:of\s+)?(?:the|these|this)\s+(?:documents?|context|passages?|sources?|text)|"
    r"historically|in\s+general|generally\s+speaking|it\s+is\s+(?:well|widely|commonly)\s+known|"
    r"(?:is|are)\s+(?:well|widely|commonly)\s+known|elsewhere)\b"
)
# Generalizations: "typically", "in practice". Beside a refusal, a clause that puts forward a value this way
# answers from what is usual elsewhere, not from the documents (a piece of advice without a value does not).
_GENERALLY = re.compile(
    r"\b(?:typically|usually|normally|commonly|generally|in\s+practice|as\s+a\s+rule|conventionally|"
    r"in\s+most\s+(?:cases|setups|systems|installations|projects)|most\s+(?:people|teams|projects|tools|systems))\b"
)
# Citations. Strong: the clause attributes what follows to the source. Weak: it contrasts it with what was asked
# ("only", "the closest", "another quarter"); a hedge in the same clause outweighs a weak citation.
_SOURCE_NOUN = (
    r"(?:documents?|docs|documentation|context|text|passages?|report|sources?|excerpts?|materials?|"
    r"filings?|data|page|section|article|policy|contract|notes|changelog|table)"
)
_CITE_STRONG = re.compile(
    rf"\b(?:^(?:but\s+|and\s+)?they\s+(?:only\s+)?(?:say|state|mention|note|describe|list|give|report)|"
    r"^(?:but\s+|and\s+)?it\s+(?:also\s+|only\s+|further\s+)?(?:says|states|mentions|notes|describes|lists|gives|"
    rf"reports|explains)\b|according\s+to|the\s+(?:[\w.-]+\s+){{0,2}}?{_SOURCE_NOUN}\s+(?:\w+\s+){{0,3}}?(?:says?|states?|mentions?|reports?|gives?|lists?|"
    r"shows?|refers?|describes?|covers?|provides?|contains?|includes?|discusses?|has|have|notes?|records?|sets?|"
    r"puts?|names?|quotes?|cites?|reads?)|(?:says?|states?|mentions?|reports?|lists?|shows?|refers?|describes?|"
    r"covers?|notes?|records?)\s+(?:that|a|an|the|only)|(?:what|all)\s+(?:it|they|the\s+\w+)\s+(?:do(?:es)?\s+)?"
    r"(?:say|says|give|gives|show|shows|mention|mentions)|(?:is|are|was|were)\s+(?:described|listed|given|named|"
    r"called|referred\s+to|characteri[sz]ed|shown|mentioned|reported|stated|cited|quoted|presented)\s+as|"
    r"mentioned|cited|quoted|listed|reported|stated|documented|on\s+record|(?:do|does)\s+(?:say|mention|give|show|"
    r"report|list)|(?:covered|described|documented|named|shown|found|given|provided|available|included|present)\s+"
    rf"(?:in|by)\s+(?:the|these|this|those)|in\s+(?:the|a|these|this)\s+(?:\w+\s+){{0,2}}?{_SOURCE_NOUN}s?|"
    r"from\s+(?:the|a)\s+(?:\w+\s+){0,2}?(?:report|document|filing|section|policy|contract|release|page|version)|"
    r"i\s+(?:can|could|did)\s+(?:find|see|locate))\b"
)
_CITE_WEAK = re.compile(
    r"\b(?:(?<!-)only(?!-)|closest|nearest|nearby|(?:is|was|are|were)\s+for\s+(?:the\s+)?(?:a\s+)?(?:different|another|other|"
    r"\w+\s+(?:quarter|year|version|release|period))|refers?\s+to|relates?\s+to|which\s+is\s+(?:for|about(?!\s+as\b)|from)|"
    r"given\s+(?:for|in|only)|in\s+(?:the|a)\s+(?:\w+\s+){0,2}?(?:release|version|quarter|year)|"
    r"that\s+(?:figure|number|value|date)\s+(?:is|was)|different|another|previous|prior|earlier|later|superseded|"
    r"older|newer|other|for\s+reference|latest|most\s+recent)\b"
)
# Sentences end at . ! ? and line breaks; inside one, parts are split at semicolons, dashes, before
# but/however/though/although/whereas/nevertheless, and before ", so" / ", which means" / ", therefore".
_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[.!?])$|\n+")
_PART = re.compile(
    r";\s*|\s*\u2014\s*|\s+[\u2013-]{1,2}\s+|"
    r",?\s+(?=\b(?:but|however|though|although|whereas|nevertheless)\b)|"
    r",\s+(?=\b(?:so|which\s+means|that\s+means|therefore|thus|hence|and\s+so)\b)|"
    r",\s+(?=\b(?:most\s+)?(?:probably|prob|likely|presumably|perhaps|possibly|maybe)\b)"  # "not stated, probably X"
)
_TURN = re.compile(
    r"^(?:but|however|though|although|whereas|nevertheless|so|yet|still|which\s+means|that\s+means|"
    r"therefore|thus|hence|and\s+so)\b"
)


def prepare(text: str) -> str:
    """Lower-case, straight quotes, contractions expanded, markup and JSON punctuation turned into spaces."""
    t = unicodedata.normalize("NFKC", with_carets(text)).lower()  # "10\u207b\u00b3" as "10^-3", as facts read it
    t = t.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    t = _MARKUP.sub(" ", t)
    for needle, either, pattern, repl in _CONTRACTED:
        if needle in t and (not either or any(n in t for n in either)):
            t = pattern.sub(repl, t)
    return _BLANKS.sub(" ", t) if "  " in t or "\t" in t else t


_SOFT_WRAP = re.compile(r"(?<=[^\s.!?:;|])[ \t]*\n(?![ \t]*(?:[-*+\u2022#|>]|\d+[.)]\s|\n))")
_DECIMAL = re.compile(r"(?<=\d)\.(?=\d)")
_BULLET = re.compile(r"^(?:[-+\u2022]|\d+[.)])\s+")
_BULLET_START = "-+\u2022"
_WORD = re.compile(r"\w")


_QUOTED_CODE = re.compile(r"(['\"`])[^\s'\"`]+\1")


def _prepared_text(text: str) -> str:
    # a line break inside a sentence is a soft wrap; one after punctuation or before a list item or row ends a clause
    t = prepare(_SOFT_WRAP.sub(" ", text) if "\n" in text else text)
    if ";" in t:  # a semicolon inside quoted code ('.;$', '0;/RE/') ends no clause
        t = _QUOTED_CODE.sub(lambda m: m.group().replace(";", "\u037e"), t)
    return _DECIMAL.sub("\u2024", t) if "." in t else t  # decimals and versions kept whole


def _parts(text: str, prepared: str | None = None) -> list[tuple[str, bool]]:
    """(clause, continues): `continues` when the clause follows another part of the same sentence (after a
    semicolon or a dash) without turning against it (but, however, so, ...). `prepared`: _prepared_text(text)."""
    t = _prepared_text(text) if prepared is None else prepared
    out: list[tuple[str, bool]] = []
    for sentence in _SENTENCE.split(t):
        first = True
        for part in _PART.split(sentence):
            part = part.replace("\u2024", ".").replace("\u037e", ";").strip(" ,.:")
            if part[:1] in _BULLET_START or part[:1].isdigit():
                part = _BULLET.sub("", part)
            if part and _WORD.search(part):
                out.append((part, not first and not _TURN.search(part)))
                first = False
    return out


def clauses(text: str) -> list[str]:
    """The answer in clauses: sentences, and the parts around but/however/though, semicolons and dashes."""
    return [c for c, _ in _parts(text)]


# A word every refusal rule and the apology rule need (a negation, "unable", "unknown", "n/a", ...), bounded as the
# rules bound it: a text without one has no refusing clause (clauses are its parts, cut at non-word characters).
_MAY_REFUSE = re.compile(
    r"\b(?:(?:not|no|never|none|neither|nor|without|nowhere|insufficient|lacks?|unable|impossible|unknown|unanswerable|"
    r"undetermined|unspecified|unstated|undisclosed|outside|beyond|n/a|null|cannot)\b|nothing)"
)


_IN_CONDITION = re.compile(r"\b(?:if|when|whenever|unless)\b[^,;:]*$")
_CONDITION = re.compile(r"^(?:and\s+|but\s+)?(?:if|when|whenever|unless|where|once)\b")


@functools.lru_cache(maxsize=64)
def _prepared(phrases: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(prepare(x).strip() for x in phrases)


def refuses(clause: str, phrases: tuple[str, ...] = ()) -> bool:
    """Does this clause (prepared text) say that the source does not hold the answer? A condition ("if no encoding
    declaration is found, ...") is not a refusal."""
    if phrases and any(p and p in clause for p in _prepared(phrases)):
        return True
    if _CONDITION.search(clause) or not _MAY_REFUSE.search(clause):
        return False
    if _APOLOGY.search(clause) and _NEGATION.search(clause):
        return True
    for rule in _REFUSAL:
        m = rule.search(clause)
        # inside a condition ("..., 0 is used if `size` is not specified") it states what happens, not an absence
        if m and not _IN_CONDITION.search(clause[: m.start()]):
            return True
    return False


def hedge_leads(clause: str) -> bool:
    """A hedge proposes a value unless a strong citation comes first: "it was probably close to the $48.7M reported"
    proposes; "they only say it will likely be removed in 1.0" reports what the source says; "it says the normal
    max is 5, so probably 5 is the default" concludes from it, and proposes."""
    h, c = _HEDGE.search(clause), _CITE_STRONG.search(clause)
    if h is None:
        return False
    return c is None or h.start() < c.start() or _CONCLUDES.search(clause, c.end(), h.start()) is not None


def cites(clause: str) -> bool:
    return _CITE_STRONG.search(clause) is not None or _CITE_WEAK.search(clause) is not None


@dataclass(frozen=True)
class Reading:
    clause: str
    refusal: bool
    hedge: bool  # offers something as the likely answer
    citation: bool  # reports what the source says
    answers_anyway: bool = False  # a verdict or conclusion of the answerer's own ("that said, the answer is")
    infers: bool = False  # reasons its way to a value ("since", "typically", "as well")
    based_on: bool = False  # "based on the context, ...": an inference, or a report about something else
    approx: bool = False  # "roughly", "approximately": a hedge for a negative
    own_knowledge: bool = False  # "from general knowledge", "historically": attributed to the answerer, not the source
    generalizes: bool = False  # "typically", "in practice": what is usual, not what the source says


# a clause that is a generalizing or attributing word alone ("typically" of "Typically, though, ..."): its reading
# belongs to the clause after it
_BARE_LEAD = re.compile(r"(?:typically|usually|normally|generally|commonly|historically|in\s+practice|in\s+general)")
_ANAPHOR = re.compile(r"^(?:and\s+)?(?:it|they|this|that|which|whose|its|their|these|those|he|she|both|each)\b")


def read_answer(answer: str, phrases: tuple[str, ...] = ()) -> list[Reading]:
    """Every clause of the answer with what it does. A clause continues the citation before it when it is the next
    part of the same sentence ("The text states who was on it, about 200 troupes and 30 Indians") or opens with a
    pronoun ("The only agreement is with Nordmark. It gets 22% off list")."""
    out: list[Reading] = []
    for c, joined in _parts(answer):
        refusal = refuses(c, phrases)
        hedge = hedge_leads(c)
        anyway = _ANSWERS_ANYWAY.search(c) is not None or (_SELF_CORRECTS.search(c) is not None and not cites(c))
        prev = out[-1] if out else None
        lead = prev if prev is not None and _BARE_LEAD.fullmatch(prev.clause) else None
        continues = bool(prev and prev.citation and not prev.refusal and (joined or _ANAPHOR.search(c)))
        citation = (cites(c) or continues) and not hedge and not anyway
        out.append(
            Reading(
                c,
                refusal,
                hedge,
                citation,
                answers_anyway=anyway,
                infers=_INFERS.search(c) is not None,
                based_on=_BASED_ON.search(c) is not None,
                approx=_APPROX.search(c) is not None,
                own_knowledge=(_OWN_KNOWLEDGE.search(c) is not None or bool(lead and lead.own_knowledge))
                and not refusal,
                generalizes=(_GENERALLY.search(c) is not None or bool(lead and lead.generalizes)) and not refusal,
            )
        )
    return out


def generalizing(text: str) -> list[str]:
    """The words that make a statement what is usual ("typically", "in most cases"), as the text writes them."""
    return [re.sub(r"\s+", " ", m.group(0).lower()) for m in _GENERALLY.finditer(text.lower())]


def is_refusal(answer: str, phrases: tuple[str, ...] = ()) -> bool:
    """Does any clause of the answer refuse? (Whether it also answers anyway is the verdict's question.) The clauses'
    refusal alone, as read_answer reads it, without the rest of each clause's reading."""
    t = _prepared_text(answer)
    if not phrases and not _MAY_REFUSE.search(t):
        return False
    return any(refuses(c, phrases) for c, _ in _parts(answer, t))
