#!/usr/bin/env python3
"""bench/feed.py, the synthetic cluster B10 starts nodegate against: its lists page as the API
server's do, its WatchList stream sends every object then the end bookmark, --no-watchlist
refuses that form with 422, and what it does not synthesize reaches the real test API server
(a NodeDisruption created through it can be read back); node_name/node_pool/node_zone name
the nodes as it serves them, and --app-pods adds pods on chosen nodes. Behaviour only, no timing.
Env: NG_SOURCE_ROOT."""
import os
import sys
import unittest

ROOT = os.environ.get("NG_SOURCE_ROOT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import feed  # noqa: E402

NODES, PER = 30, 3
WATCHLIST = "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"


def page_all(f, path, limit):
    """[(list metadata, item names)] for every page of @path."""
    pages, cont = [], ""
    while True:
        code, body, _ = f.api("GET", f"{path}?limit={limit}" + (f"&continue={cont}" if cont else ""))
        assert code == 200, (code, body)
        pages.append((body, [i["metadata"]["name"] for i in body["items"]]))
        cont = body["metadata"].get("continue", "")
        if not cont:
            return pages


class FeedTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.feed = feed.Feed(NODES, PER, bookmark_seconds=0.2).start()

    @classmethod
    def tearDownClass(cls):
        cls.feed.stop()

    def test_lists_page_like_the_api_server(self):
        pages = page_all(self.feed, "/api/v1/pods", 40)
        self.assertEqual([len(n) for _, n in pages], [40, 40, 10])
        names = [x for _, n in pages for x in n]
        self.assertEqual(len(set(names)), NODES * PER)
        self.assertIn("node-00001-p0", names)
        self.assertIn(f"node-{NODES:05d}-p{PER - 1}", names)
        first = pages[0][0]
        self.assertEqual((first["kind"], first["apiVersion"]), ("PodList", "v1"))
        self.assertEqual(first["metadata"]["remainingItemCount"], NODES * PER - 40)
        self.assertNotIn("kind", first["items"][0], "items of a typed list carry no TypeMeta")
        self.assertEqual({b["metadata"]["resourceVersion"] for b, _ in pages}, {str(feed.RV)})
        self.assertNotIn("continue", pages[-1][0]["metadata"])
        nodes = page_all(self.feed, "/api/v1/nodes", 500)
        self.assertEqual(len(nodes), 1)
        self.assertEqual(len(nodes[0][1]), NODES)
        self.assertEqual(nodes[0][0]["items"][4]["metadata"]["labels"]["pool"], "pool-5")
        code, body, _ = self.feed.api("GET", "/api/v1/pods?limit=5&continue=bm90LWEtdG9rZW4")
        self.assertEqual(code, 410, body)

    def test_single_objects_and_refused_writes(self):
        code, body, _ = self.feed.api("GET", "/api/v1/namespaces/bench-1/pods/node-00002-p1")
        self.assertEqual(code, 200, body)
        self.assertEqual((body["kind"], body["spec"]["nodeName"]), ("Pod", "node-00002"))
        code, _, _ = self.feed.api("GET", "/api/v1/nodes/node-99999")
        self.assertEqual(code, 404)
        code, _, _ = self.feed.api("DELETE", "/api/v1/nodes/node-00001")
        self.assertEqual(code, 405)
        code, _, _ = self.feed.api("GET", "/api/v1/pods?labelSelector=app%3Dbench")
        self.assertEqual(code, 400, "a filtered list is refused, not answered unfiltered")
        code, _, _ = self.feed.api("GET", "/api/v1/namespaces/bench-1/pods")
        self.assertEqual(code, 400, "a namespace's list is refused, not answered empty by the upstream")

    def test_watchlist_sends_every_object_then_the_end_bookmark(self):
        w = self.feed.watch("/api/v1/pods" + WATCHLIST + "&timeoutSeconds=5")
        try:
            self.assertEqual(w.status, 200)
            evs = [w.next() for _ in range(NODES * PER + 2)]
        finally:
            w.close()
        added = evs[:NODES * PER]
        self.assertEqual({e["type"] for e in added}, {"ADDED"})
        self.assertEqual({e["object"]["kind"] for e in added}, {"Pod"})
        self.assertEqual(len({e["object"]["metadata"]["name"] for e in added}), NODES * PER)
        end = evs[NODES * PER]
        self.assertEqual(end["type"], "BOOKMARK")
        self.assertEqual(end["object"]["metadata"]["resourceVersion"], str(feed.RV))
        self.assertEqual(end["object"]["metadata"]["annotations"], {"k8s.io/initial-events-end": "true"})
        # the stream stays open as a watch: a plain bookmark follows
        self.assertEqual(evs[-1]["type"], "BOOKMARK")
        self.assertNotIn("annotations", evs[-1]["object"]["metadata"])

    def test_unauthenticated_is_refused(self):
        c = self.feed.connection()
        try:
            c.request("GET", "/api/v1/nodes")
            r = c.getresponse()
            r.read()
        finally:
            c.close()
        self.assertEqual(r.status, 401)

    def test_proxied_nodedisruption_create_and_get(self):
        nd = {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption", "metadata": {"name": "feed-nd"},
              "spec": {"nodeNames": ["node-00003"]}}
        code, body, _ = self.feed.api("POST", "/apis/nodegate.io/v1alpha1/nodedisruptions", nd)
        self.assertEqual(code, 201, body)
        code, body, _ = self.feed.api("GET", "/apis/nodegate.io/v1alpha1/nodedisruptions/feed-nd")
        self.assertEqual(code, 200, body)
        self.assertEqual(body["spec"]["nodeNames"], ["node-00003"])
        code, body, _ = self.feed.api("POST", "/apis/nodegate.io/v1alpha1/nodedisruptions",
                                      {**nd, "spec": {"nodeNames": []}})
        self.assertEqual(code, 422, "the upstream's validation answers through the feed")


class NoWatchListTest(unittest.TestCase):
    def test_sendinitialevents_is_refused_and_paging_still_works(self):
        with feed.Feed(5, 1, no_watchlist=True) as f:
            w = f.watch("/api/v1/nodes" + WATCHLIST)
            try:
                self.assertEqual(w.status, 422)
            finally:
                w.close()
            code, body, _ = f.api("GET", "/api/v1/nodes?limit=2")
            self.assertEqual(code, 200)
            self.assertEqual(body["metadata"]["remainingItemCount"], 3)


class HeartbeatTest(unittest.TestCase):
    def test_node_watch_brings_kubelet_heartbeats_node_after_node(self):
        with feed.Feed(3, 0, node_heartbeats=20, bookmark_seconds=0.5) as f:
            w = f.watch("/api/v1/nodes" + WATCHLIST + "&timeoutSeconds=5")
            try:
                evs = [w.next() for _ in range(3 + 1 + 8)]
            finally:
                w.close()
            later = [e for e in evs[4:] if e["type"] == "MODIFIED"]
            self.assertGreaterEqual(len(later), 6, [e["type"] for e in evs])
            names = [e["object"]["metadata"]["name"] for e in later]
            self.assertEqual(names[:4], ["node-00001", "node-00002", "node-00003", "node-00001"])
            rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in later]
            self.assertEqual(rvs, list(range(feed.RV + 1, feed.RV + 1 + len(rvs))))
            # nothing but the version changes: the labels are the listed node's
            self.assertEqual(later[0]["object"]["metadata"]["labels"], evs[0]["object"]["metadata"]["labels"])
            marks = [e for e in evs[4:] if e["type"] == "BOOKMARK"]
            for m in marks:  # a bookmark carries the version of the last heartbeat before it
                self.assertGreater(int(m["object"]["metadata"]["resourceVersion"]), feed.RV)


class NamesAndAppPodsTest(unittest.TestCase):
    def test_node_labels_as_named_and_app_pods_listed(self):
        app = [{"namespace": "default", "name": "db-0", "node": "node-00007", "labels": {"app": "db"}}]
        with feed.Feed(12, 1, app_pods=app) as f:
            code, body, _ = f.api("GET", "/api/v1/nodes")
            self.assertEqual(code, 200)
            for n in body["items"]:
                i = feed.node_index(n["metadata"]["name"])
                self.assertEqual(n["metadata"]["name"], feed.node_name(i))
                self.assertEqual(n["metadata"]["labels"][feed.POOL_LABEL], feed.node_pool(i))
                self.assertEqual(n["metadata"]["labels"][feed.ZONE_LABEL], feed.node_zone(i))
            self.assertEqual(len({n["metadata"]["labels"]["pool"] for n in body["items"]}), feed.POOLS)
            code, body, _ = f.api("GET", "/api/v1/pods")
            self.assertEqual(len(body["items"]), 13)
            db = [p for p in body["items"] if p["metadata"]["labels"].get("app") == "db"]
            self.assertEqual([(p["metadata"]["namespace"], p["spec"]["nodeName"]) for p in db],
                             [("default", "node-00007")])
            code, body, _ = f.api("GET", "/api/v1/namespaces/default/pods/db-0")
            self.assertEqual(code, 200, body)
            self.assertEqual((body["kind"], body["status"]["phase"]), ("Pod", "Running"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
