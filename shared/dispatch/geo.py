"""H3 cells for nearby search: which cells a job is in, which cells a search must look at."""

import math

import h3

RESOLUTIONS = (5, 6, 7)


def cells_of(lat: float, lng: float) -> dict[str, int]:
    """The job's cell at each indexed resolution, as the bigint the columns hold."""
    return {f"cell_r{r}": h3.str_to_int(h3.latlng_to_cell(lat, lng, r)) for r in RESOLUTIONS}


def resolution_for(radius_m: float) -> int:
    """Coarse cells for wide searches, fine ones for close searches: about 100-200 cells."""
    return 7 if radius_m <= 5_000 else 6 if radius_m <= 20_000 else 5


def cells_around(lat: float, lng: float, radius_m: float) -> tuple[int, list[int]]:
    """Every cell that may hold a point within `radius_m`, at the chosen resolution.

    A point within r of the centre lies in a cell whose centre is within r + one edge of it,
    and the centre's own cell centre is within one edge of the centre; rings of neighbours
    step at least sqrt(3) x the shortest edge. H3 edges vary by about 1.5x either way of the
    average over the globe, hence the margins.
    """
    resolution = resolution_for(radius_m)
    edge = h3.average_hexagon_edge_length(resolution, "m")
    rings = math.ceil((radius_m + 3 * edge) / (math.sqrt(3) * edge / 1.5))
    origin = h3.latlng_to_cell(lat, lng, resolution)
    return resolution, [h3.str_to_int(c) for c in h3.grid_disk(origin, rings)]
