"""Counting: runs -> token counts -> skeletons.

Estimators (text -> tokens, by writing script or by a real tokenizer), the script tables
they use, and the skeleton: a run reduced to the counts and structure simulation works
on, built once per run and estimator (builder). Nothing downstream tokenizes again."""
