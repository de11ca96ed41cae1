"""docflow: self-hosted, multi-tenant document extraction."""

__version__ = "0.2.0"
