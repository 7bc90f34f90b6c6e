import unittest

from inventory.stock import Stock


class StockTest(unittest.TestCase):
    def setUp(self):
        self.stock = Stock()
        self.stock.receive("pens", 10)
        self.stock.receive("paper", 3)

    def test_receive_adds_up(self):
        self.stock.receive("pens", 5)
        self.assertEqual(self.stock.level("pens"), 15)

    def test_sell_lowers_the_level(self):
        self.stock.sell("pens", 4)
        self.assertEqual(self.stock.level("pens"), 6)

    def test_cannot_sell_more_than_in_stock(self):
        with self.assertRaises(ValueError):
            self.stock.sell("paper", 4)

    def test_reorder_below_the_point(self):
        self.assertEqual(self.stock.to_reorder({"paper": 5, "pens": 5}), ["paper"])

    def test_reorder_at_the_point(self):
        self.assertEqual(self.stock.to_reorder({"paper": 3}), ["paper"])

    def test_unknown_items_need_reordering(self):
        self.assertEqual(self.stock.to_reorder({"ink": 1}), ["ink"])


if __name__ == "__main__":
    unittest.main()
