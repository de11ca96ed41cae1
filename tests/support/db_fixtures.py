"""Database fixtures: engines, migrated schemas, sessions, tenants."""
