"""HTTP fixtures: the real app, API keys, clients."""
