"""Object storage for document files and large results: shared infrastructure below the domains.

- `base.py`: the `Storage` protocol, its values and errors, and tenant-scoped object keys.
- `local.py`: `LocalStorage`, a folder on local disk (embedded mode, the default).
- `s3.py`: `S3Storage`, any S3-compatible service (distributed mode).
- `open.py`: `open_storage(url)`, the storage a configured URL names (the composition roots
  open it through `docflow.encryption.service.open_file_storage`, which wraps it in a
  `SealedStorage` when files are encrypted; a backup copies its raw bytes).
- `sealed.py`: `SealedStorage`, any storage with every object sealed under its tenant's key.
"""
