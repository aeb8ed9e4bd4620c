"""The cells a search reads: every cell a position within its circle or box can be in, and no
more than a handful for the radii the waves use (pure arithmetic, no Redis)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from dispatch.workers.locations import EARTH_RADIUS_M, cell_of, cells_around, cells_in_box
from tests.support import destination

latitudes = st.floats(-85.0, 85.0)
longitudes = st.floats(-180.0, 180.0)


@settings(max_examples=2_000)
@given(
    latitudes,
    longitudes,
    st.floats(1.0, 50_000.0),
    st.floats(0.0, 360.0),
    st.floats(0.0, 1.0),
)
def test_a_circle_reads_every_cell_a_position_within_it_is_in(
    lat: float, lng: float, radius: float, bearing: float, fraction: float
) -> None:
    there = destination(lat, lng, bearing, radius * fraction, EARTH_RADIUS_M)
    assert cell_of(*there) in cells_around(lat, lng, radius)


@given(
    latitudes,
    longitudes,
    st.floats(0.0, 2.0),
    st.floats(0.0, 2.0),
    st.floats(0, 1),
    st.floats(0, 1),
)
def test_a_box_reads_every_cell_a_position_within_it_is_in(
    south: float, west: float, tall: float, wide: float, up: float, across: float
) -> None:
    north, east = min(south + tall, 85.0), min(west + wide, 180.0)
    there = (south + (north - south) * up, west + (east - west) * across)
    assert cell_of(*there) in cells_in_box(west, south, east, north)


def test_a_waves_radius_reads_a_handful_of_cells() -> None:
    """3 km: at most four cells (2 x 2); 8 km: at most nine, away from the far north."""
    for lat in (0.0, 12.97, 40.7, 51.5):
        for lng in (0.0, 77.59, -74.0, 179.99):
            assert len(cells_around(lat, lng, 3_000)) <= 4
            assert len(cells_around(lat, lng, 8_000)) <= 9


def test_across_the_antimeridian_the_cells_wrap() -> None:
    cells = cells_around(0.0, 179.99, 3_000)
    assert cell_of(0.0, -179.99) in cells and cell_of(0.0, 179.99) in cells
