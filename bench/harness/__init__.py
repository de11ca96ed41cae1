"""What every scenario shares: documents, processes, the HTTP client, machine facts, statistics."""
