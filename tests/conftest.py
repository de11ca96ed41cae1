"""Test fixtures. The database under test is chosen by DOCFLOW_TEST_DATABASE (sqlite or
postgresql); the suite runs once per database in CI."""

from support.api_fixtures import *  # noqa: F403
from support.db_fixtures import *  # noqa: F403
