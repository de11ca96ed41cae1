"""Worker processes seen from the database: heartbeats, and who recovers a dead worker's work."""
