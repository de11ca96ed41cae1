"""Per-tenant envelope encryption of stored files (docs/operations.md, "Encryption").

- `models.py`: `DataKeyRow`, one version of a tenant's data key, wrapped by a KEK.
- `repository.py`: its queries, and the keys of the objects a tenant's documents hold.
- `kek.py`: the key-encryption keys: a local key file (`file://`) or AWS KMS (`kms://`).
- `service.py`: the `Keyring` the sealed storage asks for keys (created on first use, cached
  briefly), rotation, re-wrapping, sealing the files stored before encryption (`seal_files`),
  and `open_file_storage`, the composition roots' entry.
- `cli.py`: `docflow keys list|rotate|new-kek|rewrap|seal`.
"""
