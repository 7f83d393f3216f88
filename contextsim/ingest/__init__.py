"""Ingest: a log file or stream -> runs (contextsim.model).

What every importer shares (base: the protocol, errors, reading JSON and JSONL safely;
json_stream and sse: documents and streamed responses read piece by piece; exchanges and
sent_requests: logged requests rebuilt into one run; captures: calls the proxy recorded
placed in their conversations) and detection (detect). The importers themselves live
with their systems (contextsim.systems)."""
