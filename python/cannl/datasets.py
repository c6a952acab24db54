"""cannl.datasets: seeded synthetic datasets (C++ cannl::datasets).

    data = cannl.datasets.moons(samples=1024, seed=42)
"""
from ._cannl import Dataset, circles, moons

__all__ = ["Dataset", "circles", "moons"]
