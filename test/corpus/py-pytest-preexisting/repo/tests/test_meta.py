from importlib.metadata import version


def test_has_version():
    # Passes once the package is installed (pip install -e .); a bare checkout has no metadata.
    assert version("statkit") == "0.3.1"
