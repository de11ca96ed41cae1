"""A document's file, from the URL it is sent to until its batch starts, in the order it happens:

1. where to send it (`urls.py`): the storage's presigned POST (S3), else a signed, expiring
   `PUT /v1/uploads/{token}` on the API itself (local storage), whose router is `api.py`;
2. receive the bytes (`receive.py`), before any transaction opens: spool the body within the
   size limit, stream it to storage with its SHA-256, sniff its real type from its first bytes
   (after a presigned POST: copy the object to a key no URL names, read it once for both);
3. record the landing once (`service.py`): a compare-and-set on the document, with the batch
   locked and counted through `batches.triggers`;
4. trigger the batch (`service.py`, in the same transaction): when the last document has
   landed, `batches.triggers.start_if_ready` enqueues the batch's execution.
"""
