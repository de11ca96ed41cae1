"""Events: the transactional outbox, CloudEvents envelopes, the publisher and its consumers.

A state change others must hear about writes its event row (`outbox.emit`) in the same
transaction as the change. The publisher flow (`flows.py`) is the only code that hands events to
consumers: it claims unpublished rows in order and starts one consumer workflow per matching
consumer, with the id `{source}:{event_id}:{consumer}`, so a redelivery is a no-op.
"""
