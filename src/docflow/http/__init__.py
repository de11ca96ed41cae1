"""The HTTP edge: problem+json errors, authentication, the request transaction, idempotency,
pagination parameters and health endpoints. Domain routers live in `<domain>/api.py`."""
