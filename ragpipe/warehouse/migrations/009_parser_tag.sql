-- Which PDF engine parsed each document ([parser].pdf_engine): switching engines re-parses exactly the PDFs.
-- A document's version (the file's content hash, plus its parser tag when it has one) keys its chunks and its parse
-- errors, so a re-parsed document is re-chunked and a file that failed under one engine is tried under the other.
-- Rows from before this column were parsed by unstructured's default `fast` strategy.

ALTER TABLE documents ADD COLUMN parser_tag VARCHAR DEFAULT '';  -- '' (not a PDF) | pdfium-<n> | unstructured-<strategy>
UPDATE documents SET parser_tag = 'unstructured-fast' WHERE format = 'pdf';
UPDATE chunks SET doc_sha256 = doc_sha256 || '+unstructured-fast'
    WHERE doc_id IN (SELECT doc_id FROM documents WHERE format = 'pdf');
UPDATE ingest_errors SET sha256 = sha256 || '+unstructured-fast' WHERE stage = 'parse' AND lower(path) LIKE '%.pdf';
