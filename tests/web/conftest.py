"""The console tests' fixtures (`browser`, `console`)."""

from support.console_fixtures import browser, console  # noqa: F401
