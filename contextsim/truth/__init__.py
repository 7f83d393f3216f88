"""Truth: what the provider counts and charges.

Reconciliation (the harness's estimate -> the provider's count, fitted on measured
usage), the requests that wrote compaction summaries, prompt-cache pricing, and models'
prices and windows from genai-prices. See DESIGN.md 4.9 and docs/truth.md."""
