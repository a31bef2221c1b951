"""The RAG under test: retrieval over the LanceDB store (vector, full-text, hybrid by reciprocal-rank fusion), the
answerers that answer from the retrieved chunks (the offline extractive baseline, SmolLM2, any OpenAI-compatible
endpoint) with their client, the team's own app as the subject under test (HTTP or a Python function), and
ranking metrics with trec_eval's conventions for the retrieval benchmarks."""

from ragpipe.core import lazy_exports

_EXPORTS = {
    "retrieval": [
        "IMPL_VERSION as RETRIEVER_VERSION",
        "RRF_K",
        "Hit",
        "has_vector_index",
        "vector_search_many",
        "vector_search",
        "fts_search",
        "fts_search_many",
        "rrf",
        "retrieve_many",
        "retrieve",
        "metrics",
    ],
    "answerers": [
        "IMPL_VERSION as ANSWERER_VERSION",
        "SYSTEM_PROMPT",
        "Answer",
        "Answerer",
        "ExtractiveAnswerer",
        "build_prompt",
        "OpenAIAnswerer",
        "smollm2_gguf",
        "smollm2_tokenizer",
        "smollm2_prompt_counter",
        "SmolLM2Answerer",
        "ANSWERERS",
        "load_answerer",
    ],
    "openai_client": ["ChatError", "ChatReply", "chat"],
    "subject": [
        "IDENTITY_FIELDS",
        "SubjectError",
        "Context",
        "Reply",
        "dotted",
        "parse_reply",
        "HttpSubject",
        "PythonSubject",
        "load_subject",
        "ask_all",
        "Observed",
        "observe",
    ],
    "ranking": [
        "MEASURES as RANKING_MEASURES",
        "ranked_ids",
        "dcg",
        "ndcg_query",
        "recall_query",
        "reciprocal_rank_query",
        "evaluated_queries",
        "ndcg_at_k_per_query",
        "recall_at_k_per_query",
        "mrr_per_query",
        "ndcg_at_k",
        "recall_at_k",
        "mrr",
        "evaluate as evaluate_ranking",
        "load_beir_qrels",
    ],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
