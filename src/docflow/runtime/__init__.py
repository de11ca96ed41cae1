"""The durable runtime: what the workflow steps use, and how a process launches it.

- `docflow.runtime.context`: a leaf the flows and steps import: the services of the launched
  process (`services()`), the queues' names and concurrency, and `Flows`, the
  declaration a flows module makes of the queues and schedules it needs.
- `docflow.runtime.launch`: DBOS's configuration and lifecycle. It imports no flow: the
  composition roots hand it the flows modules' declarations (`docflow.bootstrap.flows()`).
"""
