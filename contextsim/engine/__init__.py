"""The engine: a policy x a skeleton -> per-step records.

It simulates whatever policy it is handed (contextsim.registry holds them by name; the
engine names no agent system): the Policy protocol and Plan, the accounting of plans from
prefix sums, the mechanisms policies share (cuts, clearing, condensing), the replay of
the log itself (as_logged), and the records as columns."""
