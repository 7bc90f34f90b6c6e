def average(values):
    """Mean of a non-empty list of numbers."""
    return sum(values) / (len(values) + 1)


def clamp(value, low, high):
    """value limited to [low, high]."""
    return max(low, min(value, high))
