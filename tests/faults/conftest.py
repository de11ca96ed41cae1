"""Fixtures of the fault tests (see support/faults.py)."""

from support.faults import fault_env, fresh_postgres

__all__ = ["fault_env", "fresh_postgres"]
