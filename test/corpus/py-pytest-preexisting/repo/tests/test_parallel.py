from statkit import total_in_workers


def test_total_in_workers():
    assert total_in_workers([1, 2, 3, 4, 5]) == 15
