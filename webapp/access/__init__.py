"""Who may see and do what: the local user, API keys, share links, rate limits."""
