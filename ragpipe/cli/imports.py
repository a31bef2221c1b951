"""`ragpipe golden import`: the golden set a team keeps in another tool (Ragas, DeepEval, promptfoo, LangSmith or
Phoenix, a CSV) appended to ragpipe's golden file, each test anchored in the ingested corpus; every line of the
source file is accounted for."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from ragpipe.cli.common import settings_from
from ragpipe.cli.suggest import _warehouse
from ragpipe.core import EXIT_INPUT
from ragpipe.settings import SettingsError

_ID = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def _target(args: argparse.Namespace, settings: Any) -> tuple[Path, Any]:
    from ragpipe.golden import load_golden

    path = Path(args.out) if args.out else settings.golden.path
    if path is None:
        raise SettingsError(f"{settings.source}: set [golden].path, or pass --out FILE, for the tests to go to")
    return path, load_golden(path) if path.is_file() and path.read_text(encoding="utf-8").strip() else None


def _ids(imported: list[Any], golden: Any) -> list[str]:
    """The source's own id where it is one and free, else the next neg_NN / pos_NN."""
    from ragpipe.golden import GoldenFile, next_ids

    base = golden or GoldenFile(path=Path("new"), text="", format="jsonl", tests=[], spans={})
    taken = {t.question_id for t in base.tests}
    fresh = {k: iter(next_ids(base, k, len(imported))) for k in ("negative", "positive")}
    out = []
    for item in imported:
        own = item.row.ident
        qid = own if own and _ID.fullmatch(own) and own not in taken else next(fresh[item.kind])
        taken.add(qid)
        out.append(qid)
    return out


def cmd_golden_import(args: argparse.Namespace) -> int:
    import difflib

    from ragpipe.evaluate import anchor, read_corpus, restamper_for
    from ragpipe.golden import appended, load_golden, read_rows, write_atomic
    from ragpipe.warehouse import connect

    settings = settings_from(args)
    rows, problems = read_rows(Path(args.file), args.source)
    path, golden = _target(args, settings)
    with connect(_warehouse(settings), read_only=True) as con:
        corpus = read_corpus(con, settings.chunker_tag)[0]
        stamper = restamper_for(con, settings.chunker_tag)
    known = {t.question.strip().lower(): f"in {path.name} as {t.question_id}" for t in golden.tests} if golden else {}
    fresh = []
    for r in rows:
        if r.question.lower() in known:
            print(f"line {r.line:<4} {'-':<8} {'':<8} already {known[r.question.lower()]}")
        else:
            known[r.question.lower()] = f"on line {r.line} of {Path(args.file).name}"  # the same question twice
            fresh.append(r)
    imported = anchor(fresh, corpus, stamper)
    done = [i for i in imported if i.test is not None]
    objects = [{**i.test, "question_id": qid} for qid, i in zip(_ids(done, golden), done) if i.test]
    qids = iter(o["question_id"] for o in objects)
    for i in sorted(imported, key=lambda i: i.row.line):
        print(f"line {i.row.line:<4} {i.kind:<8} {next(qids) if i.test else '-':<8} {i.note}")
    for p in problems:
        print(f"line {p.line:<4} {'-':<8} {'-':<8} not imported: {p.message}" + (f" ({p.field})" if p.field else ""))
    text = golden.text if golden else ""
    new_text = appended(golden, objects) if golden else appended_new(objects)
    if objects:
        sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), new_text.splitlines(True), str(path),
                                                   f"{path} (imported)"))  # fmt: skip
    missed = len(problems) + sum(i.test is None for i in imported)
    proposed = sum("proposed" in i.note for i in done)
    print(
        f"\n{len(objects)} of {len(rows) + len(problems)} tests of {args.file} imported "
        f"({sum(o['kind'] == 'positive' for o in objects)} positive, {sum(o['kind'] == 'negative' for o in objects)} "
        f"negative, {proposed} with a proposed trap to review); {missed} not imported (listed above with their line)"
        + (f"; {len(rows) - len(fresh)} already there (listed)" if len(rows) > len(fresh) else "")
    )
    if objects and args.write:
        trial = path.with_name(f".{path.name}.imported")
        trial.write_text(new_text, encoding="utf-8")
        try:
            load_golden(trial)  # the new lines pass the golden file's own validation (GoldenSetError otherwise)
        finally:
            trial.unlink()
        write_atomic(path, new_text)
        print(f"wrote {path}; next: `ragpipe ci` runs them, then `ragpipe golden revalidate --write` records the "
              f"embedder they ran under")  # fmt: skip
    elif objects:
        print(f"nothing written: --write appends them to {path}")
    return EXIT_INPUT if missed else 0


def appended_new(objects: list[dict[str, Any]]) -> str:
    from ragpipe.golden import GoldenFile, appended

    return appended(GoldenFile(path=Path("new"), text="", format="jsonl", tests=[], spans={}), objects)


def add_parser(gsub: Any) -> None:
    """`golden import`, a subcommand of `golden` (cli/golden.py)."""
    from ragpipe.golden import IMPORT_FORMATS

    p = gsub.add_parser(
        "import",
        help="import another tool's golden set (Ragas, DeepEval, promptfoo, LangSmith, CSV), anchored in the corpus",
        description="Reads the tests of another tool's file, makes each a ragpipe test and anchors it in the ingested "
        "corpus (run `ragpipe ingest` first). A test whose expected answer refuses (or that promptfoo checks with "
        "is-refusal) is a negative: its trap is the sentence of its reference context found in the corpus, or one "
        "proposed from the corpus (a sentence stating a value that shares most of the question's words; review "
        "it). Any other test is a positive: its evidence is the sentence of its reference context that states the "
        "expected answer, found in the corpus, or without a context the corpus sentence that states it. Every line "
        "of the file is listed: imported (with its id and where its anchor is), already in the golden set, or not "
        "imported and why (with the closest passage when the context is not in the corpus). Prints the diff of the "
        "golden file; --write appends the tests.",
        epilog="""\
Examples:
  ragpipe golden import testset.jsonl --from ragas           what would be imported, as a diff
  ragpipe golden import goldens.json --from deepeval --write append them to [golden].path
  ragpipe golden import promptfooconfig.yaml --from promptfoo --out imported.jsonl --write
  ragpipe golden import examples.jsonl --from langsmith      inputs.question, outputs.answer

Fields read: Ragas user_input, reference, reference_contexts (to_jsonl, to_csv); DeepEval input, expected_output,
context (save_as json/jsonl/csv); promptfoo tests: vars (question, context) and assert (equals, contains, icontains,
is-refusal, ...); LangSmith/Phoenix inputs and outputs objects (or inputs.question-style columns, Phoenix's CSV
input.question, output.answer, metadata.context); CSV question,
expected_answer (or expected, reference, ground_truth), context.
Exit codes: 0 every test imported (or already there), 2 a line was not imported (listed) or the file is unreadable.""",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", help="the other tool's file")
    p.add_argument("--from", dest="source", required=True, choices=IMPORT_FORMATS, help="the tool that wrote it")
    p.add_argument("--out", metavar="FILE", help="the golden file to append to (default: [golden].path)")
    p.add_argument("--write", action="store_true", help="append the imported tests (default: print the diff only)")
    p.set_defaults(func=cmd_golden_import)
