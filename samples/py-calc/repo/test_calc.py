from calc import average, clamp


def test_average_of_two():
    assert average([2, 4]) == 3


def test_average_of_one():
    assert average([5]) == 5


def test_average_keeps_fractions():
    assert average([1, 2]) == 1.5


def test_clamp():
    assert clamp(15, 0, 10) == 10
    assert clamp(-1, 0, 10) == 0
