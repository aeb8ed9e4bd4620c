"""Settings from the environment: offer waves parsed, bad values refused by name."""

from collections.abc import Iterator

import pytest

from dispatch.config import SettingsError, settings
from dispatch.config.offers import OfferSettings, Wave

REQUIRED = {"DATABASE_URL": "postgresql://db.example/dispatch", "PHOTO_BUCKET": "photos"}


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for name, value in REQUIRED.items():
        monkeypatch.setenv(name, value)
    settings.cache_clear()
    yield monkeypatch
    settings.cache_clear()


def test_waves_are_size_at_radius_in_order(environment: pytest.MonkeyPatch) -> None:
    environment.setenv("DISPATCH_OFFER_WAVES", " 1@500, 4@2000 ,9@9000")
    waves = OfferSettings.from_environment().offer_waves
    assert waves == [Wave(1, 500), Wave(4, 2000), Wave(9, 9000)]
    assert OfferSettings.model_fields["offer_waves"].default == [
        Wave(3, 3000), Wave(10, 5000), Wave(25, 8000)
    ]  # fmt: skip


@pytest.mark.parametrize(
    "waves", ["", "3", "3@", "0@3000", "3@-1", "three@3000", "3@3000,10@50001"]
)
def test_bad_waves_fail_the_cold_start_naming_the_variable(
    environment: pytest.MonkeyPatch, waves: str, capsys: pytest.CaptureFixture[str]
) -> None:
    environment.setenv("DISPATCH_OFFER_WAVES", waves)
    with pytest.raises(SettingsError, match="DISPATCH_OFFER_WAVES"):
        settings()
    assert "DISPATCH_OFFER_WAVES" in capsys.readouterr().err


def test_nothing_deployed_defaults_to_this_machine(environment: pytest.MonkeyPatch) -> None:
    environment.delenv("DATABASE_URL")
    with pytest.raises(SettingsError, match="DATABASE_URL: Field required"):
        settings()


def test_one_line_names_every_bad_variable_of_the_core_and_the_groups_read(
    environment: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    environment.setenv("DISPATCH_LEASE_SECONDS", "soon")
    environment.setenv("DISPATCH_OFFER_WAVES", "3@")
    with pytest.raises(SettingsError, match=r"DISPATCH_LEASE_SECONDS.*DISPATCH_OFFER_WAVES"):
        settings()
    logged = capsys.readouterr().err.splitlines()
    assert len(logged) == 1
    assert "DISPATCH_LEASE_SECONDS" in logged[0] and "DISPATCH_OFFER_WAVES" in logged[0]
