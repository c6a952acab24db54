"""Shared set-up of the cannl Python tests: a scratch working directory (cannl writes
build_files/ and log_files/ there; CANNL_PYTEST_WORKDIR keeps one across runs so the compile
cache is reused) and the paths of the repository's data."""
import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session", autouse=True)
def work_dir(tmp_path_factory):
    path = os.environ.get("CANNL_PYTEST_WORKDIR")
    path = pathlib.Path(path) if path else tmp_path_factory.mktemp("cannl_work")
    path.mkdir(parents=True, exist_ok=True)
    previous = os.getcwd()
    os.chdir(path)
    import cannl
    cannl.config.reload()
    yield path
    os.chdir(previous)


@pytest.fixture
def repo():
    return REPO
