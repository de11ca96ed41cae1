"""Object storage for document files and large results: shared infrastructure below the domains.

- `base.py`: the `Storage` protocol, its values and errors, and tenant-scoped object keys.
- `local.py`: `LocalStorage`, a folder on local disk (embedded mode, the default).
- `s3.py`: `S3Storage`, any S3-compatible service (distributed mode).
- `open.py`: `open_storage(url)`, which the composition roots call with the configured URL.
"""
