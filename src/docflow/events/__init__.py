"""Events: the transactional outbox, CloudEvents envelopes, the publisher and its consumers.

A state change others must hear about writes its event row (`outbox.emit`) in the same
transaction as the change; the domain that makes it builds the event from its own rows (its
`events.py`), so this package imports no domain. The publisher flow (`flows.py`, its step bodies
in `steps.py`) is the only code that hands events to consumers: it claims unpublished rows in
order and starts one consumer workflow per matching consumer (`publisher.hand_over`), with the
id `{source}:{event_id}:{consumer}`, so a redelivery is a no-op.
"""
