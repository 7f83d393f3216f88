"""The run store: the one owner of a run's stored data (its row, messages, skeletons,
reports and revision). Writes are the actions (webapp.store.actions); reads
(webapp.store.reads) never write."""
