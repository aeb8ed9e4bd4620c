"""The cells a nearby search reads, nearest first, without a database."""

import math

import h3
import pytest

from dispatch.jobs import geo

HERE = (12.9716, 77.5946)


def test_a_job_has_a_cell_at_each_indexed_resolution() -> None:
    cells = geo.cells_of(*HERE)
    assert set(cells) == {"cell_r7", "cell_r8", "cell_r9"}
    assert h3.int_to_str(cells["cell_r9"]) == h3.latlng_to_cell(*HERE, 9)


@pytest.mark.parametrize(("radius", "resolution"), [(500, 9), (5_000, 9), (5_001, 8), (50_000, 7)])
def test_the_resolution_follows_the_radius(radius: float, resolution: int) -> None:
    assert geo.resolution_for(radius) == resolution


def test_bands_walk_outward_cover_the_circle_and_never_repeat_a_cell() -> None:
    bands = list(geo.ring_bands(*HERE, 3_000))
    seen: list[int] = [cell for _, cells, _ in bands for cell in cells]
    assert len(seen) == len(set(seen))
    bounds = [beyond for _, _, beyond in bands]
    assert bounds == sorted(bounds) and bounds[-1] > 3_000  # the last band reaches past it
    covering, _ = geo.covering(*HERE, 3_000, 9)
    assert set(covering) == set(seen)


def test_a_band_stops_where_the_callers_bound_says_nothing_nearer_can_be() -> None:
    everything = list(geo.ring_bands(*HERE, 3_000))
    near = list(geo.ring_bands(*HERE, 3_000, reach=lambda: 400.0))
    assert sum(len(c) for _, c, _ in near) < sum(len(c) for _, c, _ in everything)
    assert near[-1][2] > 400  # still far enough to hold anything within the bound


def test_the_lower_bound_of_a_ring_grows_with_the_ring() -> None:
    edge = 200.0
    bounds = [geo.nearest_possible_m(ring, edge) for ring in range(10)]
    assert bounds[0] == 0 and bounds == sorted(bounds) and bounds[-1] > 5 * edge
    assert math.isclose(geo.area_m2([geo.cells_of(*HERE)["cell_r9"]]), h3.cell_area(
        h3.latlng_to_cell(*HERE, 9), "m^2"
    ))  # fmt: skip
