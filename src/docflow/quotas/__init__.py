"""Plans and quotas: requests per second per API key (429 with `Retry-After` and the
`RateLimit-*` headers), documents and pages per month and documents per batch per tenant, the
queue a plan's documents run on (its `concurrent_documents` and `reserved_slots`, enforced by
DBOS's queues) and `GET /v1/usage`. A tenant's `plan` names one of the plans in `DOCFLOW_PLANS`."""
