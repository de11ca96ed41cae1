"""Backups of a whole installation: `docflow backup create|verify|restore` (operator commands).

A backup is a folder (or an S3 prefix) holding `manifest.json`, the database (`database.sqlite`,
SQLite's online backup; or `database.pgdump`, `pg_dump`'s custom format) and `files/`, every
stored object the database snapshot references, each with its size and SHA-256 in the manifest.
"""
