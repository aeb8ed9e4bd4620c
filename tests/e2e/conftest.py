"""Over real HTTP against the local stack (tests/stacks.py); `conn` reads the stack's own
database."""

import pytest


@pytest.fixture(scope="session")
def database_url(stack_database_url: str) -> str:
    return stack_database_url
