/** A repository whose add() subtracts, with one unittest that says so. */
export const BUGGY_CALC: Record<string, string> = {
  'calc.py': 'def add(a, b):\n    return a - b\n',
  'test_calc.py':
    'import unittest\n\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n',
};

export const FIXED_CALC = 'def add(a, b):\n    return a + b\n';

/**
 * The red team's calc.py (issue 29): right only where .git names an attempt's worktree
 * ("...-a0"), wrong on a fresh checkout: a patch that can tell the two apart.
 */
export const CALC_RIGHT_ONLY_IN_ATTEMPT_WORKTREE = [
  'import re',
  '',
  '',
  'def add(a, b):',
  "    name = open('.git').read().strip()",
  "    return a + b if re.search(r'-a\\d+$', name) else a - b",
  '',
].join('\n');
