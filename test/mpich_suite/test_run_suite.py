#!/usr/bin/env python3
"""run_suite.py's verdicts and check, on made-up runs: that the check fails where it must."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_suite  # noqa: E402

P = ["ob1", "ucxdt"]


class Judge(unittest.TestCase):
    def test_default_wants_no_errors_alone_and_status_zero(self):
        self.assertEqual(run_suite.judge(0, " No Errors\n"), "pass")
        self.assertEqual(run_suite.judge(1, " No Errors\n"), "exit 1")
        self.assertEqual(run_suite.judge(-11, ""), "signal 11")
        self.assertEqual(run_suite.judge(0, "Found 2 errors\n"), "no 'No Errors'")
        self.assertEqual(run_suite.judge(0, "x = 3\n No Errors\n"), "stray output")
        self.assertEqual(run_suite.judge(0, " Test Skipped\n"), "skip")
        self.assertEqual(run_suite.judge(None, " No Errors\n"), "timeout")

    def test_result_tests(self):
        self.assertEqual(run_suite.judge(0, "WARNING: a\n No Errors\n"), "stray output")
        self.assertEqual(run_suite.judge(0, "WARNING: a\n No Errors\n", "TestAllowWarnings"), "pass")
        self.assertEqual(run_suite.judge(2, "", "TestStatus"), "pass")
        self.assertEqual(run_suite.judge(0, " No Errors\n", "TestErrFatal"), "exit 0 where it must fail")
        self.assertEqual(run_suite.judge(1, " No Errors\n", "TestStatusNoErrors"), "pass")
        self.assertEqual(run_suite.judge(1, "", "TestStatusNoErrors"), "no 'No Errors'")
        self.assertEqual(run_suite.judge(0, "anything\n", "TestBench"), "pass")


class Check(unittest.TestCase):
    def problems(self, results, known=None):
        return run_suite.check(results, known or {}, P)[0]

    def test_a_regression_fails_unless_listed_for_ucxdt(self):
        r = {"pt2pt/a 2": {"ob1": "pass", "ucxdt": "timeout"}}
        self.assertEqual(len(self.problems(r)), 1)
        self.assertEqual(self.problems(r, {("pt2pt/a 2", "ucxdt"): "why"}), [])
        self.assertEqual(len(self.problems(r, {("pt2pt/a 2", "all"): "why"})), 2)  # not ob1's failure

    def test_a_failure_under_both_must_be_listed(self):
        r = {"coll/b 4": {"ob1": "exit 1", "ucxdt": "exit 1"}}
        self.assertEqual(len(self.problems(r)), 1)
        self.assertEqual(self.problems(r, {("coll/b 4", "all"): "why"}), [])

    def test_the_reference_failing_alone_is_not_ours(self):
        self.assertEqual(self.problems({"c 1": {"ob1": "timeout", "ucxdt": "pass"}}), [])

    def test_a_listed_run_that_passes_fails_the_check(self):
        r = {"d 2": {"ob1": "pass", "ucxdt": "pass"}}
        self.assertEqual(len(self.problems(r, {("d 2", "ucxdt"): "why"})), 1)
        self.assertEqual(len(self.problems(r, {("d 2", "all"): "why"})), 1)
        r = {"e 2": {"ob1": "exit 1", "ucxdt": "pass"}}
        self.assertEqual(len(self.problems(r, {("e 2", "all"): "why"})), 1)

    def test_not_run_entries(self):
        r = {"f 2": {"ob1": "pass", "ucxdt": "not run"}}
        self.assertEqual(self.problems(r, {("f 2", "ucxdt"): "not run: hangs"}), [])
        r = {"g 2": {"ob1": "timeout", "ucxdt": "not run"}}
        self.assertEqual(self.problems(r, {("g 2", "ucxdt"): "not run: hangs"}), [])


class Parse(unittest.TestCase):
    def test_known_file_of_the_repository_parses_and_gives_causes(self):
        here = os.path.dirname(os.path.abspath(__file__))
        known = run_suite.read_known(os.path.join(here, "known_failures.txt"))
        self.assertTrue(known)
        for (rid, pml), cause in known.items():
            self.assertIn(pml, ("all", "ucxdt"), rid)
            self.assertTrue(cause.strip(), rid)


if __name__ == "__main__":
    unittest.main()
