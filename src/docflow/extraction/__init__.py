"""The extraction engine: bytes plus an extraction workflow definition in, a typed result out.

A pure library: it knows nothing of HTTP, tenants, the database or DBOS.
"""
