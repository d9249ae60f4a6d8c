"""Fixtures of the `lemma` Python module tests: the module from the build tree, the shared data
(../shared or $LEMMA_SHARED; missing data fails under CI=true, else skips), the `lemma` binary,
and one LLM over stories260K shared by the tests of a session."""

import os
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
SOURCE_DIR = pathlib.Path(os.environ.get("LEMMA_SOURCE_DIR", HERE.parents[1]))
BUILD_DIR = SOURCE_DIR / "build" / "release"
sys.path.insert(0, os.environ.get("LEMMA_PYTHON_DIR", str(BUILD_DIR / "python")))

import lemma  # noqa: E402  (a failure here means the module is not built)


def running_in_ci() -> bool:
    return os.environ.get("CI") == "true"


def shared_data(relative: str) -> pathlib.Path:
    shared = pathlib.Path(os.environ["LEMMA_SHARED"]) if os.environ.get("LEMMA_SHARED") else SOURCE_DIR.parent / "shared"
    path = shared / "data" / relative
    if not path.exists():
        message = f"missing shared test data: {path}"
        if running_in_ci():
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def stories_path() -> str:
    return str(shared_data("models/stories260K/stories260K.gguf"))


@pytest.fixture(scope="session")
def llm(stories_path):
    return lemma.LLM(stories_path, threads=1, max_num_seqs=16, pin_threads=False)


@pytest.fixture(scope="session")
def lemma_binary() -> str:
    path = os.environ.get("LEMMA_BINARY", str(BUILD_DIR / "src" / "cli" / "lemma"))
    if not os.path.exists(path):
        pytest.fail(f"the lemma binary is not built: {path}")
    return path
