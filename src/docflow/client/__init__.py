"""The command line's side of the HTTP API: a small client for a docflow server (base URL and
API key from options, the environment or a profile file), used by the remote commands."""
