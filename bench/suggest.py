"""Proposed negatives on corpora nobody here wrote: how many, how fast, trap rank, and (with judgements) how many are
truly unanswerable with a tempting trap.

    .venv/bin/python bench/suggest.py realdocs --negatives 80      # ../shared/data/realdocs/docs
    .venv/bin/python bench/suggest.py squad2 --negatives 80        # ../shared/data/squad2_dev/corpus
    .venv/bin/python bench/suggest.py narrative --negatives 40     # bench/data/suggest/narrative (12 articles)
    .venv/bin/python bench/suggest.py reports --negatives 40       # bench/data/suggest/reports (10 reports)
    .venv/bin/python bench/suggest.py gazetteer --negatives 40     # bench/data/suggest/gazetteer (12 articles)
    .venv/bin/python bench/suggest.py hospital --negatives 40      # bench/data/suggest/hospital (10 documents)
    .venv/bin/python bench/suggest.py atlas --negatives 40         # bench/data/suggest/atlas (12 articles)
    .venv/bin/python bench/suggest.py transit --negatives 40       # bench/data/suggest/transit (10 documents)
    .venv/bin/python bench/suggest.py lexicon --negatives 40       # bench/data/suggest/lexicon (12 articles)
    .venv/bin/python bench/suggest.py agrimach --negatives 40      # bench/data/suggest/agrimach (10 documents)
    .venv/bin/python bench/suggest.py compendium --negatives 40    # bench/data/suggest/compendium (12 articles)
    .venv/bin/python bench/suggest.py leisure --negatives 40       # bench/data/suggest/leisure (10 documents)
    .venv/bin/python bench/suggest.py almanac --negatives 40       # bench/data/suggest/almanac (12 articles)
    .venv/bin/python bench/suggest.py museums --negatives 40       # bench/data/suggest/museums (10 documents)
    .venv/bin/python bench/suggest.py chronicle --negatives 40     # bench/data/suggest/chronicle (12 articles)
    .venv/bin/python bench/suggest.py port --negatives 40          # bench/data/suggest/port (10 documents)
    .venv/bin/python bench/suggest.py gazette --negatives 40       # bench/data/suggest/gazette (12 articles)
    .venv/bin/python bench/suggest.py university --negatives 40    # bench/data/suggest/university (10 documents)
    .venv/bin/python bench/suggest.py digest --negatives 40        # bench/data/suggest/digest (12 articles)
    .venv/bin/python bench/suggest.py parks --negatives 40         # bench/data/suggest/parks (10 documents)
    .venv/bin/python bench/suggest.py annals --negatives 40        # bench/data/suggest/annals (12 articles)
    .venv/bin/python bench/suggest.py fireservice --negatives 40   # bench/data/suggest/fireservice (10 documents)
    .venv/bin/python bench/suggest.py register --negatives 40      # bench/data/suggest/register (12 articles)
    .venv/bin/python bench/suggest.py housing --negatives 40       # bench/data/suggest/housing (10 documents)
    .venv/bin/python bench/suggest.py lexis --negatives 40         # bench/data/suggest/lexis (12 articles)
    .venv/bin/python bench/suggest.py airport --negatives 40       # bench/data/suggest/airport (10 documents)
    .venv/bin/python bench/suggest.py ledger --negatives 40        # bench/data/suggest/ledger (12 articles)
    .venv/bin/python bench/suggest.py libraries --negatives 40     # bench/data/suggest/libraries (10 documents)
    .venv/bin/python bench/suggest.py folio --negatives 40         # bench/data/suggest/folio (12 articles)
    .venv/bin/python bench/suggest.py schools --negatives 40       # bench/data/suggest/schools (10 documents)
    .venv/bin/python bench/suggest.py waterways --negatives 40     # bench/data/suggest/waterways (10 documents)
    .venv/bin/python bench/suggest.py cyclopedia --negatives 40    # bench/data/suggest/cyclopedia (12 articles)
    .venv/bin/python bench/suggest.py arts --negatives 40          # bench/data/suggest/arts (10 documents)
    .venv/bin/python bench/suggest.py recycling --negatives 40     # bench/data/suggest/recycling (10 documents)
    .venv/bin/python bench/suggest.py panorama --negatives 40      # bench/data/suggest/panorama (12 articles)
    .venv/bin/python bench/suggest.py broadcaster --negatives 40   # bench/data/suggest/broadcaster (10 documents)
    .venv/bin/python bench/suggest.py miscellany --negatives 40    # bench/data/suggest/miscellany (12 articles)
    .venv/bin/python bench/suggest.py highways --negatives 40      # bench/data/suggest/highways (10 documents)
    .venv/bin/python bench/suggest.py thesaurus --negatives 40     # bench/data/suggest/thesaurus (12 articles)
    .venv/bin/python bench/suggest.py constabulary --negatives 40  # bench/data/suggest/constabulary (10 documents)
    .venv/bin/python bench/suggest.py treasury --negatives 40      # bench/data/suggest/treasury (12 articles)
    .venv/bin/python bench/suggest.py envhealth --negatives 40     # bench/data/suggest/envhealth (10 documents)
    .venv/bin/python bench/suggest.py anthology --negatives 40     # bench/data/suggest/anthology (12 articles)
    .venv/bin/python bench/suggest.py waterco --negatives 40       # bench/data/suggest/waterco (10 documents)
    .venv/bin/python bench/suggest.py codex --negatives 40         # bench/data/suggest/codex (12 articles)
    .venv/bin/python bench/suggest.py primer --negatives 40        # bench/data/suggest/primer (12 articles)
    .venv/bin/python bench/suggest.py hospice --negatives 40       # bench/data/suggest/hospice (10 documents)
    .venv/bin/python bench/suggest.py gridco --negatives 40        # bench/data/suggest/gridco (10 documents)
    .venv/bin/python bench/suggest.py tome --negatives 40          # bench/data/suggest/tome (12 articles)
    .venv/bin/python bench/suggest.py canon --negatives 40         # bench/data/suggest/canon (12 articles)
    .venv/bin/python bench/suggest.py ferryco --negatives 40       # bench/data/suggest/ferryco (10 documents)
    .venv/bin/python bench/suggest.py adulted --negatives 40       # bench/data/suggest/adulted (10 documents)
    .venv/bin/python bench/suggest.py treatise --negatives 40      # bench/data/suggest/treatise (12 articles)
    .venv/bin/python bench/suggest.py epitome --negatives 40       # bench/data/suggest/epitome (12 articles)
    .venv/bin/python bench/suggest.py bloodsvc --negatives 40      # bench/data/suggest/bloodsvc (10 documents)
    .venv/bin/python bench/suggest.py bikeshare --negatives 40     # bench/data/suggest/bikeshare (10 documents)
    .venv/bin/python bench/suggest.py example --negatives 40       # examples/corpus (the bundled example)
    .venv/bin/python bench/suggest.py omnibus --negatives 40       # bench/data/suggest/omnibus (12 articles)
    .venv/bin/python bench/suggest.py ambulance --negatives 40     # bench/data/suggest/ambulance (10 documents)

Each corpus is ingested once into bench/results/suggest_<name>/ under the default settings (then reused), and
`ragpipe golden suggest` runs as a user runs it, in its own process (whole-process wall time). A sample of the
negatives (--sample, a fixed seed) is written to sample.jsonl for judging by hand against the corpus; judgements in
bench/data/suggest/<name>_judged.jsonl ({"suggestion_id", "unanswerable", "tempting", "note"}) are joined and
counted. Proposal ids are hashes of the question and the quote, so a judgement stays attached to its proposal.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = (ROOT / ".." / "shared" / "data").resolve()
JUDGED = ROOT / "bench" / "data" / "suggest"
CORPORA = {
    "realdocs": (SHARED / "realdocs" / "docs", []),
    "squad2": (SHARED / "squad2_dev" / "corpus", []),
    "example": (ROOT / "examples" / "corpus", []),  # the bundled example: a company's reports, policies, notes
    # written for this measure by writers who never saw the proposal rules: 12 encyclopedia articles (some with
    # figures for several periods, some with none) and 10 periodic reports of one utility
    "narrative": (JUDGED / "narrative", []),
    "reports": (JUDGED / "reports", []),
    # written later, also by writers who never saw the rules, and run only after the rules were frozen: 12
    # encyclopedia articles of one invented region; 10 documents of a hospital trust (annual and quarterly reports, a
    # policy, a press release, a board summary)
    "gazetteer": (JUDGED / "gazetteer", []),
    "hospital": (JUDGED / "hospital", []),
    # and two more, run once with the rules frozen after the two above had been read: 12 encyclopedia articles on
    # unrelated subjects; 10 documents of a city's transit agency
    "atlas": (JUDGED / "atlas", []),
    "transit": (JUDGED / "transit", []),
    # and two more, run once with the rules frozen after atlas and transit had been read: 12 encyclopedia articles;
    # 10 documents of an agricultural machinery maker (results releases, shareholder letters, a policy, ...)
    "lexicon": (JUDGED / "lexicon", []),
    "agrimach": (JUDGED / "agrimach", []),
    # and two more, run once with the rules frozen after lexicon and agrimach had been read: 12 encyclopedia
    # articles; 10 documents of a city's library and leisure services
    "compendium": (JUDGED / "compendium", []),
    "leisure": (JUDGED / "leisure", []),
    # round 5, rules frozen after compendium and leisure had been read: 12 encyclopedia articles; 10 documents of a
    # national museums trust
    "almanac": (JUDGED / "almanac", []),
    "museums": (JUDGED / "museums", []),
    # round 6, rules frozen after almanac and museums had been read: 12 encyclopedia articles; 10 documents of a
    # port authority (monthly trade statistics, annual reports, ...)
    "chronicle": (JUDGED / "chronicle", []),
    "port": (JUDGED / "port", []),
    # round 7, rules frozen after chronicle and port had been read: 12 encyclopedia articles; 10 documents of a
    # university (termly council updates, facts and figures, ...)
    "gazette": (JUDGED / "gazette", []),
    "university": (JUDGED / "university", []),
    # round 8, rules frozen after gazette and university had been read: 12 encyclopedia articles (a county's town,
    # river, railway, ... and subjects elsewhere); 10 documents of a national park authority
    "digest": (JUDGED / "digest", []),
    "parks": (JUDGED / "parks", []),
    # round 9, rules frozen after digest and parks had been read: 12 encyclopedia articles (subjects in several
    # countries); 10 documents of a county fire and rescue service
    "annals": (JUDGED / "annals", []),
    "fireservice": (JUDGED / "fireservice", []),
    # round 10, rules frozen after annals and fireservice had been read: 12 encyclopedia articles; 10 documents of a
    # municipal housing company
    "register": (JUDGED / "register", []),
    "housing": (JUDGED / "housing", []),
    # round 11, rules frozen after register and housing had been read: 12 encyclopedia articles; 10 documents of a
    # regional airport company
    "lexis": (JUDGED / "lexis", []),
    "airport": (JUDGED / "airport", []),
    "ledger": (JUDGED / "ledger", []),
    "libraries": (JUDGED / "libraries", []),
    "folio": (JUDGED / "folio", []),
    "schools": (JUDGED / "schools", []),
    "waterways": (JUDGED / "waterways", []),
    "cyclopedia": (JUDGED / "cyclopedia", []),
    "arts": (JUDGED / "arts", []),
    "recycling": (JUDGED / "recycling", []),
    "omnibus": (JUDGED / "omnibus", []),
    "ambulance": (JUDGED / "ambulance", []),
    # round 16, rules frozen after omnibus and ambulance had been read: 12 encyclopedia articles of one invented
    # province; 10 documents of a regional public broadcaster
    "panorama": (JUDGED / "panorama", []),
    "broadcaster": (JUDGED / "broadcaster", []),
    # round 17, rules frozen after panorama and broadcaster had been read: 12 encyclopedia articles; 10 documents of
    # a city council's highways and transport service
    "miscellany": (JUDGED / "miscellany", []),
    "highways": (JUDGED / "highways", []),
    # round 18, rules frozen after miscellany and highways had been read: 12 encyclopedia articles; 10 documents of
    # a county police force
    "thesaurus": (JUDGED / "thesaurus", []),
    "constabulary": (JUDGED / "constabulary", []),
    # round 19, rules frozen after thesaurus and constabulary had been read: 12 encyclopedia articles; 10 documents of
    # a city council's environmental health and trading standards service
    "treasury": (JUDGED / "treasury", []),
    "envhealth": (JUDGED / "envhealth", []),
    # round 20, rules frozen after treasury and envhealth had been read: 12 encyclopedia articles; 10 documents of a
    # regional water and sewerage company
    "anthology": (JUDGED / "anthology", []),
    "waterco": (JUDGED / "waterco", []),
    # round 21, rules frozen at a6b7a73 (prose asked only where a template asks it), after anthology and waterco had
    # been read: two collections of 12 encyclopedia articles on varied subjects in invented countries; 10 documents
    # of a hospice charity; 10 of a regional electricity distribution network operator
    "codex": (JUDGED / "codex", []),
    "primer": (JUDGED / "primer", []),
    "hospice": (JUDGED / "hospice", []),
    "gridco": (JUDGED / "gridco", []),
    # round 22, rules frozen after round 21's four corpora had been read: two collections of 12 encyclopedia articles
    # on varied subjects in invented countries; 10 documents of a publicly owned island ferry company; 10 of a county
    # council's adult and community learning service
    "tome": (JUDGED / "tome", []),
    "canon": (JUDGED / "canon", []),
    "ferryco": (JUDGED / "ferryco", []),
    "adulted": (JUDGED / "adulted", []),
    # round 23, rules frozen at 822609a, after round 22's four corpora had been read: two collections of 12
    # encyclopedia articles; 10 documents of a regional blood and transplant service; 10 of a city's bicycle-hire
    # operator
    "treatise": (JUDGED / "treatise", []),
    "epitome": (JUDGED / "epitome", []),
    "bloodsvc": (JUDGED / "bloodsvc", []),
    "bikeshare": (JUDGED / "bikeshare", []),
}


def _settings(project: Path, corpus: Path, exclude: list[str]) -> Path:
    path = project / "ragpipe.toml"
    path.write_text(
        f'[warehouse]\ndir = "warehouse"\n\n[corpus]\ndir = {json.dumps(str(corpus))}\nexclude = {json.dumps(exclude)}\n'
    )
    return path


def _ragpipe(settings: Path, *args: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "ragpipe"), "--settings", str(settings), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        sys.exit(f"ragpipe {' '.join(args)} failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return time.perf_counter() - t0, out.stdout + out.stderr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", choices=sorted(CORPORA))
    ap.add_argument("--negatives", type=int, default=80)
    ap.add_argument("--sample", type=int, default=40)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()

    import duckdb

    corpus, exclude = CORPORA[args.corpus]
    project = ROOT / "bench" / "results" / f"suggest_{args.corpus}"
    project.mkdir(parents=True, exist_ok=True)
    settings = _settings(project, corpus, exclude)
    db = project / "warehouse" / "ragpipe.duckdb"
    if not db.exists():
        seconds, _ = _ragpipe(settings, "ingest")
        print(f"ingested {corpus} in {seconds:.0f} s (once; reused by later runs)")
    wall, out = _ragpipe(
        settings, "golden", "suggest", "--negatives", str(args.negatives), "--out", str(project / "sheet.md")
    )
    print(next((line for line in out.splitlines() if "proposal(s) from" in line), ""))  # "N negative and ..."
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "SELECT suggestion_id, question, quote, source, value, rank, k, qualifier_kind FROM golden_suggestions "
            "WHERE decision IS NULL AND kind = 'negative' ORDER BY suggestion_id"
        ).fetchall()
        chunks = con.execute("SELECT count(*) FROM chunks").fetchone()[0]
    k = rows[0][6] if rows else 0
    top = sum(1 for r in rows if r[5])
    kinds = {q: sum(1 for r in rows if r[7] == q) for q in sorted({r[7] for r in rows})}
    print(f"negatives proposed: {len(rows)} ({kinds}); trap in the top {k}: {top} ({top / max(len(rows), 1):.0%})")
    print(
        f"`ragpipe golden suggest` whole process: {wall:.1f} s for {chunks} chunks ({wall / chunks * 1000:.1f} s per 1,000)"
    )

    sample = random.Random(args.seed).sample(rows, min(args.sample, len(rows)))
    fields = ["suggestion_id", "question", "trap_quote", "trap_source", "trap_value", "rank"]
    with open(project / "sample.jsonl", "w", encoding="utf-8") as f:
        for r in sample:
            f.write(json.dumps(dict(zip(fields, r[:6])), ensure_ascii=False) + "\n")
    print(f"sample of {len(sample)} for judging: {project / 'sample.jsonl'}")
    judged_file = JUDGED / f"{args.corpus}_judged.jsonl"
    if judged_file.exists():
        judged = {j["suggestion_id"]: j for j in map(json.loads, judged_file.read_text().splitlines()) if j}
        hits = [judged[r[0]] for r in sample if r[0] in judged]
        good = sum(1 for j in hits if j["unanswerable"] and j["tempting"])
        print(
            f"judged: {len(hits)} of the sample; truly unanswerable {sum(j['unanswerable'] for j in hits)}, "
            f"tempting trap {sum(j['tempting'] for j in hits)}, both {good} ({good / max(len(hits), 1):.0%})"
        )
        for key in ("readable", "keep"):  # judged since the series rule: a grammatical question; a keeper
            if any(key in j for j in hits):
                n = sum(bool(j.get(key)) for j in hits)
                print(f"  {key}: {n} of {len(hits)} ({n / max(len(hits), 1):.0%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
