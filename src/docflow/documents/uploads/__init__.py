"""A document's file, from the URL it is sent to until its batch starts, in the order it happens.

1. `urls.py`     where to send it: the storage's presigned PUT (S3), else a signed, expiring
                 `PUT /v1/uploads/{token}` on the API itself (local storage). `api.py` is that
                 route; the token is its only credential.
2. `receive.py`  receive the bytes, before any transaction opens: spool the body within the size
                 limit, stream it to storage with its SHA-256, sniff its real type from its first
                 bytes (after a presigned PUT: read the stored object back once for both).
3. `service.py`  record the landing once (a compare-and-set on the document; the batch is locked
                 and counted through `batches.triggers`), then
4.               trigger the batch: when the last document has landed, `triggers.start_if_ready`
                 enqueues its execution in the same transaction.
"""
