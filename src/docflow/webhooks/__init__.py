"""Webhooks: per-project endpoints that receive docflow's events, signed per Standard Webhooks,
delivered one (event, endpoint) at a time with durable retries and a delivery log."""
