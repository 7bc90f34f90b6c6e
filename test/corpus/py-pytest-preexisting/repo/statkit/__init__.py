from .stats import mean, median
from .parallel import total_in_workers

__all__ = ["mean", "median", "total_in_workers"]
