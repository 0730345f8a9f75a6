"""Packaging: the card's top-level folders are the subpackages of ``gpusre`` (and nothing else is).

Subpackages are discovered, not listed, so a new ``models/<topic>/`` or ``models/sources/<source>/``
folder needs no packaging edit. ``tests/``, ``benchmarks/`` and ``docs/`` are not importable.
"""

from setuptools import find_namespace_packages, setup

FOLDERS = ("pipelines", "assets", "models", "sql", "reports", "simulate")

packages: list[str] = []
package_dir: dict[str, str] = {}
for folder in FOLDERS:
    package_dir[f"gpusre.{folder}"] = folder
    packages.append(f"gpusre.{folder}")
    packages += [f"gpusre.{folder}.{sub}" for sub in find_namespace_packages(where=folder, exclude=["*__pycache__*"])]

setup(packages=packages, package_dir=package_dir)
