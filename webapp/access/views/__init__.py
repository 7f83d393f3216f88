"""The pages and answers of access: share links, API tokens, rate-limited visitors."""
