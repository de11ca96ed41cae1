"""Watched sources: a project's folder on the server, polled on a cron schedule, each poll
taking the folder's new files into one batch with the source's workflow, exactly once per file.

`models.py` holds the sources, their runs and the files they took (unique per source, path and
content hash: the claim that makes a file taken once however many polls race or restart);
`service.py` the use cases and the poll's parts; `flows.py` the schedule (a tick that enqueues
one poll workflow per due source, id from the source and its due time) and the poll workflow;
`api.py` the routes under `/v1/projects/{id}/sources`.
"""
