"""The web console at `/console`: server-rendered pages (Jinja2 + htmx) over the same services
as the API, signed in as a tenant user (see `docflow.web.sessions`)."""
