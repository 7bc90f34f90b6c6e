import pytest

from statkit import mean, median


def test_mean_of_three():
    assert mean([1, 2, 3]) == 2


def test_mean_of_one():
    assert mean([5]) == 5


def test_mean_empty():
    with pytest.raises(ValueError):
        mean([])


def test_median_odd():
    assert median([3, 1, 2]) == 2


def test_median_even():
    assert median([4, 1, 3, 2]) == 2.5
