"""Test fixtures. The database under test is chosen by DOCFLOW_TEST_DATABASE (sqlite or
postgresql); the suite runs once per database in CI."""

import os

from dbos._logger import init_logger

from support.api_fixtures import *  # noqa: F403
from support.db_fixtures import *  # noqa: F403

# DBOS gives its logger a stderr handler the first time a DBOS instance is made, bound to the
# `sys.stderr` of that moment. Made here, it is the test session's; made first inside a
# command run by CliRunner (the demo), it would be that run's stream, closed when the run ends,
# and every later DBOS launch in the session would fail flushing it.
init_logger()

# Only development signs with the placeholder secret (`Settings.check_safe`): the suite runs as
# DOCFLOW_ENV=test, so every Settings it makes, and every process it starts, gets this one.
os.environ.setdefault("DOCFLOW_SIGNING_SECRET", "test-suite-signing-secret-0123456789abcdef")
