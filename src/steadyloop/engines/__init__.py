"""Adapters that run steadyloop's loop on durable engines: `steadyloop.engines.dbos`."""
