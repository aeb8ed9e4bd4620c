"""H3 cells for nearby search: which cells a job is in, and which cells a search looks at,
nearest rings first, so that it can stop as soon as nothing further can be nearer."""

import math
from collections.abc import Callable, Iterator

import h3

RESOLUTIONS = (7, 8, 9)
COARSEST = min(RESOLUTIONS)
SLACK = 1.2  # neighbouring H3 cells differ a little in size; bounds allow for it


def cells_of(lat: float, lng: float) -> dict[str, int]:
    """The job's cell at each indexed resolution, as the bigint the columns hold."""
    return {f"cell_r{r}": h3.str_to_int(h3.latlng_to_cell(lat, lng, r)) for r in RESOLUTIONS}


def resolution_for(radius_m: float) -> int:
    """Fine cells for close searches (dense places), coarser ones for wide searches."""
    return 9 if radius_m <= 5_000 else 8 if radius_m <= 15_000 else 7


def _edge_m(cell: str) -> float:
    """The edge of a hexagon of this cell's area (cells near it are about the same size)."""
    return math.sqrt(2 * h3.cell_area(cell, "m^2") / (3 * math.sqrt(3)))


def nearest_possible_m(ring: int, edge: float) -> float:
    """A lower bound on the distance from the search point to anything in ring `ring`.

    Ring k's centres are at least 1.5 k edges from the origin cell's centre; the point is
    within one edge of that centre and a cell's points within one edge of its own centre.
    """
    return max(0.0, 1.5 * ring * edge / SLACK - 2 * edge * SLACK)


def ring_bands(
    lat: float, lng: float, radius_m: float, reach: Callable[[], float] | None = None
) -> Iterator[tuple[int, list[int], float]]:
    """(resolution, cells, distance nothing beyond this band can beat), nearest bands first,
    until the rings cannot hold anything within `radius_m`, or within `reach()`: the caller's
    current bound (once it holds enough results, only nearer ones can matter), asked before
    each band so that a band never reaches past what can still be useful."""
    resolution = resolution_for(radius_m)
    origin = h3.latlng_to_cell(lat, lng, resolution)
    edge = _edge_m(origin)
    first, size = 0, 3

    def bound() -> float:
        return min(radius_m, reach()) if reach else radius_m

    while nearest_possible_m(first, edge) <= bound():
        last = first + size - 1
        while last > first and nearest_possible_m(last, edge) > bound():
            last -= 1  # rings that cannot hold anything near enough any more
        cells = [
            h3.str_to_int(cell)
            for ring in range(first, last + 1)
            for cell in (h3.grid_ring(origin, ring) if ring else [origin])
        ]
        yield resolution, cells, nearest_possible_m(last + 1, edge)
        first, size = last + 1, size * 2


def covering(lat: float, lng: float, radius_m: float, resolution: int) -> tuple[list[int], float]:
    """Every cell at `resolution` that can hold a point within `radius_m` (the rings out to
    where nothing can be that near), and their area in square metres."""
    origin = h3.latlng_to_cell(lat, lng, resolution)
    edge = _edge_m(origin)
    rings = 0
    while nearest_possible_m(rings + 1, edge) <= radius_m:
        rings += 1
    cells = h3.grid_disk(origin, rings)
    return [h3.str_to_int(c) for c in cells], len(cells) * float(h3.cell_area(origin, "m^2"))


def area_m2(cells: list[int]) -> float:
    """About how much ground a band of neighbouring cells covers."""
    return len(cells) * float(h3.cell_area(h3.int_to_str(cells[0]), "m^2"))
