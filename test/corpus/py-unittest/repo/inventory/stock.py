"""A stock ledger: receipts and sales per item, with reorder decisions."""


class Stock:
    def __init__(self):
        self._levels = {}

    def receive(self, item, quantity):
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        self._levels[item] = self._levels.get(item, 0) + quantity

    def sell(self, item, quantity):
        """Sell `quantity` of `item`; selling more than is in stock is refused."""
        level = self._levels.get(item, 0)
        if quantity > level:
            raise ValueError(f"only {level} of {item} in stock")
        self._levels[item] = level - quantity

    def level(self, item):
        return self._levels.get(item, 0)

    def to_reorder(self, reorder_points):
        """Items at or below their reorder point, sorted by name."""
        return sorted(item for item, point in reorder_points.items() if self.level(item) < point)
