"""Bringing logs in: uploads, the live streaming API, the capture proxy, the OTLP
receiver. Each writes through the run store (webapp.store)."""
