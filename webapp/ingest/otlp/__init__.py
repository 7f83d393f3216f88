"""The OTLP/HTTP trace and logs receiver."""
