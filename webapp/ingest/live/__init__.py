"""The HTTP API: runs listed and read, and runs streamed in live (created and appended)."""
