"""The encryption tests' fixtures (tests/support/encryption_fixtures.py): committed tenants, a
keyring on a local KEK, the sealed storage over a folder or a bucket."""

from support.encryption_fixtures import kek, keyring, new_tenant, raw, sealed
from support.s3_server import s3_server

__all__ = ["kek", "keyring", "new_tenant", "raw", "s3_server", "sealed"]
