"""Background jobs that survive a lost worker: leases, retries and the reaper."""
