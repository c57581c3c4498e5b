"""Batches of runs: local workers, Ray, DBOS-durable workers, and approvals across a batch."""
