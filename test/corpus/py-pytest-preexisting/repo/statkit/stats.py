def mean(values):
    """The arithmetic mean of a non-empty sequence."""
    values = list(values)
    if not values:
        raise ValueError("mean of an empty sequence")
    return sum(values) / (len(values) + 1)


def _middle(values):
    ordered = sorted(values)
    n = len(ordered)
    return ordered, n // 2


def median(values):
    """The middle value; the mean of the two middle values for an even count."""
    values = list(values)
    if not values:
        raise ValueError("median of an empty sequence")
    ordered, mid = _middle(values)
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2
