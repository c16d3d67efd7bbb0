#!/usr/bin/env python3
"""e2e: budget maintenance windows against the test API server, on the real clock. A window
opens at a minute boundary, so a test waits for one (8 to 68 s): these tests run once, in the
sanitizer stage of CI (suite e2e-once), not again under valgrind and TSan.

Environment: NODEGATE (the binary), NG_SOURCE_ROOT (the repository)."""
import calendar
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_gate import ND_PATH, NDB_PATH, NGC_PATH, ON_TEST1, GateTest  # noqa: E402
from test_live_cache import eventually, kubectl_rows  # noqa: E402


class WindowsTest(GateTest):
    def test_S06_a_request_waits_for_the_window_and_goes_when_it_opens(self):
        """S06: an NDB whose only maintenance window opens at the next minute (read on Kolkata's
        wall clock, UTC+05:30); a request made before it (without retry: waiting for a window is
        not a failure) stays Pending with nextRetryDate at the opening and a reason saying when,
        is never Granted before, and is Granted as the window opens."""
        now = time.time()
        opens = (int(now) // 60 + 1) * 60
        if opens - now < 8:  # time to see it Pending first
            opens += 60
        local = time.gmtime(opens + 5 * 3600 + 1800)
        self.ndb("nightly", {**ON_TEST1, "maxDisruptedNodes": 1, "windows": [{
            "schedule": f"{local.tm_min} {local.tm_hour} * * *", "duration": "1h",
            "timeZone": "Asia/Kolkata"}]})
        ok, _ = eventually(lambda: self.ng.cache()["nodedisruptionbudgets"])
        self.assertTrue(ok, "the budget never reached nodegate's cache")
        self.nd("s06", {"nodeNames": ["node1"]})
        st, _ = self.wait_state("s06", "Pending")
        when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(opens))
        self.assertTrue(st.get("nextRetryDate", "").startswith(when), st)
        waiting = [c for c in st["conditions"] if c["type"] == "Granted"][0]
        self.assertIn(f"NodeDisruptionBudget nightly is outside its maintenance windows; the next opens at {when}",
                      waiting["message"])
        self.assertIn("Asia/Kolkata", waiting["message"])
        # The budget says the same: closed, nothing allowed now (no limit outside its windows),
        # and when the window opens; kubectl get prints the limit in force and the window.
        ok, _ = eventually(lambda: self.ndb_status("nightly").get("window", {}).get("state") == "Closed")
        self.assertTrue(ok, self.ndb_status("nightly"))
        bs = self.ndb_status("nightly")
        self.assertEqual((bs["maxDisruptedNodesNow"], bs["disruptionsAllowed"]), (0, 0), bs)
        self.assertTrue(bs["window"].get("nextOpensAt", "").startswith(when), bs)
        self.assertEqual(self.ndb_columns("nightly"), {"MAX": "0", "ALLOWED": "0", "WINDOW": "Closed"})
        while time.time() < opens - 0.2:
            self.assertEqual(self.status("s06").get("state"), "Pending", "granted before the window opened")
            time.sleep(0.2)
        st, _ = self.wait_state("s06", "Granted")
        granted = [c for c in st["conditions"] if c["type"] == "Granted"][0]["lastTransitionTime"]
        delay = time.time() - opens
        print(f"\n  window opened -> Granted seen {delay:.2f} s later (condition dated {granted})", file=sys.stderr)
        self.assertGreaterEqual(calendar.timegm(time.strptime(granted[:19], "%Y-%m-%dT%H:%M:%S")), opens - 1)
        # The budget's status turned at the opening: open, until an hour later, limit 1 in use.
        ok, _ = eventually(lambda: self.ndb_status("nightly").get("window", {}).get("state") == "Open")
        self.assertTrue(ok, self.ndb_status("nightly"))
        bs = self.ndb_status("nightly")
        closes = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(opens + 3600))
        self.assertTrue(bs["window"].get("closesAt", "").startswith(closes), bs)
        self.assertNotIn("nextOpensAt", bs["window"])
        ok, _ = eventually(lambda: self.ndb_columns("nightly") == {"MAX": "1", "ALLOWED": "0", "WINDOW": "Open"})
        self.assertTrue(ok, self.ndb_columns("nightly"))

    def test_S07_an_exclusion_holds_requests_until_it_ends(self):
        """S07: a budget in a maintenance exclusion (a sales week) holds back a request that would
        add its nodes: Pending without retry, the reason naming the end and the reason, the
        budget's status showing it and nothing allowed; granted as the exclusion ends."""
        def iso(t):
            return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + "Z"
        ends = int(time.time()) + 6
        self.ndb("sales", {**ON_TEST1, "maxDisruptedNodes": 2, "exclusions": [
            {"start": iso(ends - 3600), "end": iso(ends), "reason": "sales week"}]})
        ok, _ = eventually(lambda: self.ng.cache()["nodedisruptionbudgets"])
        self.assertTrue(ok, "the budget never reached nodegate's cache")
        self.nd("s07", {"nodeNames": ["node1"]})
        st, _ = self.wait_state("s07", "Pending")
        waiting = [c for c in st["conditions"] if c["type"] == "Granted"][0]
        self.assertEqual(waiting["message"], "NodeDisruptionBudget sales is in a maintenance exclusion until "
                         f"{iso(ends)[:-1]}.000Z (sales week)")
        ok, _ = eventually(lambda: self.ndb_status("sales").get("exclusion"))
        bs = self.ndb_status("sales")
        self.assertEqual(bs.get("exclusion"), {"until": f"{iso(ends)[:-1]}.000Z", "reason": "sales week"}, bs)
        self.assertEqual(bs["disruptionsAllowed"], 0)
        while time.time() < ends - 0.3:
            self.assertEqual(self.status("s07").get("state"), "Pending", "granted inside the exclusion")
            time.sleep(0.2)
        self.wait_state("s07", "Granted")
        print(f"\n  exclusion ended -> Granted {time.time() - ends:.2f} s later", file=sys.stderr)
        # Written again as it ended: no exclusion (a merge patch's null removes the field).
        ok, _ = eventually(lambda: self.ndb_status("sales").get("exclusion") is None)
        self.assertTrue(ok, self.ndb_status("sales"))

    def test_S08_a_paced_pool_spaces_its_grants(self):
        """S08: a rolling maintenance over a paced pool (two nodes, both allowed at once, but
        minIntervalSeconds 3): the first request is granted, the second waits Pending without
        retry naming the next grant's instant, which the budget's status shows too, and is
        granted then, at least the interval after the first (status.lastGrantAt written before)."""
        def ms(stamp):
            return calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S")) + float("0" + stamp[19:-1])
        self.ndb("paced", {**ON_TEST1, "maxDisruptedNodes": 2, "minIntervalSeconds": 3})
        ok, _ = eventually(lambda: self.ng.cache()["nodedisruptionbudgets"])
        self.assertTrue(ok, "the budget never reached nodegate's cache")
        self.nd("s08a", {"nodeNames": ["node1"]})
        first, _ = self.wait_state("s08a", "Granted")
        self.nd("s08b", {"nodeNames": ["node2"]})
        st, _ = self.wait_state("s08b", "Pending")
        waiting = [c for c in st["conditions"] if c["type"] == "Granted"][0]
        self.assertIn("NodeDisruptionBudget paced: paced, next grant at ", waiting["message"])
        self.assertTrue(waiting["message"].endswith("(minIntervalSeconds 3)"), waiting["message"])
        ok, _ = eventually(lambda: self.ndb_status("paced").get("nextGrantAt"))
        bs = self.ndb_status("paced")
        self.assertTrue(ok, bs)
        self.assertEqual(bs["disruptionsAllowed"], 0, bs)
        self.assertIn(bs["nextGrantAt"], waiting["message"])
        self.assertLessEqual(ms(bs["lastGrantAt"]), ms(first["grantedAt"]))
        second, _ = self.wait_state("s08b", "Granted")
        gap = ms(second["grantedAt"]) - ms(first["grantedAt"])
        print(f"\n  paced grants {gap:.2f} s apart (minIntervalSeconds 3)", file=sys.stderr)
        self.assertGreaterEqual(gap, 3.0)

    def test_S10_a_cluster_wide_exclusion_holds_every_request(self):
        """S10: the NodeGateConfig's exclusion (a freeze) holds back a request on a node no budget
        covers: Pending without retry, naming the freeze and its end; granted as it ends."""
        def iso(t):
            return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + "Z"
        ends = int(time.time()) + 5
        self.create(NGC_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig",
                               "metadata": {"name": "default"},
                               "spec": {"exclusions": [{"start": iso(ends - 600), "end": iso(ends),
                                                        "reason": "year-end freeze"}]}})
        ok, _ = eventually(lambda: self.ng.cache()["nodegateconfigs"])
        self.assertTrue(ok, "the NodeGateConfig never reached nodegate's cache")
        self.nd("s10", {"nodeNames": ["node3"]})
        st, _ = self.wait_state("s10", "Pending")
        waiting = [c for c in st["conditions"] if c["type"] == "Granted"][0]
        self.assertEqual(waiting["message"], "maintenance excluded by NodeGateConfig until "
                         f"{iso(ends)[:-1]}.000Z (year-end freeze)")
        while time.time() < ends - 0.3:
            self.assertEqual(self.status("s10").get("state"), "Pending", "granted inside the freeze")
            time.sleep(0.2)
        self.wait_state("s10", "Granted")
        print(f"\n  cluster-wide exclusion ended -> Granted {time.time() - ends:.2f} s later",
              file=sys.stderr)

    def test_S09_a_node_given_back_soaks_before_the_next_goes(self):
        """S09: a pool of two nodes that allows one disruption, soakSeconds 3: once the first
        request ends (node1 Ready and schedulable), node1 still counts for 3 s, so the request
        for node2 waits, naming the soak, and is granted when it ends."""
        self.ndb("soaked", {**ON_TEST1, "maxDisruptedNodes": 1, "soakSeconds": 3})
        ok, _ = eventually(lambda: self.ng.cache()["nodedisruptionbudgets"])
        self.assertTrue(ok, "the budget never reached nodegate's cache")
        self.nd("s09a", {"nodeNames": ["node1"]})
        self.wait_state("s09a", "Granted")
        code, body, _ = self.api.api("DELETE", f"{ND_PATH}/s09a")
        self.assertEqual(code, 200, body)
        ok, _ = eventually(lambda: self.api.api("GET", f"{ND_PATH}/s09a")[0] == 404)
        self.assertTrue(ok, "s09a was never released")
        ended = time.monotonic()
        self.nd("s09b", {"nodeNames": ["node2"], "retry": {"enabled": True}})
        st, _ = self.wait_state("s09b", "Pending")
        msg = [c for c in st["conditions"] if c["type"] == "Granted"][0]["message"]
        self.assertIn("1 soaking (soakSeconds), the first until ", msg)
        ok, _ = eventually(lambda: [n for n in self.ndb_status("soaked").get("soakingNodes") or []
                                    if n.get("name") == "node1" and n.get("until")])
        self.assertTrue(ok, self.ndb_status("soaked"))
        self.wait_state("s09b", "Granted")
        took = time.monotonic() - ended
        print(f"\n  the next node granted {took:.2f} s after the first was released (soakSeconds 3)",
              file=sys.stderr)
        self.assertGreaterEqual(took, 2.5)  # the soak ran from when the gate saw node1 back

    def ndb_status(self, name):
        code, body, _ = self.api.api("GET", f"{NDB_PATH}/{name}")
        self.assertEqual(code, 200, body)
        return body.get("status", {})

    def ndb_columns(self, name):
        """MAX, ALLOWED and WINDOW as `kubectl get ndb NAME` prints them."""
        cols = kubectl_rows(self.api, "nodedisruptionbudgets", name)[0]
        return {k: cols.get(k) for k in ("MAX", "ALLOWED", "WINDOW")}



def load_tests(loader, tests, pattern):
    """This file's scenarios only, not the gate's that WindowsTest inherits its helpers from."""
    return unittest.TestSuite(WindowsTest(n) for n in sorted(vars(WindowsTest)) if n.startswith("test_"))


if __name__ == "__main__":
    unittest.main()
