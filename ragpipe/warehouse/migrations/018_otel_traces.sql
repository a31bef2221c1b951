-- OpenTelemetry traces ([monitor] reads OTLP JSON lines): the spans of one trace may be spread over several lines, and
-- a trace is read when its root span arrives. A file's next read then starts at the first line of a trace still
-- waiting for its root span (bytes_read, lines_read), and lines_seen says up to which line every trace is stored, so
-- that the lines read again give their spans and nothing twice.

ALTER TABLE trace_files ADD COLUMN lines_seen BIGINT;  -- NULL (rows from before): lines_read
