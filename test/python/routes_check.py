"""The Python client's routed experts (R3) against a gateway recording them.

Run by test/python/routes_test.ts with GATEWAY_URL, ADMIN_TOKEN, SESSION_ID and EXPECTED (a JSON
file of each chain's expected rows, as the scripted engine reported them) set. Standard library
only: the rows are read without numpy.
"""

import json
import os
import unittest

from rollout_gateway import Gateway


class RoutedExpertsTest(unittest.TestCase):
    def setUp(self):
        self.gw = Gateway(os.environ["GATEWAY_URL"], os.environ["ADMIN_TOKEN"])
        self.session = os.environ["SESSION_ID"]
        with open(os.environ["EXPECTED"], encoding="utf-8") as file:
            self.expected = json.load(file)

    def test_slime_samples_carry_the_engines_rows(self):
        samples = self.gw.samples(self.session, format="slime", include_side=True)
        self.assertEqual(len(samples), len(self.expected))
        for sample in samples:
            routes = self.gw.routed_experts(sample)
            chain = sample["metadata"]["chain_id"]
            # slime's own check: len(tokens) - 1 rows of layers x top-k
            self.assertEqual(routes.shape[0], len(sample["tokens"]) - 1)
            self.assertEqual(routes.dtype, "int16")
            self.assertEqual(list(routes.values()), self.expected[chain])

    def test_verl_layout_has_a_row_a_token(self):
        for sample in self.gw.samples(self.session, format="verl", include_side=True):
            routes = self.gw.routed_experts(sample, layout="verl")
            tokens = len(sample["prompt_ids"]) + len(sample["response_ids"])
            self.assertEqual(routes.shape[0], tokens)
            width = routes.shape[1] * routes.shape[2]
            chain = sample["extra_fields"]["chain_id"]
            self.assertEqual(list(routes.values())[: len(self.expected[chain])], self.expected[chain])
            self.assertEqual(list(routes.values())[-width:], [-1] * width)


if __name__ == "__main__":
    unittest.main()
