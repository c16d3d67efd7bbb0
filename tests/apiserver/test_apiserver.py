#!/usr/bin/env python3
"""Tests for the nodegate test API server (tests/apiserver/).

Run from the repository root:
    python3 -m unittest discover -s tests/apiserver -p 'test_*.py' -v
The 5,000-node / 150,000-pod pagination benchmark runs too (about 15 s); NG_BIG=0 skips it.
"""
import base64
import http.server
import json
import os
import signal
import ssl
import sys
import tempfile
import threading
import time
import unittest
from unittest import mock
import shutil

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ktestapi.testing import ServerProcess          # noqa: E402
from ktestapi import testing                        # noqa: E402
from ktestapi.certs import make_ca, make_leaf       # noqa: E402
from ktestapi import selection as selectors, patch, yamlish, ssa     # noqa: E402
from ktestapi.errors import APIError                # noqa: E402
from ktestapi.store import Store, Expired           # noqa: E402

# This suite sends what a real server refuses or drops on purpose; the audit has its own tests
# (AuditTest), which turn it on explicitly.
testing.AUDIT_DEFAULT = False

HERE = os.path.dirname(os.path.abspath(__file__))

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "nodedisruptions.nodegate.io"},
    "spec": {
        "group": "nodegate.io", "scope": "Cluster",
        "names": {"plural": "nodedisruptions", "singular": "nodedisruption", "kind": "NodeDisruption",
                  "shortNames": ["nd"], "categories": ["nodegate"]},
        "versions": [{
            "name": "v1alpha1", "served": True, "storage": True, "subresources": {"status": {}},
            "selectableFields": [{"jsonPath": ".spec.requestor"}],
            "additionalPrinterColumns": [
                {"name": "Nodes", "type": "integer", "jsonPath": ".spec.nodeCount"},
                {"name": "State", "type": "string", "jsonPath": ".status.state"},
                {"name": "Requestor", "type": "string", "jsonPath": ".spec.requestor"},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
                "spec": {"type": "object", "properties": {
                    "nodeNames": {"type": "array", "items": {"type": "string"}},
                    "nodeCount": {"type": "integer"},
                    "requestor": {"type": "string"},
                    "priority": {"type": "integer", "default": 0, "minimum": 0},
                    "type": {"type": "string", "enum": ["maintenance", "reboot"]}}},
                "status": {"type": "object", "properties": {"state": {"type": "string"}}}}}}}]}}

NS_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "applicationdisruptionbudgets.nodegate.io"},
    "spec": {
        "group": "nodegate.io", "scope": "Namespaced",
        "names": {"plural": "applicationdisruptionbudgets", "kind": "ApplicationDisruptionBudget",
                  "shortNames": ["adb"]},
        "versions": [{"name": "v1alpha1", "served": True, "storage": True, "subresources": {"status": {}},
                      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


def pod(name, node=None, labels=None, ns="default", owner=None):
    p = {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
         "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}
    if node:
        p["spec"]["nodeName"] = node
    if owner:
        p["metadata"]["ownerReferences"] = [owner]
    return p


def node(name, labels=None, ready=True):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


class ServerTestCase(unittest.TestCase):
    """One server per test class."""
    server_args = {}

    @classmethod
    def setUpClass(cls):
        cls.srv = ServerProcess(**cls.server_args)
        cls.srv.start()

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()

    def api(self, *a, **kw):
        return self.srv.api(*a, **kw)

    def ok(self, method, path, body=None, ctype="application/json", expect=(200, 201), **kw):
        code, out, resp = self.api(method, path, body, ctype, **kw)
        self.assertIn(code, expect, "%s %s -> %s %s" % (method, path, code, out))
        return out

    def kubectl(self, *args, **kw):
        return self.srv.kubectl(*args, **kw)

    def make_running(self, ns, name, ready=True):
        self.ok("PATCH", "/api/v1/namespaces/%s/pods/%s/status" % (ns, name),
                {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}},
                "application/merge-patch+json")

    def wait_for(self, fn, seconds=5.0, msg="condition"):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            v = fn()
            if v:
                return v
            time.sleep(0.05)
        self.fail("timed out waiting for " + msg)


# ---------------------------------------------------------------------------------- unit
class TestSelectorsUnit(unittest.TestCase):
    def test_label_selector_full_grammar(self):
        s = selectors.parse_label_selector("a=b,c!=d,e in (x,y),f notin (z),g,!h")
        self.assertTrue(s.matches({"a": "b", "e": "x", "g": ""}))
        self.assertFalse(s.matches({"a": "b", "e": "x", "g": "", "h": "1"}))
        self.assertFalse(s.matches({"a": "b", "c": "d", "e": "x", "g": ""}))
        self.assertFalse(s.matches({"a": "b", "e": "q", "g": ""}))
        self.assertFalse(s.matches({"a": "b", "e": "x", "f": "z", "g": ""}))
        self.assertFalse(s.matches({"a": "b", "e": "x"}))

    def test_label_selector_notin_matches_absent_key_and_double_equals(self):
        self.assertTrue(selectors.parse_label_selector("k notin (a)").matches({}))
        self.assertTrue(selectors.parse_label_selector("k==v").matches({"k": "v"}))
        self.assertTrue(selectors.parse_label_selector("k != v").matches({}))

    def test_label_selector_syntax_errors_are_400(self):
        for bad in ("a=b,", "in (x)", "a in x", "a=(b)", "-bad=1"):
            with self.assertRaises(APIError) as cm:
                selectors.parse_label_selector(bad)
            self.assertEqual(cm.exception.code, 400, bad)

    def test_label_selector_object_nil_matches_nothing_empty_everything(self):
        self.assertFalse(selectors.label_selector_from_obj(None).matches({"a": "b"}))
        self.assertTrue(selectors.label_selector_from_obj({}).matches({"a": "b"}))
        s = selectors.label_selector_from_obj({"matchLabels": {"a": "b"},
                                               "matchExpressions": [{"key": "c", "operator": "DoesNotExist"}]})
        self.assertTrue(s.matches({"a": "b"}))
        self.assertFalse(s.matches({"a": "b", "c": "1"}))


class TestPatchUnit(unittest.TestCase):
    def test_json_merge_patch_null_deletes(self):
        self.assertEqual(patch.merge_patch({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": 3}}),
                         {"a": {"c": 2, "d": 3}})

    def test_json_patch_ops_and_test_failure(self):
        doc = {"a": [1, 2], "b": {"c": 1}}
        out = patch.json_patch(doc, [{"op": "add", "path": "/a/-", "value": 3},
                                     {"op": "replace", "path": "/b/c", "value": 2},
                                     {"op": "move", "from": "/b/c", "path": "/d"},
                                     {"op": "copy", "from": "/d", "path": "/e"},
                                     {"op": "remove", "path": "/a/0"},
                                     {"op": "test", "path": "/e", "value": 2}])
        self.assertEqual(out, {"a": [2, 3], "b": {}, "d": 2, "e": 2})
        with self.assertRaises(patch.PatchError):
            patch.json_patch(doc, [{"op": "test", "path": "/a/0", "value": 9}])

    def test_strategic_merge_containers_by_name_and_patch_delete(self):
        orig = {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}],
                         "tolerations": [{"key": "t1"}]}}
        out = patch.strategic_merge(orig, {"spec": {"containers": [{"name": "b", "image": "z"},
                                                                   {"name": "a", "$patch": "delete"},
                                                                   {"name": "c", "image": "w"}],
                                                    "tolerations": [{"key": "t2"}]}})
        self.assertEqual(out["spec"]["containers"], [{"name": "b", "image": "z"}, {"name": "c", "image": "w"}])
        self.assertEqual(out["spec"]["tolerations"], [{"key": "t2"}])  # atomic list: replaced

    def test_strategic_merge_directives_retainkeys_replace_primitive_lists(self):
        orig = {"metadata": {"finalizers": ["a", "b"], "labels": {"x": "1", "y": "2"}},
                "spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}
        out = patch.strategic_merge(orig, {
            "metadata": {"$deleteFromPrimitiveList/finalizers": ["a"], "finalizers": ["c"],
                         "labels": {"$patch": "replace", "z": "3"}},
            "spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}})
        self.assertEqual(out["metadata"]["finalizers"], ["b", "c"])
        self.assertEqual(out["metadata"]["labels"], {"z": "3"})
        self.assertEqual(out["spec"]["strategy"], {"type": "Recreate"})

    def test_strategic_merge_is_415_for_custom_resources(self):
        with self.assertRaises(APIError) as cm:
            patch.apply_patch("application/strategic-merge-patch+json", {}, b"{}", True)
        self.assertEqual(cm.exception.code, 415)


class TestErrorsUnit(unittest.TestCase):
    def test_retry_after_comes_from_details(self):
        self.assertEqual(APIError(429, "TooManyRequests", "x", {"retryAfterSeconds": 5}).retry_after(), 5)
        for details in (None, {}, {"retryAfterSeconds": 0}, {"retryAfterSeconds": -1}, {"retryAfterSeconds": "5"},
                        {"retryAfterSeconds": True}, ["retryAfterSeconds"]):
            self.assertIsNone(APIError(429, "TooManyRequests", "x", details).retry_after(), details)

    def test_invalid_message_names_repeated_causes_once(self):
        from ktestapi.errors import invalid
        e = invalid("Thing", "g.io", "t", [("FieldValueRequired", "spec.a", "Required value"),
                                           ("FieldValueRequired", "spec.a", "Required value")])
        self.assertEqual(e.message, 'Thing.g.io "t" is invalid: spec.a: Required value')
        self.assertEqual(len(e.details["causes"]), 2)


class TestServerSideApplyUnit(unittest.TestCase):
    """ktestapi/ssa.py without a server: field sets, FieldsV1, merge, Update tracking, Apply."""
    DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {"app": "d"}},
              "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "d"}},
                       "template": {"spec": {"containers": [{"name": "c", "image": "i:1", "args": ["-v"],
                                                             "ports": [{"containerPort": 80}]}]}}}}

    def test_field_set_fieldsv1_and_paths_as_the_apiserver_writes_them(self):
        t = ssa.Types("apps/deployments")
        fs = ssa.field_set(self.DEPLOY, t)
        fv = ssa.fields_v1(ssa._tracked(fs, True, ""))
        self.assertEqual(fv, {
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {"f:replicas": {}, "f:selector": {}, "f:template": {"f:spec": {"f:containers": {
                'k:{"name":"c"}': {".": {}, "f:args": {}, "f:image": {}, "f:name": {}, "f:ports": {
                    'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}}}}}}}})
        self.assertEqual(ssa.paths_from_fields(fv), ssa._tracked(fs, True, ""))
        self.assertEqual(ssa.path_string((("f", "spec"), ("f", "containers"), ("k", '{"name":"c"}'),
                                          ("f", "image"))), '.spec.containers[name="c"].image')
        self.assertEqual(ssa.path_string((("f", "metadata"), ("f", "finalizers"), ("v", '"x"'))),
                         '.metadata.finalizers[="x"]')
        with self.assertRaises(ssa.SSAError):  # an associative-list item without its key
            ssa.field_set({"spec": {"containers": [{"image": "x"}]}}, ssa.Types("/pods"), strict=True)

    def test_merge_associative_lists_sets_and_atomic_values(self):
        t = ssa.Types("/pods")
        live = {"metadata": {"finalizers": ["a", "b"]},
                "spec": {"containers": [{"name": "x", "image": "1", "tty": True}, {"name": "y", "image": "2"}],
                         "tolerations": [{"key": "k"}]}}
        cfg = {"metadata": {"finalizers": ["c"]},
               "spec": {"containers": [{"name": "y", "image": "3"}, {"name": "z", "image": "4"}],
                        "tolerations": [{"key": "n"}]}}
        out = ssa.merge(live, cfg, t)
        self.assertEqual(out["metadata"]["finalizers"], ["a", "b", "c"])
        self.assertEqual(out["spec"]["containers"], [{"name": "x", "image": "1", "tty": True},
                                                     {"name": "y", "image": "3"}, {"name": "z", "image": "4"}])
        self.assertEqual(out["spec"]["tolerations"], [{"key": "n"}])    # atomic: replaced
        self.assertEqual(live["spec"]["containers"][1]["image"], "2")  # inputs untouched
        # custom resources: the CRD schema's list types; unannotated lists are atomic
        crt = ssa.Types("g/ws", {"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
            "plain": {"type": "array", "items": {"type": "string"}}}}}})
        out = ssa.merge({"spec": {"tags": ["a"], "ports": [{"name": "p", "port": 1}], "plain": ["a"]}},
                        {"spec": {"tags": ["b"], "ports": [{"name": "p", "x": 2}], "plain": ["b"]}}, crt)
        self.assertEqual(out["spec"], {"tags": ["a", "b"], "ports": [{"name": "p", "port": 1, "x": 2}], "plain": ["b"]})

    def test_update_tracking_moves_changed_fields_and_drops_removed_ones(self):
        t = ssa.Types("/configmaps")
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}}
        mf = ssa.track_update(t, None, cm, None, "creator", "v1", "", False, "T1", creating=True)
        self.assertEqual(mf, [{"manager": "creator", "operation": "Update", "apiVersion": "v1", "time": "T1",
                               "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}, "f:a": {}, "f:b": {}}}}])
        old = dict(cm, metadata={"name": "c", "managedFields": mf})
        new = dict(old, data={"a": "9"})
        mf2 = ssa.track_update(t, old, new, mf, "editor", "v1", "", False, "T2")
        self.assertEqual([(e["manager"], e["fieldsV1"]) for e in mf2],
                         [("creator", {"f:data": {}}), ("editor", {"f:data": {"f:a": {}}})])
        # an object created without managedFields stays untracked; [{}] resets them
        self.assertIsNone(ssa.track_update(t, cm, dict(cm, data={}), None, "x", "v1", "", False, "T3"))
        self.assertEqual(ssa.track_update(t, old, dict(old), [{}], "x", "v1", "", False, "T3"), [])

    def test_apply_prunes_what_the_applier_dropped_and_reports_conflicts(self):
        t = ssa.Types("/configmaps")
        cfg = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}}
        obj, mf, changed = ssa.apply(t, None, cfg, "one", False, "v1", "", False, "T1")
        self.assertEqual((obj["data"], changed), ({"a": "1", "b": "2"}, True))
        live = dict(obj, metadata={"name": "c", "managedFields": mf})
        # the same configuration again changes nothing
        obj2, mf2, changed = ssa.apply(t, live, cfg, "one", False, "v1", "", False, "T2")
        self.assertEqual((mf2, changed), (mf, False))
        # another manager: an equal value is shared, a different one conflicts unless forced
        two = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1", "b": "3"}}
        with self.assertRaises(ssa.Conflict) as cm:
            ssa.apply(t, live, two, "two", False, "v1", "", False, "T2")
        self.assertEqual(cm.exception.status(), (
            'Apply failed with 1 conflict: conflict with "one": .data.b',
            {"causes": [{"reason": "FieldManagerConflict", "message": 'conflict with "one"', "field": ".data.b"}]}))
        obj3, mf3, _ = ssa.apply(t, live, two, "two", True, "v1", "", False, "T3")
        self.assertEqual({e["manager"]: e["fieldsV1"] for e in mf3},
                         {"one": {"f:data": {"f:a": {}}}, "two": {"f:data": {"f:a": {}, "f:b": {}}}})
        live3 = dict(obj3, metadata={"name": "c", "managedFields": mf3})
        # "one" stops applying a (still owned by "two": kept) and b (no longer its own: kept)
        obj4, _, _ = ssa.apply(t, live3, dict(cfg, data={}), "one", False, "v1", "", False, "T4")
        self.assertEqual(obj4["data"], {"a": "1", "b": "3"})
        # "two" stops applying b, which only it owns: removed
        obj5, _, _ = ssa.apply(t, live3, dict(two, data={"a": "1"}), "two", False, "v1", "", False, "T5")
        self.assertEqual(obj5["data"], {"a": "1"})


class TestYamlAndStoreUnit(unittest.TestCase):
    def test_yaml_subset_parses_manifests(self):
        docs = yamlish.load_all("a: 1\nb:\n- x: 'q'\n  y: [1, \"2\"]\n- z\nc: |\n  l1\n  l2\n---\nd: {e: true}\n")
        self.assertEqual(docs, [{"a": 1, "b": [{"x": "q", "y": [1, "2"]}, "z"], "c": "l1\nl2\n"},
                                {"d": {"e": True}}])

    def test_store_events_since_expires_after_trim(self):
        st = Store(history_limit=10)
        for i in range(2000):
            with st.lock:
                rv = st.next_rv()
                st.commit("/x", "k%d" % i, {"metadata": {"name": "k%d" % i, "resourceVersion": str(rv)}}, "ADDED")
        with self.assertRaises(Expired):
            st.events_since(5)
        self.assertTrue(st.events_since(st.rv - 3))


# ---------------------------------------------------------------------------------- API
class TestAuthAndDiscovery(ServerTestCase):
    def test_requests_without_valid_token_get_401_status(self):
        code, body, _ = self.api("GET", "/api/v1/pods", user=None)
        self.assertEqual(code, 401)
        self.assertEqual((body["kind"], body["reason"], body["code"]), ("Status", "Unauthorized", 401))
        code, _, _ = self.api("GET", "/api/v1/pods", headers={"Authorization": "Bearer nope"}, user=None)
        self.assertEqual(code, 401)

    def test_kubeconfig_written_per_user(self):
        for f in ("kubeconfig", "kubeconfig-alice", "kubeconfig-sa-nodegate-nodegate", "kubeconfig-carol-cert"):
            self.assertTrue(os.path.exists(os.path.join(self.srv.state, f)), f)
        rc, out, err = self.kubectl("auth", "whoami", "-o", "json", user="system:serviceaccount:nodegate:nodegate")
        self.assertEqual(rc, 0, err)
        ui = json.loads(out)["status"]["userInfo"]
        self.assertEqual(ui["username"], "system:serviceaccount:nodegate:nodegate")
        self.assertEqual(ui["groups"], ["system:serviceaccounts", "system:serviceaccounts:nodegate", "system:authenticated"])

    def test_discovery_lists_subresources_like_the_real_server(self):
        rl = self.ok("GET", "/api/v1")
        names = {r["name"]: r for r in rl["resources"]}
        self.assertEqual(names["pods/eviction"]["group"], "policy")
        self.assertEqual(names["pods/eviction"]["kind"], "Eviction")
        self.assertEqual(names["pods/eviction"]["verbs"], ["create"])
        self.assertIn("pods/status", names)
        self.assertIn("nodes/status", names)
        self.assertEqual(names["pods"]["shortNames"], ["po"])
        groups = {g["name"] for g in self.ok("GET", "/apis")["groups"]}
        for g in ("apps", "batch", "policy", "coordination.k8s.io", "events.k8s.io", "rbac.authorization.k8s.io",
                  "admissionregistration.k8s.io", "apiextensions.k8s.io"):
            self.assertIn(g, groups)

    AGG = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"

    def test_aggregated_discovery_v2_lists_groups_resources_and_subresources(self):
        code, body, resp = self.api("GET", "/api", headers={"Accept": self.AGG})
        self.assertEqual(code, 200)
        self.assertEqual(resp.getheader("Content-Type"),
                         "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
        self.assertEqual(body["kind"], "APIGroupDiscoveryList")
        core = body["items"][0]
        self.assertEqual(core["metadata"]["name"], "")
        pods = [r for r in core["versions"][0]["resources"] if r["resource"] == "pods"][0]
        self.assertEqual((pods["scope"], pods["singularResource"], pods["shortNames"]), ("Namespaced", "pod", ["po"]))
        subs = {x["subresource"]: x for x in pods["subresources"]}
        self.assertEqual(subs["eviction"]["responseKind"], {"group": "policy", "version": "v1", "kind": "Eviction"})
        self.assertEqual(subs["eviction"]["verbs"], ["create"])
        code, body, _ = self.api("GET", "/apis", headers={"Accept": self.AGG})
        self.assertIn("apps", [g["metadata"]["name"] for g in body["items"]])

    def test_legacy_discovery_when_aggregated_discovery_is_off(self):
        with ServerProcess(extra_args=["--aggregated-discovery", "off"]) as srv:
            code, body, resp = srv.api("GET", "/apis", headers={"Accept": self.AGG})
            self.assertEqual((code, body["kind"], resp.getheader("Content-Type")),
                             (200, "APIGroupList", "application/json"))
            rc, out, err = srv.kubectl("get", "pods", "-A")  # kubectl falls back to the legacy documents
            self.assertEqual(rc, 0, err)

    def test_kubectl_api_resources_and_version(self):
        rc, out, err = self.kubectl("api-resources")
        self.assertEqual(rc, 0, err)
        self.assertIn("poddisruptionbudgets", out)
        rc, out, err = self.kubectl("version")
        self.assertEqual(rc, 0, err)
        self.assertIn("Server Version: v1.32", out)


class TestCrudSemantics(ServerTestCase):
    def test_create_sets_uid_rv_timestamp_and_duplicate_is_409_already_exists(self):
        out = self.ok("POST", "/api/v1/namespaces/default/configmaps",
                      {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1"}, "data": {"a": "b"}})
        md = out["metadata"]
        self.assertTrue(md["uid"] and md["resourceVersion"] and md["creationTimestamp"])
        code, body, _ = self.api("POST", "/api/v1/namespaces/default/configmaps",
                                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1"}})
        self.assertEqual((code, body["reason"]), (409, "AlreadyExists"))
        self.assertEqual(body["message"], 'configmaps "cm1" already exists')

    def test_get_missing_is_404_with_status_body(self):
        code, body, _ = self.api("GET", "/apis/apps/v1/namespaces/default/deployments/nope")
        self.assertEqual(code, 404)
        self.assertEqual(body["message"], 'deployments.apps "nope" not found')
        self.assertEqual(body["details"], {"name": "nope", "group": "apps", "kind": "deployments"})

    def test_resource_version_is_a_global_counter(self):
        a = self.ok("POST", "/api/v1/namespaces/default/secrets",
                    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1"}})
        b = self.ok("POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases",
                    {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l1"},
                     "spec": {"holderIdentity": "x", "leaseDurationSeconds": 15}})
        self.assertGreater(int(b["metadata"]["resourceVersion"]), int(a["metadata"]["resourceVersion"]))

    def test_stale_resource_version_put_is_409_conflict(self):
        lease = self.ok("POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases",
                        {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "occ"},
                         "spec": {"holderIdentity": "a"}})
        first = dict(lease, spec={"holderIdentity": "b"})
        self.ok("PUT", "/apis/coordination.k8s.io/v1/namespaces/default/leases/occ", first)
        second = dict(lease, spec={"holderIdentity": "c"})  # same (now stale) resourceVersion
        code, body, _ = self.api("PUT", "/apis/coordination.k8s.io/v1/namespaces/default/leases/occ", second)
        self.assertEqual((code, body["reason"]), (409, "Conflict"))
        self.assertEqual(body["message"], 'Operation cannot be fulfilled on leases.coordination.k8s.io "occ": the '
                         'object has been modified; please apply your changes to the latest version and try again')

    def test_stale_resource_version_in_patch_body_is_409(self):
        cm = self.ok("POST", "/api/v1/namespaces/default/configmaps",
                     {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pcm"}})
        self.ok("PATCH", "/api/v1/namespaces/default/configmaps/pcm", {"data": {"x": "1"}}, "application/merge-patch+json")
        code, body, _ = self.api("PATCH", "/api/v1/namespaces/default/configmaps/pcm",
                                 {"metadata": {"resourceVersion": cm["metadata"]["resourceVersion"]}, "data": {"x": "2"}},
                                 "application/merge-patch+json")
        self.assertEqual((code, body["reason"]), (409, "Conflict"))

    def test_noop_update_keeps_resource_version(self):
        cm = self.ok("POST", "/api/v1/namespaces/default/configmaps",
                     {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "noop"}, "data": {"a": "1"}})
        out = self.ok("PATCH", "/api/v1/namespaces/default/configmaps/noop", {"data": {"a": "1"}},
                      "application/merge-patch+json")
        self.assertEqual(out["metadata"]["resourceVersion"], cm["metadata"]["resourceVersion"])

    def test_generation_bumps_on_spec_change_only(self):
        d = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
             "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                      "template": {"metadata": {"labels": {"app": "web"}},
                                   "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
        out = self.ok("POST", "/apis/apps/v1/namespaces/default/deployments", d)
        self.assertEqual(out["metadata"]["generation"], 1)
        out = self.ok("PATCH", "/apis/apps/v1/namespaces/default/deployments/web", {"metadata": {"labels": {"x": "y"}}},
                      "application/merge-patch+json")
        self.assertEqual(out["metadata"]["generation"], 1)
        out = self.ok("PATCH", "/apis/apps/v1/namespaces/default/deployments/web", {"spec": {"replicas": 3}},
                      "application/merge-patch+json")
        self.assertEqual(out["metadata"]["generation"], 2)
        out = self.ok("PATCH", "/apis/apps/v1/namespaces/default/deployments/web/status",
                      {"status": {"readyReplicas": 3}}, "application/merge-patch+json")
        self.assertEqual(out["metadata"]["generation"], 2)
        self.assertEqual(out["status"]["readyReplicas"], 3)

    def test_invalid_objects_are_422(self):
        code, body, _ = self.api("POST", "/api/v1/namespaces/default/pods",
                                 {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "Bad_Name"},
                                  "spec": {"containers": [{"name": "c"}]}})
        self.assertEqual((code, body["reason"]), (422, "Invalid"))
        self.assertIn('metadata.name: Invalid value: "Bad_Name"', body["message"])
        self.assertIn("spec.containers[0].image: Required value", body["message"])
        code, body, _ = self.api("POST", "/api/v1/namespaces/default/configmaps",
                                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "labels": {"a": "-bad-"}}})
        self.assertEqual(code, 422)
        code, body, _ = self.api("POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
                                 {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p"},
                                  "spec": {"minAvailable": 1, "maxUnavailable": 1}})
        self.assertEqual(code, 422)

    def test_namespace_mismatch_is_400_and_missing_namespace_is_404(self):
        code, body, _ = self.api("POST", "/api/v1/namespaces/default/configmaps",
                                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "other"}})
        self.assertEqual(code, 400)
        code, body, _ = self.api("POST", "/api/v1/namespaces/nosuch/configmaps",
                                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
        self.assertEqual((code, body["message"]), (404, 'namespaces "nosuch" not found'))

    def test_a_missing_namespace_lists_and_watches_as_empty(self):
        # kube-apiserver lists a namespace that does not exist as empty (200, no items) and
        # watches it: nodegate lists medik8s-leases whether medik8s is installed or not. The
        # namespace created later, its objects arrive on that watch.
        out = self.ok("GET", "/apis/coordination.k8s.io/v1/namespaces/not-yet/leases")
        self.assertEqual((out["kind"], out["items"]), ("LeaseList", []))
        w = self.srv.watch("/apis/coordination.k8s.io/v1/namespaces/not-yet/leases?watch=1&resourceVersion=%s"
                           % out["metadata"]["resourceVersion"])
        try:
            self.ok("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": {"name": "not-yet"}})
            self.ok("POST", "/apis/coordination.k8s.io/v1/namespaces/not-yet/leases",
                    {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "node-a"},
                     "spec": {"holderIdentity": "x"}})
            ev = w.collect(1)
            self.assertEqual((ev[0]["type"], ev[0]["object"]["metadata"]["name"]), ("ADDED", "node-a"))
        finally:
            w.close()

    def test_pod_create_resets_status_and_status_subresource_ignores_spec(self):
        out = self.ok("POST", "/api/v1/namespaces/default/pods",
                      dict(pod("st1", "n1"), status={"phase": "Running"}))
        self.assertEqual(out["status"]["phase"], "Pending")
        out = self.ok("PATCH", "/api/v1/namespaces/default/pods/st1/status",
                      {"spec": {"nodeName": "other"}, "status": {"phase": "Running"}}, "application/merge-patch+json")
        self.assertEqual((out["spec"]["nodeName"], out["status"]["phase"]), ("n1", "Running"))
        out = self.ok("PATCH", "/api/v1/namespaces/default/pods/st1",
                      {"metadata": {"labels": {"a": "b"}}, "status": {"phase": "Failed"}}, "application/merge-patch+json")
        self.assertEqual(out["status"]["phase"], "Running")

    def test_typed_list_items_have_no_type_meta_but_custom_resource_items_do(self):
        self.ok("POST", "/api/v1/namespaces/default/configmaps",
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "tm"}})
        out = self.ok("GET", "/api/v1/namespaces/default/configmaps")
        self.assertEqual((out["kind"], out["apiVersion"]), ("ConfigMapList", "v1"))
        self.assertNotIn("kind", out["items"][0])
        one = self.ok("GET", "/api/v1/namespaces/default/configmaps/tm")
        self.assertEqual((one["kind"], one["apiVersion"]), ("ConfigMap", "v1"))

    def test_post_to_all_namespaces_path_is_405(self):
        code, body, _ = self.api("POST", "/api/v1/configmaps",
                                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
        self.assertEqual(code, 405)

    def test_create_with_resource_version_is_refused_like_etcd3_storage(self):
        code, body, _ = self.api("POST", "/api/v1/namespaces/default/configmaps",
                                 {"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "withrv", "resourceVersion": "5"}})
        self.assertEqual((code, body["reason"], body["message"]),
                         (500, "Unknown", "resourceVersion should not be set on objects to be created"))

    def test_unknown_top_level_fields_of_builtin_kinds_strict_warn_and_dropped(self):
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "unk"}, "bogus": 1}
        code, body, _ = self.api("POST", "/api/v1/namespaces/default/configmaps?fieldValidation=Strict", cm)
        self.assertEqual(code, 400)
        self.assertEqual(body["message"], 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict '
                         'decoding error: unknown field "bogus"')
        code, body, resp = self.api("POST", "/api/v1/namespaces/default/configmaps", cm)
        self.assertEqual(code, 201)
        self.assertNotIn("bogus", body)
        self.assertEqual(resp.getheader("Warning"), '299 - "unknown field \\"bogus\\""')

    def test_unknown_nested_and_metadata_fields_are_caught(self):
        p = pod("typo")
        p["spec"]["containers"][0]["imagee"] = "x"
        p["metadata"]["label"] = {"a": "b"}
        code, body, _ = self.api("POST", "/api/v1/namespaces/default/pods?fieldValidation=Strict", p)
        self.assertEqual(code, 400)
        self.assertIn('unknown field "spec.containers[0].imagee"', body["message"])
        self.assertIn('unknown field "metadata.label"', body["message"])
        self.ok("POST", "/api/v1/nodes", node("typo-node"))
        # kubectl patch sends no fieldValidation: the default (Warn) drops the field with a warning
        rc, out, err = self.kubectl("patch", "node", "typo-node", "-p", '{"spec":{"unschedulabel":true}}')
        self.assertEqual(rc, 0, err)
        self.assertIn('Warning: unknown field "spec.unschedulabel"', err)
        self.assertEqual(self.ok("GET", "/api/v1/nodes/typo-node")["spec"], {})

    def test_type_errors_are_400_and_bad_taints_are_422(self):
        self.ok("POST", "/api/v1/nodes", node("tt1"))
        code, body, _ = self.api("PATCH", "/api/v1/nodes/tt1", {"spec": {"unschedulable": "true"}},
                                 "application/merge-patch+json")
        self.assertEqual(code, 400)
        self.assertIn("json: cannot unmarshal string into Go struct field NodeSpec.spec.unschedulable of type bool",
                      body["message"])
        code, body, _ = self.api("PATCH", "/api/v1/nodes/tt1", {"metadata": {"labels": {"n": 1}}},
                                 "application/merge-patch+json")
        self.assertEqual(code, 400)
        code, body, _ = self.api("PATCH", "/api/v1/nodes/tt1",
                                 {"spec": {"taints": [{"key": "a", "effect": "Sometimes"}, {"key": "b"}]}},
                                 "application/merge-patch+json")
        self.assertEqual((code, body["reason"]), (422, "Invalid"))
        self.assertIn('spec.taints[0].effect: Unsupported value: "Sometimes"', body["message"])
        self.assertIn("spec.taints[1].effect: Required value", body["message"])

    def test_kubectl_apply_of_a_v1_list_file(self):
        lst = {"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "li1"}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "li2"},
             "rules": []}]}
        rc, out, err = self.srv.kubectl("apply", "-f", "-", input=json.dumps(lst))
        self.assertEqual(rc, 0, err)
        self.assertIn("clusterrole.rbac.authorization.k8s.io/li2 created", out)

    def test_network_policies_are_served_and_applied_like_other_kinds(self):
        np = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "np1"},
              "spec": {"podSelector": {"matchLabels": {"app": "x"}}, "policyTypes": ["Ingress"],
                       "ingress": [{"ports": [{"port": "web", "protocol": "TCP"}]}]}}
        rc, out, err = self.srv.kubectl("apply", "-f", "-", input=json.dumps(np))
        self.assertEqual(rc, 0, err)
        self.assertIn("networkpolicy.networking.k8s.io/np1 created", out)
        got = self.ok("GET", "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies/np1")
        self.assertEqual(got["spec"], np["spec"])
        rc, out, err = self.srv.kubectl("get", "netpol", "np1", "-o", "name")
        self.assertEqual((rc, out.strip()), (0, "networkpolicy.networking.k8s.io/np1"), err)
        code, body, _ = self.api("POST", "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies"
                                 "?fieldValidation=Strict", dict(np, metadata={"name": "np2"}, extra=1))
        self.assertEqual(code, 400, body)

    def test_generate_name(self):
        out = self.ok("POST", "/api/v1/namespaces/default/configmaps",
                      {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}})
        self.assertRegex(out["metadata"]["name"], r"^gen-[a-z0-9]{5}$")

    def test_dry_run_create_does_not_store(self):
        self.ok("POST", "/api/v1/namespaces/default/configmaps?dryRun=All",
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dry"}})
        code, _, _ = self.api("GET", "/api/v1/namespaces/default/configmaps/dry")
        self.assertEqual(code, 404)

    def test_events_v1_and_events_k8s_io_share_storage(self):
        self.ok("POST", "/apis/events.k8s.io/v1/namespaces/default/events", {
            "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "ev1"},
            "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "nodegate.io/gate",
            "reportingInstance": "gate-1", "action": "Grant", "reason": "Granted", "type": "Normal",
            "note": "granted", "regarding": {"kind": "Node", "name": "node1"}})
        core = self.ok("GET", "/api/v1/namespaces/default/events/ev1")
        self.assertEqual((core["message"], core["involvedObject"]["name"], core["reportingComponent"]),
                         ("granted", "node1", "nodegate.io/gate"))
        ev = self.ok("GET", "/apis/events.k8s.io/v1/namespaces/default/events/ev1")
        self.assertEqual((ev["note"], ev["regarding"]["name"]), ("granted", "node1"))


class TestFinalizersAndDeletion(ServerTestCase):
    def test_delete_waits_for_finalizers(self):
        self.ok("POST", "/api/v1/namespaces/default/configmaps",
                {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "fin", "finalizers": ["nodegate.io/hold"]}})
        out = self.ok("DELETE", "/api/v1/namespaces/default/configmaps/fin")
        self.assertTrue(out["metadata"]["deletionTimestamp"])
        got = self.ok("GET", "/api/v1/namespaces/default/configmaps/fin")
        self.assertTrue(got["metadata"]["deletionTimestamp"])
        code, body, _ = self.api("PATCH", "/api/v1/namespaces/default/configmaps/fin",
                                 {"metadata": {"finalizers": ["nodegate.io/hold", "nodegate.io/more"]}},
                                 "application/merge-patch+json")
        self.assertEqual(code, 422)
        self.assertIn("no new finalizers can be added if the object is being deleted", body["message"])
        w = self.srv.watch("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=%s&fieldSelector=metadata.name%%3Dfin"
                           % got["metadata"]["resourceVersion"])
        self.ok("PATCH", "/api/v1/namespaces/default/configmaps/fin", {"metadata": {"finalizers": None}},
                "application/merge-patch+json")
        ev = w.collect(1)
        w.close()
        self.assertEqual(ev[0]["type"], "DELETED")
        code, _, _ = self.api("GET", "/api/v1/namespaces/default/configmaps/fin")
        self.assertEqual(code, 404)

    def test_delete_precondition_uid_mismatch_is_409(self):
        self.ok("POST", "/api/v1/namespaces/default/configmaps",
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pre"}})
        code, body, _ = self.api("DELETE", "/api/v1/namespaces/default/configmaps/pre",
                                 {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": "nope"}})
        self.assertEqual(code, 409)
        self.assertIn("Precondition failed: UID in precondition: nope", body["message"])

    def test_namespace_deletion_removes_contents(self):
        self.ok("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gone"}})
        self.ok("POST", "/api/v1/namespaces/gone/configmaps",
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
        self.ok("DELETE", "/api/v1/namespaces/gone")
        self.wait_for(lambda: self.api("GET", "/api/v1/namespaces/gone")[0] == 404, msg="namespace gone")
        self.assertEqual(self.api("GET", "/api/v1/namespaces/gone/configmaps/x")[0], 404)


class TestGarbageCollection(ServerTestCase):
    def owner_and_pods(self, name):
        rs = self.ok("POST", "/apis/apps/v1/namespaces/default/replicasets", {
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
        ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name, "uid": rs["metadata"]["uid"],
               "controller": True, "blockOwnerDeletion": True}
        for i in range(2):
            self.ok("POST", "/api/v1/namespaces/default/pods", pod("%s-%d" % (name, i), labels={"app": name}, owner=ref))
        return rs

    def pods_of(self, name):
        return self.ok("GET", "/api/v1/namespaces/default/pods?labelSelector=app%3D" + name)["items"]

    def test_background_deletion_removes_dependents(self):
        self.owner_and_pods("gcb")
        rc, out, err = self.kubectl("delete", "replicaset", "gcb")
        self.assertEqual(rc, 0, err)
        self.wait_for(lambda: not self.pods_of("gcb"), msg="dependents deleted")

    def test_orphan_deletion_keeps_dependents_without_owner_reference(self):
        self.owner_and_pods("gco")
        rc, out, err = self.kubectl("delete", "replicaset", "gco", "--cascade=orphan")
        self.assertEqual(rc, 0, err)
        self.wait_for(lambda: self.api("GET", "/apis/apps/v1/namespaces/default/replicasets/gco")[0] == 404,
                      msg="owner gone")
        pods = self.pods_of("gco")
        self.assertEqual(len(pods), 2)
        self.assertTrue(all("ownerReferences" not in p["metadata"] for p in pods))

    def test_foreground_deletion_waits_for_dependents(self):
        self.owner_and_pods("gcf")
        code, out, _ = self.api("DELETE", "/apis/apps/v1/namespaces/default/replicasets/gcf",
                                {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"})
        self.assertEqual(code, 200)
        self.assertIn("foregroundDeletion", out["metadata"]["finalizers"])
        self.wait_for(lambda: self.api("GET", "/apis/apps/v1/namespaces/default/replicasets/gcf")[0] == 404,
                      msg="owner gone after dependents")
        self.assertEqual(self.pods_of("gcf"), [])


class TestGracefulPodDeletion(ServerTestCase):
    server_args = {"kubelet": "grace"}

    def test_grace_mode_keeps_terminating_pod_until_grace_period_ends(self):
        p = pod("g1", "n1")
        p["spec"]["terminationGracePeriodSeconds"] = 1
        self.ok("POST", "/api/v1/namespaces/default/pods", p)
        self.make_running("default", "g1")
        out = self.ok("DELETE", "/api/v1/namespaces/default/pods/g1")
        self.assertEqual(out["metadata"]["deletionGracePeriodSeconds"], 1)
        self.assertEqual(self.api("GET", "/api/v1/namespaces/default/pods/g1")[0], 200)
        self.wait_for(lambda: self.api("GET", "/api/v1/namespaces/default/pods/g1")[0] == 404, 5, "pod removal")

    def test_unscheduled_pod_is_deleted_at_once(self):
        self.ok("POST", "/api/v1/namespaces/default/pods", pod("g2"))
        self.ok("DELETE", "/api/v1/namespaces/default/pods/g2")
        self.assertEqual(self.api("GET", "/api/v1/namespaces/default/pods/g2")[0], 404)

    def running(self, name, grace=30, finalizers=None):
        p = pod(name, "n1")
        p["spec"]["terminationGracePeriodSeconds"] = grace
        if finalizers:
            p["metadata"]["finalizers"] = finalizers
        created = self.ok("POST", "/api/v1/namespaces/default/pods", p)
        self.make_running("default", name)
        return created

    def watch_pod(self, name):
        rv = self.ok("GET", "/api/v1/namespaces/default/pods/" + name)["metadata"]["resourceVersion"]
        return self.srv.watch("/api/v1/namespaces/default/pods?watch=1&resourceVersion=%s"
                              "&fieldSelector=metadata.name%%3D%s" % (rv, name))

    def test_each_pod_goes_when_its_own_grace_period_ends(self):
        # The stand-in removes a pod at its deadline, as a kubelet does once the containers have
        # exited: a pod deleted later with a shorter grace period goes first, and none goes
        # before its grace period is over.
        self.running("gdl-late", grace=2)
        self.running("gdl-early", grace=1)
        rv = self.ok("GET", "/api/v1/namespaces/default/pods")["metadata"]["resourceVersion"]
        w = self.srv.watch("/api/v1/namespaces/default/pods?watch=1&resourceVersion=%s" % rv)
        asked = {}
        for name in ("gdl-late", "gdl-early"):
            asked[name] = time.monotonic()
            self.ok("DELETE", "/api/v1/namespaces/default/pods/" + name)
        gone = []
        while len(gone) < 2:
            ev = w.next()
            self.assertIsNotNone(ev, "the watch ended before both pods were removed")
            if ev["type"] == "DELETED":
                gone.append((ev["object"]["metadata"]["name"], time.monotonic()))
        w.close()
        self.assertEqual([n for n, _ in gone], ["gdl-early", "gdl-late"])
        grace = {"gdl-late": 2, "gdl-early": 1}
        for name, t in gone:
            self.assertGreaterEqual(t - asked[name], grace[name], name + " went before its grace period ended")

    def test_grace_period_zero_removes_the_pod_at_once_after_writing_the_deletion(self):
        self.running("g0")
        w = self.watch_pod("g0")
        out = self.ok("DELETE", "/api/v1/namespaces/default/pods/g0?gracePeriodSeconds=0")
        # the response is the deleted pod, as the graceful strategy last wrote it
        self.assertEqual(out["kind"], "Pod")
        self.assertEqual(out["metadata"]["deletionGracePeriodSeconds"], 0)
        self.assertTrue(out["metadata"]["deletionTimestamp"])
        self.assertEqual(self.api("GET", "/api/v1/namespaces/default/pods/g0")[0], 404)
        evs = w.collect(2)
        w.close()
        self.assertEqual([e["type"] for e in evs], ["MODIFIED", "DELETED"])
        self.assertEqual(evs[0]["object"]["metadata"]["deletionGracePeriodSeconds"], 0)
        # DeleteOptions in the body (kubectl delete --grace-period=0 --force) do the same
        self.running("g0b")
        self.ok("DELETE", "/api/v1/namespaces/default/pods/g0b",
                {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
        self.assertEqual(self.api("GET", "/api/v1/namespaces/default/pods/g0b")[0], 404)

    def test_only_a_shorter_grace_period_changes_a_terminating_pod(self):
        self.running("gs")
        out = self.ok("DELETE", "/api/v1/namespaces/default/pods/gs")
        self.assertEqual(out["metadata"]["deletionGracePeriodSeconds"], 30)
        # a longer one, or none, leaves the deletion as it is
        again = self.ok("DELETE", "/api/v1/namespaces/default/pods/gs?gracePeriodSeconds=60")
        self.assertEqual(again["metadata"]["deletionGracePeriodSeconds"], 30)
        self.assertEqual(again["metadata"]["resourceVersion"], out["metadata"]["resourceVersion"])
        short = self.ok("DELETE", "/api/v1/namespaces/default/pods/gs?gracePeriodSeconds=1")
        self.assertEqual(short["metadata"]["deletionGracePeriodSeconds"], 1)
        self.assertLess(short["metadata"]["deletionTimestamp"], out["metadata"]["deletionTimestamp"])
        self.wait_for(lambda: self.api("GET", "/api/v1/namespaces/default/pods/gs")[0] == 404, 5, "pod removal")
        # 0 on a terminating pod finishes it at once
        self.running("gs0")
        self.ok("DELETE", "/api/v1/namespaces/default/pods/gs0")
        self.ok("DELETE", "/api/v1/namespaces/default/pods/gs0?gracePeriodSeconds=0")
        self.assertEqual(self.api("GET", "/api/v1/namespaces/default/pods/gs0")[0], 404)

    def test_negative_grace_period_means_one_second(self):
        self.running("gneg")
        out = self.ok("DELETE", "/api/v1/namespaces/default/pods/gneg?gracePeriodSeconds=-5")
        self.assertEqual(out["metadata"]["deletionGracePeriodSeconds"], 1)
        self.wait_for(lambda: self.api("GET", "/api/v1/namespaces/default/pods/gneg")[0] == 404, 5, "pod removal")

    def test_evicted_pod_waits_out_its_grace_period(self):
        self.running("gev", grace=1)
        code, body, _ = self.api("POST", "/api/v1/namespaces/default/pods/gev/eviction",
                                 {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "gev"}})
        self.assertEqual(code, 201, body)
        got = self.ok("GET", "/api/v1/namespaces/default/pods/gev")
        self.assertEqual(got["metadata"]["deletionGracePeriodSeconds"], 1)
        self.wait_for(lambda: self.api("GET", "/api/v1/namespaces/default/pods/gev")[0] == 404, 5, "pod removal")
        # deleteOptions.gracePeriodSeconds of the Eviction applies
        self.running("gev0")
        code, body, _ = self.api("POST", "/api/v1/namespaces/default/pods/gev0/eviction",
                                 {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "gev0"},
                                  "deleteOptions": {"gracePeriodSeconds": 0}})
        self.assertEqual(code, 201, body)
        self.assertEqual(self.api("GET", "/api/v1/namespaces/default/pods/gev0")[0], 404)

    def test_finalizers_hold_the_pod_after_the_kubelet_is_done(self):
        self.running("gfin", grace=1, finalizers=["nodegate.io/hold"])
        self.ok("DELETE", "/api/v1/namespaces/default/pods/gfin")
        got = self.wait_for(lambda: (lambda o: o if o["metadata"]["deletionGracePeriodSeconds"] == 0 else None)(
            self.ok("GET", "/api/v1/namespaces/default/pods/gfin")), 5, "grace period 0")
        self.assertEqual(got["metadata"]["finalizers"], ["nodegate.io/hold"])
        self.ok("PATCH", "/api/v1/namespaces/default/pods/gfin", {"metadata": {"finalizers": None}},
                "application/merge-patch+json")
        self.assertEqual(self.api("GET", "/api/v1/namespaces/default/pods/gfin")[0], 404)

    def test_switching_to_immediate_finishes_pods_waiting_out_their_grace(self):
        self.running("gsw")
        self.ok("DELETE", "/api/v1/namespaces/default/pods/gsw")
        self.assertEqual(self.api("GET", "/api/v1/namespaces/default/pods/gsw")[0], 200)
        try:
            self.assertEqual(self.srv.control("kubelet", {"mode": "immediate"})[0], 200)
            self.assertEqual(self.api("GET", "/api/v1/namespaces/default/pods/gsw")[0], 404)
            self.running("gsw2")
            self.ok("DELETE", "/api/v1/namespaces/default/pods/gsw2")
            self.assertEqual(self.api("GET", "/api/v1/namespaces/default/pods/gsw2")[0], 404)
        finally:
            self.srv.control("kubelet", {"mode": "grace"})
        self.assertEqual(self.srv.control("kubelet", {"mode": "slow"})[0], 400)


class TestImmediateKubelet(ServerTestCase):
    def test_graceful_deletion_is_finished_by_the_kubelet_at_once(self):
        p = pod("k1", "n1")
        self.ok("POST", "/api/v1/namespaces/default/pods", p)
        self.make_running("default", "k1")
        rv = self.ok("GET", "/api/v1/namespaces/default/pods/k1")["metadata"]["resourceVersion"]
        w = self.srv.watch("/api/v1/namespaces/default/pods?watch=1&resourceVersion=%s" % rv)
        out = self.ok("DELETE", "/api/v1/namespaces/default/pods/k1")
        self.assertEqual(out["metadata"]["deletionGracePeriodSeconds"], 30)
        self.assertEqual(self.api("GET", "/api/v1/namespaces/default/pods/k1")[0], 404)
        evs = w.collect(3)
        w.close()
        self.assertEqual([(e["type"], e["object"]["metadata"]["deletionGracePeriodSeconds"]) for e in evs],
                         [("MODIFIED", 30), ("MODIFIED", 0), ("DELETED", 0)])
        rc, out, err = self.kubectl("get", "pods", "-A")
        self.assertNotIn("k1", out)


class TestVolumeAttachments(ServerTestCase):
    VA = "/apis/storage.k8s.io/v1/volumeattachments"

    def va(self, name, node="n1", pv="pv-1", attacher="csi.example.com", **extra):
        o = {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": name},
             "spec": {"attacher": attacher, "nodeName": node, "source": {"persistentVolumeName": pv}}}
        o.update(extra)
        return o

    def test_crud_status_subresource_and_watch(self):
        created = self.ok("POST", self.VA, self.va("va-crud", status={"attached": True}))
        self.assertEqual(created["status"], {})          # create resets status
        self.assertNotIn("generation", created["metadata"])
        w = self.srv.watch(self.VA + "?watch=1&resourceVersion=" + created["metadata"]["resourceVersion"])
        st = self.ok("PATCH", self.VA + "/va-crud/status",
                     {"spec": {"nodeName": "other"}, "status": {"attached": True, "attachmentMetadata": {"dev": "/x"}}},
                     "application/merge-patch+json")
        self.assertEqual(st["status"], {"attached": True, "attachmentMetadata": {"dev": "/x"}})
        self.assertEqual(st["spec"]["nodeName"], "n1")   # /status changes only the status
        got = self.ok("GET", self.VA + "/va-crud")
        got["metadata"]["labels"] = {"a": "b"}
        got["status"] = {"attached": False}
        put = self.ok("PUT", self.VA + "/va-crud", got)
        self.assertEqual((put["metadata"]["labels"], put["status"]["attached"]), ({"a": "b"}, True))
        listed = self.ok("GET", self.VA)
        self.assertEqual(listed["kind"], "VolumeAttachmentList")
        self.assertIn("va-crud", [i["metadata"]["name"] for i in listed["items"]])
        gone = self.ok("DELETE", self.VA + "/va-crud")
        self.assertEqual((gone["kind"], gone["metadata"]["name"]), ("VolumeAttachment", "va-crud"))  # the object
        evs = w.collect(3)
        w.close()
        self.assertEqual([e["type"] for e in evs], ["MODIFIED", "MODIFIED", "DELETED"])
        self.assertEqual(self.api("GET", self.VA + "/va-crud")[0], 404)

    def test_finalizer_keeps_it_until_the_attacher_lets_go(self):
        self.ok("POST", self.VA, self.va("va-fin", metadata={"name": "va-fin",
                                                             "finalizers": ["external-attacher/csi-example-com"]}))
        out = self.ok("DELETE", self.VA + "/va-fin")
        self.assertTrue(out["metadata"]["deletionTimestamp"])
        self.assertEqual(self.api("GET", self.VA + "/va-fin")[0], 200)
        self.ok("PATCH", self.VA + "/va-fin", {"metadata": {"finalizers": None}}, "application/merge-patch+json")
        self.assertEqual(self.api("GET", self.VA + "/va-fin")[0], 404)

    def test_validation_messages_are_the_real_ones(self):
        subdomain = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                     "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
                     "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
        o = self.va("va-bad")
        o["spec"] = {"source": {}}
        code, body, _ = self.api("POST", self.VA, o)
        self.assertEqual((code, body["reason"]), (422, "Invalid"))
        self.assertEqual(body["message"], 'VolumeAttachment.storage.k8s.io "va-bad" is invalid: ['
                         'spec.attacher: Required value, '
                         'spec.source: Required value: must specify exactly one of inlineVolumeSpec and '
                         'persistentVolumeName, '
                         'spec.nodeName: Invalid value: "": ' + subdomain + ', '
                         'spec.attacher: Invalid value: "": ' + subdomain + ']')
        causes = [(c["reason"], c["field"]) for c in body["details"]["causes"]]
        # the attacher is checked twice (ValidateVolumeAttachment and ...V1); the message names it once
        self.assertEqual(causes, [("FieldValueRequired", "spec.attacher"), ("FieldValueRequired", "spec.source"),
                                  ("FieldValueInvalid", "spec.nodeName"), ("FieldValueRequired", "spec.attacher"),
                                  ("FieldValueInvalid", "spec.attacher")])
        self.assertEqual(body["details"]["kind"], "VolumeAttachment")
        self.assertEqual(body["details"]["group"], "storage.k8s.io")
        both = self.va("va-both")
        both["spec"]["source"]["inlineVolumeSpec"] = {"csi": {"driver": "csi.example.com", "volumeHandle": "h"},
                                                      "accessModes": ["ReadWriteOnce"]}
        code, body, _ = self.api("POST", self.VA, both)
        self.assertEqual(body["message"], 'VolumeAttachment.storage.k8s.io "va-both" is invalid: spec.source: '
                         'Forbidden: must specify exactly one of inlineVolumeSpec and persistentVolumeName')
        code, body, _ = self.api("POST", self.VA, self.va("va-pv", pv=""))
        self.assertEqual(body["message"], 'VolumeAttachment.storage.k8s.io "va-pv" is invalid: ['
                         'spec.source.persistentVolumeName: Required value: must specify non empty '
                         'persistentVolumeName, spec.source.persistentVolumeName: Invalid value: "": ' + subdomain + ']')
        code, body, _ = self.api("POST", self.VA, self.va("va-att", attacher="CSI_Driver"))
        self.assertEqual(body["message"], 'VolumeAttachment.storage.k8s.io "va-att" is invalid: spec.attacher: '
                         'Invalid value: "CSI_Driver": ' + subdomain)
        inline = self.va("va-inline")
        inline["spec"]["source"] = {"inlineVolumeSpec": {"capacity": {"storage": "1Gi"}}}
        code, body, _ = self.api("POST", self.VA, inline)
        self.assertEqual([c["field"] for c in body["details"]["causes"]],
                         ["spec.source.inlineVolumeSpec.capacity", "spec.source.inlineVolumeSpec.csi",
                          "spec.source.inlineVolumeSpec.accessModes"])
        inline["spec"]["source"] = {"inlineVolumeSpec": {"csi": {"driver": "csi.example.com", "volumeHandle": "h"},
                                                         "accessModes": ["ReadWriteOnce"]}}
        self.ok("POST", self.VA, inline)
        self.ok("POST", self.VA, self.va("va-ok"))
        # the spec is immutable
        code, body, _ = self.api("PATCH", self.VA + "/va-ok", {"spec": {"nodeName": "n2"}}, "application/merge-patch+json")
        self.assertEqual((code, body["details"]["causes"][-1]["field"]), (422, "spec"))
        self.assertTrue(body["message"].startswith('VolumeAttachment.storage.k8s.io "va-ok" is invalid: spec: Invalid '
                                                   'value: storage.VolumeAttachmentSpec{Attacher:"csi.example.com", '
                                                   'Source:storage.VolumeAttachmentSource{PersistentVolumeName:(*string)('),
                        body["message"])
        self.assertTrue(body["message"].endswith('NodeName:"n2"}: field is immutable'), body["message"])

    def test_field_selector_is_metadata_only(self):
        self.ok("POST", self.VA, self.va("va-fs1", node="n1"))
        self.ok("POST", self.VA, self.va("va-fs2", node="n2"))
        code, body, _ = self.api("GET", self.VA + "?fieldSelector=spec.nodeName%3Dn1")
        self.assertEqual((code, body["reason"]), (400, "BadRequest"))
        self.assertEqual(body["message"], '"spec.nodeName" is not a known field selector: only "metadata.name", '
                         '"metadata.namespace"')
        items = self.ok("GET", self.VA + "?fieldSelector=metadata.name%3Dva-fs2")["items"]
        self.assertEqual([i["metadata"]["name"] for i in items], ["va-fs2"])
        code, _, _ = self.api("GET", self.VA + "?watch=1&fieldSelector=spec.nodeName%3Dn1")
        self.assertEqual(code, 400)

    def test_unknown_and_mistyped_fields(self):
        o = self.va("va-strict")
        o["spec"]["nodename"] = "n1"
        code, body, _ = self.api("POST", self.VA + "?fieldValidation=Strict", o)
        self.assertEqual(code, 400)
        self.assertIn('strict decoding error: unknown field "spec.nodename"', body["message"])
        o = self.va("va-type")
        o["spec"]["nodeName"] = 7
        code, body, _ = self.api("POST", self.VA, o)
        self.assertEqual(body["message"], 'VolumeAttachment in version "v1" cannot be handled as a VolumeAttachment: '
                         'json: cannot unmarshal number into Go struct field VolumeAttachmentSpec.spec.nodeName of '
                         'type string')

    def test_discovery_legacy_and_aggregated(self):
        names = {r["name"]: r for r in self.ok("GET", "/apis/storage.k8s.io/v1")["resources"]}
        va = names["volumeattachments"]
        self.assertEqual((va["kind"], va["namespaced"], va["singularName"]), ("VolumeAttachment", False, "volumeattachment"))
        self.assertNotIn("shortNames", va)
        self.assertEqual(sorted(va["verbs"]), sorted(["create", "delete", "deletecollection", "get", "list", "patch",
                                                      "update", "watch"]))
        self.assertEqual(names["volumeattachments/status"]["verbs"], ["get", "patch", "update"])
        body = self.ok("GET", "/apis", headers={"Accept": TestAuthAndDiscovery.AGG})
        storage = [g for g in body["items"] if g["metadata"]["name"] == "storage.k8s.io"][0]
        r = [x for x in storage["versions"][0]["resources"] if x["resource"] == "volumeattachments"][0]
        self.assertEqual((r["scope"], r["singularResource"], r["responseKind"]["kind"]),
                         ("Cluster", "volumeattachment", "VolumeAttachment"))
        self.assertNotIn("shortNames", r)
        self.assertEqual([s["subresource"] for s in r["subresources"]], ["status"])

    def test_rbac_resource_name(self):
        code, body, _ = self.api("GET", self.VA, user="bob")
        self.assertEqual(code, 403)
        self.assertEqual(body["message"], 'volumeattachments.storage.k8s.io is forbidden: User "bob" cannot list '
                         'resource "volumeattachments" in API group "storage.k8s.io" at the cluster scope')
        rbac = "/apis/rbac.authorization.k8s.io/v1/"
        self.ok("POST", rbac + "clusterroles", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "va-reader"},
            "rules": [{"apiGroups": ["storage.k8s.io"], "resources": ["volumeattachments"],
                       "verbs": ["get", "list", "watch"]}]})
        self.ok("POST", rbac + "clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "va-reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "va-reader"},
            "subjects": [{"kind": "User", "name": "bob"}]})
        self.assertEqual(self.api("GET", self.VA, user="bob")[0], 200)
        code, body, _ = self.api("PATCH", self.VA + "/x/status", {"status": {}}, "application/merge-patch+json",
                                 user="bob")
        self.assertEqual(code, 403)
        self.assertIn('cannot patch resource "volumeattachments/status"', body["message"])

    def test_kubectl_get_volumeattachments(self):
        self.ok("POST", self.VA, self.va("va-kctl", node="node-7", pv="pv-kctl"))
        self.ok("PATCH", self.VA + "/va-kctl/status", {"status": {"attached": True}}, "application/merge-patch+json")
        rc, out, err = self.kubectl("get", "volumeattachments")
        self.assertEqual(rc, 0, err)
        lines = out.splitlines()
        self.assertEqual(lines[0].split(), ["NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE"])
        row = [l.split() for l in lines if l.startswith("va-kctl ")][0]
        self.assertEqual(row[:5], ["va-kctl", "csi.example.com", "pv-kctl", "node-7", "true"])
        rc, out, err = self.kubectl("get", "volumeattachment", "va-kctl", "-o", "jsonpath={.spec.nodeName}")
        self.assertEqual((rc, out), (0, "node-7"), err)


class TestJobStatus(ServerTestCase):
    J = "/apis/batch/v1/namespaces/default/jobs"
    T = "2026-01-01T00:00:00Z"

    def job(self, name):
        return self.ok("POST", self.J, {
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}})

    def status(self, name, status, expect=(200,)):
        code, body, _ = self.api("PATCH", "%s/%s/status" % (self.J, name), {"status": status},
                                 "application/merge-patch+json")
        self.assertIn(code, expect, body)
        return body

    def test_marking_a_job_complete_needs_what_the_job_controller_writes(self):
        created = self.job("jc")
        w = self.srv.watch(self.J + "?watch=1&resourceVersion=" + created["metadata"]["resourceVersion"])
        # v1.32 (JobManagedBy on by default) refuses a bare Complete condition
        body = self.status("jc", {"conditions": [{"type": "Complete", "status": "True", "reason": "CompletionsReached"}]},
                           expect=(422,))
        self.assertEqual(body["message"], 'Job.batch "jc" is invalid: ['
                         'status.completionTime: Required value: completionTime is required for Complete jobs, '
                         'status.conditions: Invalid value: cannot set Complete=True condition without the '
                         'SuccessCriteriaMet=true condition, '
                         'status.startTime: Required value: startTime is required for finished job]')
        done = self.status("jc", {"startTime": self.T, "completionTime": self.T, "succeeded": 1, "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached"},
            {"type": "Complete", "status": "True", "reason": "CompletionsReached"}]})
        self.assertEqual(done["metadata"]["generation"], created["metadata"]["generation"])
        ev = w.collect(1)
        w.close()
        self.assertEqual(ev[0]["type"], "MODIFIED")
        self.assertEqual([c["type"] for c in ev[0]["object"]["status"]["conditions"]], ["SuccessCriteriaMet", "Complete"])
        # a finished job stays finished
        body = self.status("jc", {"conditions": None, "completionTime": None}, expect=(422,))
        self.assertIn("status.conditions: Invalid value: cannot disable the terminal Complete=True condition",
                      body["message"])

    def test_marking_a_job_failed_needs_failure_target_and_start_time(self):
        self.job("jf")
        body = self.status("jf", {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]},
                           expect=(422,))
        self.assertEqual(body["message"], 'Job.batch "jf" is invalid: ['
                         'status.conditions: Invalid value: cannot set Failed=True condition without the '
                         'FailureTarget=true condition, '
                         'status.startTime: Required value: startTime is required for finished job]')
        out = self.status("jf", {"startTime": self.T, "failed": 1, "conditions": [
            {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded"},
            {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]})
        self.assertEqual(out["status"]["conditions"][1]["type"], "Failed")
        body = self.status("jf", {"failed": 0}, expect=(422,))
        self.assertIn("status.failed: Invalid value: 0: cannot decrease the failed counter", body["message"])

    def test_suspended_job_with_zero_completions_completes_without_start_time(self):
        # v1.32.7 on: the job controller completes such a Job without ever starting it
        done = {"completionTime": self.T, "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached"},
            {"type": "Complete", "status": "True", "reason": "CompletionsReached"}]}
        for name, spec in (("jz", {"suspend": True, "completions": 0}), ("jn", {"completions": 0})):
            self.ok("POST", self.J, {
                "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
                "spec": dict(spec, template={"spec": {"restartPolicy": "Never",
                                                      "containers": [{"name": "c", "image": "x"}]}})})
        self.assertEqual(self.status("jz", done)["status"]["conditions"][1]["type"], "Complete")
        body = self.status("jn", done, expect=(422,))
        self.assertEqual(body["message"], 'Job.batch "jn" is invalid: '
                         'status.startTime: Required value: startTime is required for finished job')

    def test_status_patch_ignores_spec_and_main_resource_ignores_status(self):
        self.job("js")
        got = self.ok("PATCH", self.J + "/js/status", {"spec": {"parallelism": 5}, "status": {"active": 1}},
                      "application/merge-patch+json")
        self.assertEqual((got["status"]["active"], got["spec"].get("parallelism")), (1, None))
        got = self.ok("PATCH", self.J + "/js", {"status": {"active": 3}}, "application/merge-patch+json")
        self.assertEqual(got["status"]["active"], 1)


class TestListWatch(ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.srv.api("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lw"}})
        for i in range(23):
            p = pod("p%02d" % i, "node-%d" % (i % 3), {"idx": str(i), "par": "even" if i % 2 == 0 else "odd"}, ns="lw")
            cls.srv.api("POST", "/api/v1/namespaces/lw/pods", p)

    def test_pagination_limit_continue_is_consistent_snapshot(self):
        page1 = self.ok("GET", "/api/v1/namespaces/lw/pods?limit=10")
        self.assertEqual(len(page1["items"]), 10)
        self.assertEqual(page1["metadata"]["remainingItemCount"], 13)
        rv = page1["metadata"]["resourceVersion"]
        # a write between pages must not show up in the snapshot
        self.ok("POST", "/api/v1/namespaces/lw/pods", pod("p99", "node-0", ns="lw"))
        self.ok("DELETE", "/api/v1/namespaces/lw/pods/p15")
        names = [p["metadata"]["name"] for p in page1["items"]]
        cont = page1["metadata"]["continue"]
        for _ in range(10):
            page = self.ok("GET", "/api/v1/namespaces/lw/pods?limit=10&continue=" + cont)
            self.assertEqual(page["metadata"]["resourceVersion"], rv)
            names += [p["metadata"]["name"] for p in page["items"]]
            cont = page["metadata"].get("continue")
            if not cont:
                break
        self.assertEqual(names, ["p%02d" % i for i in range(23)])
        self.ok("POST", "/api/v1/namespaces/lw/pods", pod("p15", "node-0", {"idx": "15", "par": "odd"}, ns="lw"))
        self.ok("DELETE", "/api/v1/namespaces/lw/pods/p99")

    def test_continue_token_with_resource_version_is_400_and_bad_token_400(self):
        page1 = self.ok("GET", "/api/v1/namespaces/lw/pods?limit=5")
        code, _, _ = self.api("GET", "/api/v1/namespaces/lw/pods?limit=5&resourceVersion=1&continue=" +
                              page1["metadata"]["continue"])
        self.assertEqual(code, 400)
        code, _, _ = self.api("GET", "/api/v1/namespaces/lw/pods?limit=5&continue=garbage")
        self.assertEqual(code, 400)

    def test_label_selector_on_list(self):
        out = self.ok("GET", "/api/v1/namespaces/lw/pods?labelSelector=" +
                      "par%3Deven%2Cidx%20in%20(0%2C2%2C3%2C4)%2Cidx%20notin%20(4)%2C!missing")
        self.assertEqual(sorted(p["metadata"]["name"] for p in out["items"]), ["p00", "p02"])

    def test_field_selectors_on_list(self):
        out = self.ok("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1,metadata.namespace%3Dlw")
        self.assertEqual(len(out["items"]), 8)
        out = self.ok("GET", "/api/v1/namespaces/lw/pods?fieldSelector=metadata.name%3Dp03")
        self.assertEqual([p["metadata"]["name"] for p in out["items"]], ["p03"])
        out = self.ok("GET", "/api/v1/namespaces/lw/pods?fieldSelector=status.phase%21%3DPending")
        self.assertEqual(out["items"], [])
        code, body, _ = self.api("GET", "/api/v1/pods?fieldSelector=spec.bogus%3D1")
        self.assertEqual(code, 400)

    def test_watch_resume_from_resource_version_sees_only_later_events(self):
        base = self.ok("POST", "/api/v1/namespaces/lw/configmaps",
                       {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w1"}})
        rv = base["metadata"]["resourceVersion"]
        self.ok("PATCH", "/api/v1/namespaces/lw/configmaps/w1", {"data": {"a": "1"}}, "application/merge-patch+json")
        self.ok("POST", "/api/v1/namespaces/lw/configmaps",
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w2"}})
        self.ok("DELETE", "/api/v1/namespaces/lw/configmaps/w1")
        w = self.srv.watch("/api/v1/namespaces/lw/configmaps?watch=true&resourceVersion=%s" % rv)
        self.assertEqual(w.resp.getheader("Transfer-Encoding"), "chunked")
        evs = w.collect(3)
        w.close()
        self.assertEqual([(e["type"], e["object"]["metadata"]["name"]) for e in evs],
                         [("MODIFIED", "w1"), ("ADDED", "w2"), ("DELETED", "w1")])
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in evs]
        self.assertEqual(rvs, sorted(rvs))

    def test_watch_without_resource_version_sends_synthetic_added_events(self):
        w = self.srv.watch("/api/v1/namespaces/lw/pods?watch=1&labelSelector=idx%3D7&timeoutSeconds=1")
        evs = w.collect(5, 5)
        w.close()
        self.assertEqual([(e["type"], e["object"]["metadata"]["name"]) for e in evs], [("ADDED", "p07")])

    def test_watch_timeout_seconds_ends_stream(self):
        t0 = time.monotonic()
        w = self.srv.watch("/api/v1/namespaces/lw/secrets?watch=1&resourceVersion=%s&timeoutSeconds=1"
                           % self.ok("GET", "/api/v1/namespaces/lw/secrets")["metadata"]["resourceVersion"])
        self.assertIsNone(w.next())
        w.close()
        self.assertLess(time.monotonic() - t0, 5)

    def test_watch_list_streams_the_collection_then_marks_its_end(self):
        """sendInitialEvents (WatchList): every object as ADDED, then a bookmark annotated
        k8s.io/initial-events-end at the list's resourceVersion, then the watch goes on."""
        rv = self.ok("GET", "/api/v1/namespaces/lw/pods")["metadata"]["resourceVersion"]
        w = self.srv.watch("/api/v1/namespaces/lw/pods?watch=1&sendInitialEvents=true"
                           "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=2")
        evs = w.collect(24, 6)
        w.close()
        self.assertEqual([e["type"] for e in evs], ["ADDED"] * 23 + ["BOOKMARK"])
        self.assertEqual(sorted(e["object"]["metadata"]["name"] for e in evs[:23]), ["p%02d" % i for i in range(23)])
        end = evs[23]["object"]["metadata"]
        self.assertEqual(end["annotations"], {"k8s.io/initial-events-end": "true"})
        self.assertGreaterEqual(int(end["resourceVersion"]), int(rv))

    def test_watch_list_options_are_validated_and_the_feature_can_be_off(self):
        base = "/api/v1/namespaces/lw/pods?watch=1&timeoutSeconds=1"
        for q, field in (("&sendInitialEvents=true&allowWatchBookmarks=true", "resourceVersionMatch"),
                         ("&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", "allowWatchBookmarks"),
                         ("&resourceVersionMatch=NotOlderThan", "resourceVersionMatch")):
            code, body, _ = self.api("GET", base + q)
            self.assertEqual(code, 422, q)
            self.assertEqual([c["field"] for c in body["details"]["causes"]], [field], q)
        self.ok("POST", "/_control/watch-list", {"enabled": False}, user="admin")
        try:
            code, body, _ = self.api("GET", base + "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                                     "&allowWatchBookmarks=true")
        finally:
            self.ok("POST", "/_control/watch-list", {"enabled": True}, user="admin")
        self.assertEqual(code, 422)
        self.assertIn("unless the WatchList feature gate is enabled", body["message"])

    def test_watch_bookmarks_carry_only_resource_version(self):
        rv = self.ok("GET", "/api/v1/namespaces/lw/secrets")["metadata"]["resourceVersion"]
        w = self.srv.watch("/api/v1/namespaces/lw/secrets?watch=1&allowWatchBookmarks=true&timeoutSeconds=2"
                           "&resourceVersion=" + rv)
        evs = w.collect(5, 6)
        w.close()
        bms = [e for e in evs if e["type"] == "BOOKMARK"]
        self.assertTrue(bms)
        self.assertEqual(set(bms[0]["object"]["metadata"]) - {"creationTimestamp"}, {"resourceVersion"})
        self.assertEqual(bms[0]["object"]["kind"], "Secret")

    def test_watch_label_selector_transitions_become_added_and_deleted(self):
        cm = self.ok("POST", "/api/v1/namespaces/lw/configmaps",
                     {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "tr", "labels": {"sel": "no"}}})
        w = self.srv.watch("/api/v1/namespaces/lw/configmaps?watch=1&labelSelector=sel%%3Dyes&resourceVersion=%s"
                           % cm["metadata"]["resourceVersion"])
        self.ok("PATCH", "/api/v1/namespaces/lw/configmaps/tr", {"metadata": {"labels": {"sel": "yes"}}},
                "application/merge-patch+json")
        self.ok("PATCH", "/api/v1/namespaces/lw/configmaps/tr", {"metadata": {"labels": {"sel": "no"}}},
                "application/merge-patch+json")
        evs = w.collect(2)
        w.close()
        self.assertEqual([e["type"] for e in evs], ["ADDED", "DELETED"])

    def test_compacted_history_gives_410_expired_event_then_http_410(self):
        rv = self.ok("GET", "/api/v1/namespaces/lw/configmaps")["metadata"]["resourceVersion"]
        self.ok("POST", "/api/v1/namespaces/lw/configmaps",
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cmp"}})
        self.srv.control("compact")
        w = self.srv.watch("/api/v1/namespaces/lw/configmaps?watch=1&resourceVersion=" + rv)
        self.assertEqual(w.status, 200)
        evs = w.collect(2)
        w.close()
        self.assertEqual(len(evs), 1)
        self.assertEqual(evs[0]["type"], "ERROR")
        st = evs[0]["object"]
        self.assertEqual((st["code"], st["reason"]), (410, "Expired"))
        self.assertRegex(st["message"], r"^too old resource version: \d+ \(\d+\)$")
        self.srv.control("watch-expired", {"mode": "http"})
        try:
            code, body, _ = self.api("GET", "/api/v1/namespaces/lw/configmaps?watch=1&resourceVersion=" + rv)
            self.assertEqual((code, body["reason"]), (410, "Expired"))
        finally:
            self.srv.control("watch-expired", {"mode": "event"})

    def test_continue_token_expires_with_compaction(self):
        page = self.ok("GET", "/api/v1/namespaces/lw/pods?limit=3")
        self.ok("POST", "/api/v1/namespaces/lw/configmaps",
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cmp2"}})
        self.srv.control("compact")
        code, body, _ = self.api("GET", "/api/v1/namespaces/lw/pods?limit=3&continue=" + page["metadata"]["continue"])
        self.assertEqual((code, body["reason"]), (410, "Expired"))

    def test_concurrent_writers_watch_sees_every_event_once_in_order(self):
        rv = self.ok("GET", "/api/v1/namespaces/lw/configmaps")["metadata"]["resourceVersion"]
        w = self.srv.watch("/api/v1/namespaces/lw/configmaps?watch=1&labelSelector=stress&resourceVersion=" + rv)
        errors = []

        def writer(i):
            try:
                for j in range(10):
                    name = "st-%d-%d" % (i, j)
                    self.srv.api("POST", "/api/v1/namespaces/lw/configmaps",
                                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"stress": "1"}}})
                    self.srv.api("PATCH", "/api/v1/namespaces/lw/configmaps/" + name, {"data": {"x": "1"}},
                                 "application/merge-patch+json")
            except Exception as e:  # reported below
                errors.append(e)
        threads = [threading.Thread(target=writer, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        evs = w.collect(120, 20)
        w.close()
        self.assertEqual(errors, [])
        self.assertEqual(len(evs), 120)
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in evs]
        self.assertEqual(rvs, sorted(set(rvs)))
        seen = {}
        for e in evs:
            seen.setdefault(e["object"]["metadata"]["name"], []).append(e["type"])
        self.assertEqual(len(seen), 60)
        self.assertTrue(all(v == ["ADDED", "MODIFIED"] for v in seen.values()))

    def test_drop_watches_ends_open_streams(self):
        w = self.srv.watch("/api/v1/namespaces/lw/secrets?watch=1&resourceVersion=%s"
                           % self.ok("GET", "/api/v1/namespaces/lw/secrets")["metadata"]["resourceVersion"])
        time.sleep(0.2)
        self.srv.control("drop-watches")
        t0 = time.monotonic()
        self.assertIsNone(w.next())
        w.close()
        self.assertLess(time.monotonic() - t0, 3)


class TestPatchTypesOverHTTP(ServerTestCase):
    def test_strategic_merge_on_pod_containers_and_json_patch_and_merge(self):
        p = pod("sp")
        p["spec"]["containers"].append({"name": "side", "image": "busybox:1"})
        self.ok("POST", "/api/v1/namespaces/default/pods", p)
        out = self.ok("PATCH", "/api/v1/namespaces/default/pods/sp",
                      {"spec": {"containers": [{"name": "side", "image": "busybox:2"}]}},
                      "application/strategic-merge-patch+json")
        self.assertEqual([(c["name"], c["image"]) for c in out["spec"]["containers"]],
                         [("c", "nginx:1.25"), ("side", "busybox:2")])
        out = self.ok("PATCH", "/api/v1/namespaces/default/pods/sp",
                      [{"op": "replace", "path": "/spec/containers/0/image", "value": "nginx:2"}],
                      "application/json-patch+json")
        self.assertEqual(out["spec"]["containers"][0]["image"], "nginx:2")
        code, body, _ = self.api("PATCH", "/api/v1/namespaces/default/pods/sp",
                                 [{"op": "test", "path": "/spec/containers/0/image", "value": "x"}],
                                 "application/json-patch+json")
        self.assertEqual(code, 422)
        code, body, _ = self.api("PATCH", "/api/v1/namespaces/default/pods/sp", {"a": 1}, "text/plain")
        self.assertEqual(code, 415)

    def test_node_cordon_by_strategic_merge_patch(self):
        self.ok("POST", "/api/v1/nodes", node("pn1"))
        out = self.ok("PATCH", "/api/v1/nodes/pn1", {"spec": {"unschedulable": True}},
                      "application/strategic-merge-patch+json")
        self.assertTrue(out["spec"]["unschedulable"])
        self.assertEqual(out["status"]["conditions"][0]["type"], "Ready")


class TestCustomResources(ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        for crd in (CRD, NS_CRD):
            code, body, _ = cls.srv.api("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
            assert code == 201, body

    def nd(self, name, **spec):
        return {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption", "metadata": {"name": name},
                "spec": spec}

    def test_discovery_lists_crd_kind_with_status_short_names_categories(self):
        rl = self.ok("GET", "/apis/nodegate.io/v1alpha1")
        names = {r["name"]: r for r in rl["resources"]}
        self.assertEqual(names["nodedisruptions"]["shortNames"], ["nd"])
        self.assertEqual(names["nodedisruptions"]["categories"], ["nodegate"])
        self.assertFalse(names["nodedisruptions"]["namespaced"])
        self.assertIn("nodedisruptions/status", names)
        self.assertTrue(names["applicationdisruptionbudgets"]["namespaced"])
        crd = self.ok("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/nodedisruptions.nodegate.io")
        conds = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        self.assertEqual(conds["Established"], "True")

    def test_schema_defaults_pruning_and_validation(self):
        out = self.ok("POST", "/apis/nodegate.io/v1alpha1/nodedisruptions",
                      dict(self.nd("d1", nodeNames=["n1"]), status={"state": "Granted"}))
        self.assertEqual(out["spec"]["priority"], 0)
        self.assertNotIn("status", out)  # main endpoint ignores status
        code, body, resp = self.api("POST", "/apis/nodegate.io/v1alpha1/nodedisruptions",
                                    self.nd("d2", unknown=1))
        self.assertEqual(code, 201)
        self.assertNotIn("unknown", body["spec"])
        self.assertEqual(resp.getheader("Warning"), '299 - "unknown field \\"spec.unknown\\""')
        code, body, _ = self.api("POST", "/apis/nodegate.io/v1alpha1/nodedisruptions?fieldValidation=Strict",
                                 self.nd("d3", unknown=1))
        self.assertEqual(code, 400)
        code, body, _ = self.api("POST", "/apis/nodegate.io/v1alpha1/nodedisruptions",
                                 self.nd("d4", priority="high", type="bogus"))
        self.assertEqual((code, body["reason"]), (422, "Invalid"))
        self.assertIn('spec.priority: Invalid value: "string": spec.priority in body must be of type integer', body["message"])
        self.assertIn('spec.type: Unsupported value: "bogus"', body["message"])

    def test_status_subresource_ignores_spec_and_main_ignores_status(self):
        self.ok("POST", "/apis/nodegate.io/v1alpha1/nodedisruptions", self.nd("s1", nodeNames=["a"]))
        out = self.ok("PATCH", "/apis/nodegate.io/v1alpha1/nodedisruptions/s1/status",
                      {"spec": {"nodeNames": ["b"]}, "status": {"state": "Pending"}}, "application/merge-patch+json")
        self.assertEqual((out["spec"]["nodeNames"], out["status"]["state"]), (["a"], "Pending"))
        self.assertEqual(out["metadata"]["generation"], 1)
        out = self.ok("PATCH", "/apis/nodegate.io/v1alpha1/nodedisruptions/s1",
                      {"spec": {"nodeNames": ["c"]}, "status": {"state": "Granted"}}, "application/merge-patch+json")
        self.assertEqual((out["spec"]["nodeNames"], out["status"]["state"]), (["c"], "Pending"))
        self.assertEqual(out["metadata"]["generation"], 2)

    def test_field_selector_on_crd_selectable_fields(self):
        self.ok("POST", "/apis/nodegate.io/v1alpha1/nodedisruptions", self.nd("fs1", requestor="team-a"))
        self.ok("POST", "/apis/nodegate.io/v1alpha1/nodedisruptions", self.nd("fs2", requestor="team-b"))
        out = self.ok("GET", "/apis/nodegate.io/v1alpha1/nodedisruptions?fieldSelector=spec.requestor%3Dteam-b")
        self.assertEqual([o["metadata"]["name"] for o in out["items"]], ["fs2"])
        code, body, _ = self.api("GET", "/apis/nodegate.io/v1alpha1/nodedisruptions?fieldSelector=spec.type%3Dx")
        self.assertEqual(code, 400)

    def test_put_without_resource_version_is_422_for_custom_resources(self):
        out = self.ok("POST", "/apis/nodegate.io/v1alpha1/nodedisruptions", self.nd("u1"))
        del out["metadata"]["resourceVersion"]
        code, body, _ = self.api("PUT", "/apis/nodegate.io/v1alpha1/nodedisruptions/u1", out)
        self.assertEqual(code, 422)

    def test_strategic_merge_patch_on_custom_resource_is_415(self):
        self.ok("POST", "/apis/nodegate.io/v1alpha1/nodedisruptions", self.nd("smp"))
        code, body, _ = self.api("PATCH", "/apis/nodegate.io/v1alpha1/nodedisruptions/smp", {"spec": {"priority": 1}},
                                 "application/strategic-merge-patch+json")
        self.assertEqual((code, body["reason"]), (415, "UnsupportedMediaType"))

    def test_namespaced_custom_resource_crud(self):
        adb = {"apiVersion": "nodegate.io/v1alpha1", "kind": "ApplicationDisruptionBudget",
               "metadata": {"name": "a1"}, "spec": {"maxDisruptions": 1}}
        self.ok("POST", "/apis/nodegate.io/v1alpha1/namespaces/default/applicationdisruptionbudgets", adb)
        out = self.ok("GET", "/apis/nodegate.io/v1alpha1/applicationdisruptionbudgets")
        self.assertEqual([o["metadata"]["namespace"] for o in out["items"]], ["default"])
        self.assertEqual(out["items"][0]["kind"], "ApplicationDisruptionBudget")

    def test_table_output_uses_additional_printer_columns(self):
        self.ok("POST", "/apis/nodegate.io/v1alpha1/nodedisruptions", self.nd("t1", nodeCount=2, requestor="me"))
        self.ok("PATCH", "/apis/nodegate.io/v1alpha1/nodedisruptions/t1/status", {"status": {"state": "Granted"}},
                "application/merge-patch+json")
        code, t, _ = self.api("GET", "/apis/nodegate.io/v1alpha1/nodedisruptions/t1", headers={
            "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"})
        self.assertEqual(t["kind"], "Table")
        self.assertEqual([c["name"] for c in t["columnDefinitions"]], ["Name", "Nodes", "State", "Requestor", "Age"])
        self.assertEqual(t["rows"][0]["cells"][:4], ["t1", 2, "Granted", "me"])
        self.assertEqual(t["rows"][0]["object"]["kind"], "PartialObjectMetadata")

    def test_kubectl_get_custom_kind_shows_printer_columns(self):
        self.ok("POST", "/apis/nodegate.io/v1alpha1/nodedisruptions", self.nd("k1", nodeCount=3, requestor="ops"))
        self.ok("PATCH", "/apis/nodegate.io/v1alpha1/nodedisruptions/k1/status", {"status": {"state": "Pending"}},
                "application/merge-patch+json")
        rc, out, err = self.kubectl("get", "nd", "k1")
        self.assertEqual(rc, 0, err)
        lines = out.strip().splitlines()
        self.assertEqual(lines[0].split(), ["NAME", "NODES", "STATE", "REQUESTOR", "AGE"])
        self.assertEqual(lines[1].split()[:4], ["k1", "3", "Pending", "ops"])
        self.assertRegex(lines[1].split()[4], r"^\d+s$")
        rc, out, err = self.kubectl("get", "nodegate")
        self.assertEqual(rc, 0, err)
        self.assertIn("k1", out)  # one resource type in the category: no kind prefix, as with a real server

    def test_kubectl_explain_custom_kind_uses_crd_schema(self):
        rc, out, err = self.kubectl("explain", "nd.spec")
        self.assertEqual(rc, 0, err)
        self.assertIn("KIND:       NodeDisruption", out)
        self.assertIn("nodeNames\t<[]string>", out)

    def test_kubectl_apply_custom_resource_uses_merge_patch(self):
        y = ("apiVersion: nodegate.io/v1alpha1\nkind: NodeDisruption\nmetadata:\n  name: ap1\n"
             "spec:\n  nodeNames: [n1]\n  type: maintenance\n")
        rc, out, err = self.kubectl("apply", "-f", "-", input=y)
        self.assertEqual(rc, 0, err)
        rc, out, err = self.kubectl("apply", "-f", "-", input=y.replace("maintenance", "reboot"))
        self.assertEqual(rc, 0, err)
        self.assertIn("configured", out)
        got = self.ok("GET", "/apis/nodegate.io/v1alpha1/nodedisruptions/ap1")
        self.assertEqual((got["spec"]["type"], got["metadata"]["generation"]), ("reboot", 2))

    def test_deleting_crd_removes_its_objects_and_discovery(self):
        crd = json.loads(json.dumps(CRD))
        crd["metadata"]["name"] = "tmps.example.io"
        crd["spec"]["group"] = "example.io"
        crd["spec"]["names"] = {"plural": "tmps", "kind": "Tmp"}
        self.ok("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        self.ok("POST", "/apis/example.io/v1alpha1/tmps", {"apiVersion": "example.io/v1alpha1", "kind": "Tmp",
                                                           "metadata": {"name": "x"}})
        self.ok("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/tmps.example.io")
        self.assertEqual(self.api("GET", "/apis/example.io/v1alpha1/tmps")[0], 404)
        self.assertNotIn("example.io", [g["name"] for g in self.ok("GET", "/apis")["groups"]])


class TestKubectlEndToEnd(ServerTestCase):
    def test_kubectl_apply_create_get_patch_label_delete(self):
        y = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: k1\n  labels: {a: b}\ndata:\n  x: '1'\n")
        rc, out, err = self.kubectl("apply", "-f", "-", input=y)
        self.assertEqual((rc, out.strip()), (0, "configmap/k1 created"), err)
        rc, out, err = self.kubectl("apply", "-f", "-", input=y)
        self.assertEqual(out.strip(), "configmap/k1 unchanged")
        rc, out, err = self.kubectl("apply", "-f", "-", input=y.replace("'1'", "'2'"))
        self.assertEqual(out.strip(), "configmap/k1 configured")
        self.assertEqual(self.ok("GET", "/api/v1/namespaces/default/configmaps/k1")["data"], {"x": "2"})
        k2 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: k2\ndata:\n  a: b\n"
        rc, out, err = self.kubectl("create", "-f", "-", input=k2)
        self.assertEqual(rc, 0, err)
        rc, out, err = self.kubectl("create", "-f", "-", input=k2)
        self.assertNotEqual(rc, 0)
        self.assertIn('configmaps "k2" already exists', err)
        rc, out, err = self.kubectl("label", "configmap", "k2", "team=x")
        self.assertEqual(rc, 0, err)
        rc, out, err = self.kubectl("annotate", "configmap", "k2", "note=y")
        self.assertEqual(rc, 0, err)
        rc, out, err = self.kubectl("patch", "configmap", "k2", "--type=merge", "-p", '{"data":{"c":"d"}}')
        self.assertEqual(rc, 0, err)
        rc, out, err = self.kubectl("patch", "configmap", "k2", "--type=json",
                                    "-p", '[{"op":"remove","path":"/data/a"}]')
        self.assertEqual(rc, 0, err)
        got = self.ok("GET", "/api/v1/namespaces/default/configmaps/k2")
        self.assertEqual((got["data"], got["metadata"]["labels"]["team"]), ({"c": "d"}, "x"))
        rc, out, err = self.kubectl("get", "configmaps", "-l", "team=x", "-o", "name")
        self.assertEqual(out.strip(), "configmap/k2")
        rc, out, err = self.kubectl("delete", "configmap", "k1", "k2")
        self.assertEqual(rc, 0, err)
        self.assertIn('configmap "k1" deleted', out)
        rc, out, err = self.kubectl("get", "configmap", "k1")
        self.assertIn('configmaps "k1" not found', err)

    def test_kubectl_apply_pod_strategic_merge_and_get_table(self):
        y = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: kp\n  labels: {app: x}\nspec:\n  containers:\n"
             "  - name: c\n    image: nginx:1.25\n")
        rc, out, err = self.kubectl("apply", "-f", "-", input=y)
        self.assertEqual(rc, 0, err)
        rc, out, err = self.kubectl("apply", "-f", "-", input=y.replace("1.25", "1.26").replace("app: x", "app: z"))
        self.assertEqual(rc, 0, err)
        got = self.ok("GET", "/api/v1/namespaces/default/pods/kp")
        self.assertEqual((got["spec"]["containers"][0]["image"], got["metadata"]["labels"]), ("nginx:1.26", {"app": "z"}))
        rc, out, err = self.kubectl("get", "pods", "kp", "-o", "wide")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.splitlines()[0].split()[:5], ["NAME", "READY", "STATUS", "RESTARTS", "AGE"])
        self.assertEqual(out.splitlines()[1].split()[:3], ["kp", "0/1", "Pending"])
        rc, out, err = self.kubectl("delete", "pod", "kp", "--wait=true", "--timeout=10s")
        self.assertEqual(rc, 0, err)

    def test_kubectl_create_generators_send_protobuf_namespace_configmap_secret(self):
        rc, out, err = self.kubectl("create", "namespace", "pb")
        self.assertEqual(rc, 0, err)
        rc, out, err = self.kubectl("create", "configmap", "pbc", "-n", "pb", "--from-literal=a=b", "--from-literal=c=d")
        self.assertEqual(rc, 0, err)
        rc, out, err = self.kubectl("create", "secret", "generic", "pbs", "-n", "pb", "--from-literal=pw=x")
        self.assertEqual(rc, 0, err)
        rc, out, err = self.kubectl("create", "serviceaccount", "pbsa", "-n", "pb")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.ok("GET", "/api/v1/namespaces/pb/configmaps/pbc")["data"], {"a": "b", "c": "d"})
        sec = self.ok("GET", "/api/v1/namespaces/pb/secrets/pbs")
        self.assertEqual((sec["data"], sec["type"]), ({"pw": "eA=="}, "Opaque"))
        self.assertEqual(self.ok("GET", "/api/v1/namespaces/pb")["status"]["phase"], "Active")
        # kinds without a protobuf decoder are refused with 415, never misread
        rc, out, err = self.kubectl("create", "deployment", "pbd", "--image=nginx")
        self.assertNotEqual(rc, 0)
        self.assertIn("unknown format", err)

    def test_kubectl_server_dry_run_delete_and_drain_change_nothing(self):
        self.ok("POST", "/api/v1/nodes", node("dr1"))
        self.ok("POST", "/api/v1/namespaces/default/pods", pod("dr-p", "dr1"))
        self.make_running("default", "dr-p")
        rc, out, err = self.kubectl("delete", "pod", "dr-p", "--dry-run=server")
        self.assertEqual((rc, out.strip()), (0, 'pod "dr-p" deleted (server dry run)'), err)
        rc, out, err = self.kubectl("drain", "dr1", "--force", "--dry-run=server")
        self.assertEqual(rc, 0, err)
        self.assertIn("evicting pod default/dr-p (server dry run)", out)
        got = self.ok("GET", "/api/v1/namespaces/default/pods/dr-p")
        self.assertNotIn("deletionTimestamp", got["metadata"])
        self.assertFalse(self.ok("GET", "/api/v1/nodes/dr1")["spec"].get("unschedulable"))

    def test_kubectl_cordon_uncordon(self):
        self.ok("POST", "/api/v1/nodes", node("kc1", {"node-role.kubernetes.io/worker": ""}))
        rc, out, err = self.kubectl("cordon", "kc1")
        self.assertEqual((rc, out.strip()), (0, "node/kc1 cordoned"), err)
        rc, out, err = self.kubectl("get", "node", "kc1")
        self.assertEqual(out.splitlines()[1].split()[:3], ["kc1", "Ready,SchedulingDisabled", "worker"])
        # node lifecycle stand-in: the unschedulable taint follows spec.unschedulable
        self.wait_for(lambda: {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"} in
                      (self.ok("GET", "/api/v1/nodes/kc1")["spec"].get("taints") or []), msg="unschedulable taint")
        rc, out, err = self.kubectl("uncordon", "kc1")
        self.assertEqual((rc, out.strip()), (0, "node/kc1 uncordoned"), err)
        self.assertFalse(self.ok("GET", "/api/v1/nodes/kc1")["spec"].get("unschedulable"))
        self.wait_for(lambda: not self.ok("GET", "/api/v1/nodes/kc1")["spec"].get("taints"), msg="taint removed")

    def test_not_ready_node_gets_not_ready_taint_and_other_taints_stay(self):
        n = node("nr1", ready=False)
        n["spec"] = {"taints": [{"key": "nodegate.io/disrupted", "effect": "NoSchedule"}]}
        self.ok("POST", "/api/v1/nodes", n)
        got = self.wait_for(lambda: (lambda o: o if len(o["spec"].get("taints") or []) == 2 else None)(
            self.ok("GET", "/api/v1/nodes/nr1")), msg="not-ready taint")
        self.assertEqual([t["key"] for t in got["spec"]["taints"]],
                         ["nodegate.io/disrupted", "node.kubernetes.io/not-ready"])

    def test_kubectl_drain_evicts_pods_and_skips_daemonset_pods(self):
        self.ok("POST", "/api/v1/nodes", node("kd1"))
        ds = self.ok("POST", "/apis/apps/v1/namespaces/default/daemonsets", {
            "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                     "template": {"metadata": {"labels": {"app": "agent"}},
                                  "spec": {"containers": [{"name": "c", "image": "agent"}]}}}})
        rs = self.ok("POST", "/apis/apps/v1/namespaces/default/replicasets", {
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "rs"}},
                     "template": {"metadata": {"labels": {"app": "rs"}},
                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
        own = lambda o, k: {"apiVersion": "apps/v1", "kind": k, "name": o["metadata"]["name"],
                            "uid": o["metadata"]["uid"], "controller": True}
        self.ok("POST", "/api/v1/namespaces/default/pods", pod("kd-agent", "kd1", {"app": "agent"}, owner=own(ds, "DaemonSet")))
        for n in ("kd-a", "kd-b"):
            self.ok("POST", "/api/v1/namespaces/default/pods", pod(n, "kd1", {"app": "rs"}, owner=own(rs, "ReplicaSet")))
            self.make_running("default", n)
        rc, out, err = self.kubectl("drain", "kd1", "--ignore-daemonsets", "--timeout=20s")
        self.assertEqual(rc, 0, out + err)
        self.assertIn("pod/kd-a evicted", out)
        self.assertIn("node/kd1 drained", out)
        self.assertEqual(self.api("GET", "/api/v1/namespaces/default/pods/kd-a")[0], 404)
        self.assertEqual(self.api("GET", "/api/v1/namespaces/default/pods/kd-agent")[0], 200)
        self.assertTrue(self.ok("GET", "/api/v1/nodes/kd1")["spec"]["unschedulable"])

    def test_kubectl_drain_retries_429_from_pdb_until_timeout(self):
        self.ok("POST", "/api/v1/nodes", node("kd2"))
        self.ok("POST", "/api/v1/namespaces/default/pods", pod("kd2-db", "kd2", {"app": "kd2db"}))
        self.make_running("default", "kd2-db")
        self.ok("POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets", {
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "kd2db"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "kd2db"}}}})
        t0 = time.monotonic()
        rc, out, err = self.kubectl("drain", "kd2", "--force", "--timeout=6s", timeout=60)
        took = time.monotonic() - t0
        self.assertNotEqual(rc, 0)
        self.assertGreaterEqual(err.count("Cannot evict pod as it would violate the pod's disruption budget."), 1)
        self.assertIn("will retry after 5s", err)
        self.assertIn("global timeout reached: 6s", err)
        self.assertGreaterEqual(took, 6)
        self.assertEqual(self.api("GET", "/api/v1/namespaces/default/pods/kd2-db")[0], 200)

    def test_kubectl_get_nodes_table_and_watch_with_timeout(self):
        self.ok("POST", "/api/v1/nodes", node("kw1", ready=False))
        rc, out, err = self.kubectl("get", "nodes", "kw1", "-w", "--request-timeout=2s", timeout=20)
        self.assertIn("kw1", out)
        self.assertIn("NotReady", out)


SSA_KUSTOMIZATION = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: ssa-demo
labels:
- pairs:
    app.kubernetes.io/name: demo
resources:
- all.yaml
"""

# what a kustomize base of a typical operator holds (CRs of the CRD are applied afterwards)
SSA_RESOURCES = """\
apiVersion: v1
kind: Namespace
metadata:
  name: ssa-demo
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.demo.example.com
spec:
  group: demo.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, default: 1}
              color: {type: string}
              tags:
                type: array
                x-kubernetes-list-type: set
                items: {type: string}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
          status:
            type: object
            properties:
              ready: {type: boolean}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: demo
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: ssa-demo-reader
rules:
- apiGroups: [""]
  resources: [nodes]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: ssa-demo-reader
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ssa-demo-reader}
subjects:
- kind: ServiceAccount
  name: demo
  namespace: ssa-demo
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: demo
rules:
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, create, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: demo
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: demo}
subjects:
- kind: ServiceAccount
  name: demo
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: demo-config
data:
  mode: strict
  level: "3"
---
apiVersion: v1
kind: Secret
metadata:
  name: demo-secret
type: Opaque
stringData:
  token: s3cret
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: demo
spec:
  replicas: 2
  selector:
    matchLabels: {app: demo}
  template:
    metadata:
      labels: {app: demo}
    spec:
      serviceAccountName: demo
      containers:
      - name: web
        image: nginx:1.25
        args: [--verbose]
        ports:
        - containerPort: 8443
          name: https
        env:
        - name: MODE
          value: strict
        volumeMounts:
        - name: cfg
          mountPath: /etc/demo
      volumes:
      - name: cfg
        configMap: {name: demo-config}
---
apiVersion: v1
kind: Service
metadata:
  name: demo
spec:
  selector: {app: demo}
  ports:
  - name: https
    port: 443
    targetPort: 8443
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: demo
spec:
  maxUnavailable: 1
  selector:
    matchLabels: {app: demo}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: demo
spec:
  podSelector:
    matchLabels: {app: demo}
  ingress:
  - ports:
    - port: 8443
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: ssa-demo
webhooks:
- name: validate.demo.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Ignore
  clientConfig:
    service: {name: demo, namespace: ssa-demo, path: /validate}
  objectSelector:
    matchLabels: {ssa-demo/never: "true"}
  rules:
  - apiGroups: [demo.example.com]
    apiVersions: [v1]
    operations: [CREATE, UPDATE]
    resources: [widgets]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: ssa-demo
webhooks:
- name: mutate.demo.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Ignore
  clientConfig:
    service: {name: demo, namespace: ssa-demo, path: /mutate}
  objectSelector:
    matchLabels: {ssa-demo/never: "true"}
  rules:
  - apiGroups: [demo.example.com]
    apiVersions: [v1]
    operations: [CREATE]
    resources: [widgets]
"""

SSA_WIDGET = """\
apiVersion: demo.example.com/v1
kind: Widget
metadata:
  name: w1
  namespace: ssa-demo
spec:
  color: blue
  tags: [a, b]
  ports:
  - name: http
    port: 80
"""

APPLY = "application/apply-patch+yaml"


def managers(obj):
    """{(manager, operation): fieldsV1} of an object's managedFields."""
    return {(e.get("manager", ""), e["operation"]): e["fieldsV1"] for e in obj["metadata"].get("managedFields") or []}


class TestServerSideApply(ServerTestCase):
    """Server-side apply: kubectl apply --server-side of a kustomize set, conflicts, dry run,
    and the wire details of PATCH application/apply-patch+yaml."""
    CM = "/api/v1/namespaces/default/configmaps/"

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ktestapi-ssa-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    @staticmethod
    def read(path):
        with open(path) as f:
            return f.read()

    def versions(self, kdir):
        """{kind/name: (resourceVersion, generation)} of the kustomize set and the Widget."""
        rc, out, err = self.kubectl("get", "-k", kdir, "-o", "json")
        self.assertEqual(rc, 0, err)
        items = json.loads(out)["items"]
        items.append(self.ok("GET", "/apis/demo.example.com/v1/namespaces/ssa-demo/widgets/w1"))
        # the PDB's status is written by the disruption-controller stand-in: compare its generation only
        return {"%s/%s" % (o["kind"], o["metadata"]["name"]):
                (o["metadata"]["resourceVersion"] if o["kind"] != "PodDisruptionBudget" else "",
                 o["metadata"].get("generation")) for o in items}

    def test_kubectl_apply_server_side_of_a_kustomize_set_create_noop_and_change(self):
        kdir = os.path.join(self.tmp, "base")
        os.mkdir(kdir)
        with open(os.path.join(kdir, "kustomization.yaml"), "w") as f:
            f.write(SSA_KUSTOMIZATION)
        with open(os.path.join(kdir, "all.yaml"), "w") as f:
            f.write(SSA_RESOURCES)
        widget = self.write("widget.yaml", SSA_WIDGET)
        rc, out, err = self.kubectl("apply", "--server-side", "-k", kdir)
        self.assertEqual(rc, 0, err)
        lines = out.strip().splitlines()
        self.assertEqual(len(lines), 15, out)
        self.assertTrue(all(line.endswith(" serverside-applied") for line in lines), out)
        for kind in ("namespace/ssa-demo", "customresourcedefinition.apiextensions.k8s.io/widgets.demo.example.com",
                     "networkpolicy.networking.k8s.io/demo", "poddisruptionbudget.policy/demo",
                     "validatingwebhookconfiguration.admissionregistration.k8s.io/ssa-demo"):
            self.assertIn(kind + " serverside-applied", lines)
        rc, out, err = self.kubectl("apply", "--server-side", "-f", widget)
        self.assertEqual((rc, out.strip()), (0, "widget.demo.example.com/w1 serverside-applied"), err)
        # created through the create path: defaults, generation, the applier's managedFields
        dep = self.ok("GET", "/apis/apps/v1/namespaces/ssa-demo/deployments/demo")
        self.assertEqual((dep["metadata"]["generation"], dep["spec"]["strategy"]["type"]), (1, "RollingUpdate"))
        self.assertEqual(dep["metadata"]["labels"], {"app.kubernetes.io/name": "demo"})
        entry = dep["metadata"]["managedFields"][0]
        self.assertEqual((entry["manager"], entry["operation"], entry["apiVersion"], entry["fieldsType"]),
                         ("kubectl", "Apply", "apps/v1", "FieldsV1"))
        self.assertEqual(len(dep["metadata"]["managedFields"]), 1)
        c = entry["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"web"}']
        self.assertEqual(set(c), {".", "f:args", "f:env", "f:image", "f:name", "f:ports", "f:volumeMounts"})
        self.assertIn('k:{"containerPort":8443,"protocol":"TCP"}', c["f:ports"])
        self.assertNotIn("f:strategy", entry["fieldsV1"]["f:spec"])   # defaults belong to nobody
        sec = self.ok("GET", "/api/v1/namespaces/ssa-demo/secrets/demo-secret")
        self.assertEqual(sec["data"], {"token": base64.b64encode(b"s3cret").decode()})
        svc = self.ok("GET", "/api/v1/namespaces/ssa-demo/services/demo")
        self.assertTrue(svc["spec"]["clusterIP"])
        np = self.ok("GET", "/apis/networking.k8s.io/v1/namespaces/ssa-demo/networkpolicies/demo")
        self.assertEqual(np["spec"]["policyTypes"], ["Ingress"])
        w = self.ok("GET", "/apis/demo.example.com/v1/namespaces/ssa-demo/widgets/w1")
        self.assertEqual(w["spec"], {"color": "blue", "size": 1, "tags": ["a", "b"], "ports": [{"name": "http", "port": 80}]})
        self.assertEqual(w["metadata"]["managedFields"][0]["fieldsV1"], {"f:spec": {
            "f:color": {}, "f:ports": {'k:{"name":"http"}': {".": {}, "f:name": {}, "f:port": {}}},
            "f:tags": {'v:"a"': {}, 'v:"b"': {}}}})

        # the same configuration again: every object is left as it is (no write, same resourceVersion)
        before = self.versions(kdir)
        self.assertEqual(len(before), 16)
        rc, out, err = self.kubectl("apply", "--server-side", "-k", kdir)
        self.assertEqual(rc, 0, err)
        rc, out, err = self.kubectl("apply", "--server-side", "-f", widget)
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.versions(kdir), before)

        # edit: change some fields, drop others; what only the applier managed goes away
        edited = (SSA_RESOURCES.replace('  mode: strict\n  level: "3"\n', "  mode: lax\n")
                  .replace("  replicas: 2\n", "  replicas: 3\n").replace("        args: [--verbose]\n", "")
                  .replace("        env:\n        - name: MODE\n          value: strict\n", "")
                  .replace("  verbs: [get, create, update]\n", "  verbs: [get]\n")
                  .replace("    targetPort: 8443\n", "    targetPort: 8443\n  - name: metrics\n    port: 9090\n"))
        with open(os.path.join(kdir, "all.yaml"), "w") as f:
            f.write(edited)
        rc, out, err = self.kubectl("apply", "--server-side", "-k", kdir)
        self.assertEqual(rc, 0, err)
        w2 = SSA_WIDGET.replace("blue", "red").replace("[a, b]", "[b]").replace("  ports:\n  - name: http\n    port: 80\n", "")
        rc, out, err = self.kubectl("apply", "--server-side", "-f", self.write("widget.yaml", w2))
        self.assertEqual(rc, 0, err)
        cm = self.ok("GET", "/api/v1/namespaces/ssa-demo/configmaps/demo-config")
        self.assertEqual(cm["data"], {"mode": "lax"})
        self.assertEqual(managers(cm), {("kubectl", "Apply"): {
            "f:data": {"f:mode": {}}, "f:metadata": {"f:labels": {"f:app.kubernetes.io/name": {}}}}})
        dep = self.ok("GET", "/apis/apps/v1/namespaces/ssa-demo/deployments/demo")
        self.assertEqual((dep["spec"]["replicas"], dep["metadata"]["generation"]), (3, 2))
        web = dep["spec"]["template"]["spec"]["containers"][0]
        self.assertNotIn("args", web)
        self.assertNotIn("env", web)
        self.assertEqual(web["volumeMounts"], [{"name": "cfg", "mountPath": "/etc/demo"}])
        role = self.ok("GET", "/apis/rbac.authorization.k8s.io/v1/namespaces/ssa-demo/roles/demo")
        self.assertEqual(role["rules"][0]["verbs"], ["get"])   # atomic list: replaced
        svc = self.ok("GET", "/api/v1/namespaces/ssa-demo/services/demo")
        self.assertEqual([p["port"] for p in svc["spec"]["ports"]], [443, 9090])
        w = self.ok("GET", "/apis/demo.example.com/v1/namespaces/ssa-demo/widgets/w1")
        self.assertEqual(w["spec"], {"color": "red", "size": 1, "tags": ["b"]})
        after = self.versions(kdir)
        changed = sorted(k for k in after if after[k] != before[k])
        self.assertEqual(changed, ["ConfigMap/demo-config", "Deployment/demo", "Role/demo", "Service/demo", "Widget/w1"])

    def test_kubectl_conflicts_with_other_managers_and_force_conflicts(self):
        cm = self.write("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n  namespace: default\n"
                                   "data:\n  owner: kubectl\n  same: x\n")
        rc, out, err = self.kubectl("apply", "--server-side", "-f", cm)
        self.assertEqual(rc, 0, err)
        other = self.write("other.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n"
                                         "  namespace: default\ndata:\n  owner: ops\n  same: x\n")
        rc, out, err = self.kubectl("apply", "--server-side", "--field-manager=ops", "-f", other)
        self.assertNotEqual(rc, 0)
        self.assertIn('error: Apply failed with 1 conflict: conflict with "kubectl": .data.owner', err)
        self.assertIn("--force-conflicts", err)
        self.assertEqual(self.ok("GET", self.CM + "shared")["data"]["owner"], "kubectl")
        rc, out, err = self.kubectl("apply", "--server-side", "--field-manager=ops", "--force-conflicts", "-f", other)
        self.assertEqual((rc, out.strip()), (0, "configmap/shared serverside-applied"), err)
        got = self.ok("GET", self.CM + "shared")
        self.assertEqual(got["data"], {"owner": "ops", "same": "x"})
        self.assertEqual(managers(got), {("kubectl", "Apply"): {"f:data": {"f:same": {}}},   # shared: same value
                                         ("ops", "Apply"): {"f:data": {"f:owner": {}, "f:same": {}}}})
        # kubectl re-applies its own file: now it conflicts with ops
        rc, out, err = self.kubectl("apply", "--server-side", "-f", cm)
        self.assertIn('conflict with "ops": .data.owner', err)

        # a field an imperative write (an Update manager) changed conflicts, naming version and time
        dep = self.write("dep.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: sc\n  namespace: default\n"
                                     "spec:\n  replicas: 2\n  selector:\n    matchLabels: {app: sc}\n  template:\n"
                                     "    metadata:\n      labels: {app: sc}\n    spec:\n      containers:\n"
                                     "      - name: c\n        image: nginx:1.25\n")
        rc, out, err = self.kubectl("apply", "--server-side", "-f", dep)
        self.assertEqual(rc, 0, err)
        rc, out, err = self.kubectl("patch", "deployment", "sc", "-p", '{"spec":{"replicas":5}}')
        self.assertEqual(rc, 0, err)
        got = self.ok("GET", "/apis/apps/v1/namespaces/default/deployments/sc")
        self.assertEqual(managers(got)[("kubectl-patch", "Update")], {"f:spec": {"f:replicas": {}}})
        self.assertNotIn("f:replicas", managers(got)[("kubectl", "Apply")]["f:spec"])
        rc, out, err = self.kubectl("apply", "--server-side", "-f", dep)
        self.assertRegex(err, r'Apply failed with 1 conflict: conflict with "kubectl-patch" using apps/v1 at '
                              r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ: \.spec\.replicas')
        rc, out, err = self.kubectl("apply", "--server-side", "--force-conflicts", "-f", dep)
        self.assertEqual(rc, 0, err)
        got = self.ok("GET", "/apis/apps/v1/namespaces/default/deployments/sc")
        self.assertEqual(got["spec"]["replicas"], 2)
        self.assertEqual(set(managers(got)), {("kubectl", "Apply")})   # kubectl-patch owned nothing else

    def test_kubectl_server_side_dry_run_and_diff_change_nothing(self):
        cm = self.write("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dry\n  namespace: default\n"
                                   "data:\n  a: '1'\n")
        rc, out, err = self.kubectl("apply", "--server-side", "--dry-run=server", "-f", cm)
        self.assertEqual((rc, out.strip()), (0, "configmap/dry serverside-applied (server dry run)"), err)
        self.assertEqual(self.api("GET", self.CM + "dry")[0], 404)
        rc, out, err = self.kubectl("apply", "--server-side", "-f", cm)
        self.assertEqual(rc, 0, err)
        before = self.ok("GET", self.CM + "dry")
        changed = self.write("cm2.yaml", self.read(cm).replace("'1'", "'2'"))
        rc, out, err = self.kubectl("apply", "--server-side", "--dry-run=server", "-f", changed, "-o", "json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["data"], {"a": "2"})
        rc, out, err = self.kubectl("diff", "--server-side", "-f", changed)
        self.assertEqual(rc, 1, err)   # 1 = differences found
        self.assertIn("-  a: \"1\"", out)
        self.assertIn("+  a: \"2\"", out)
        self.assertEqual(self.ok("GET", self.CM + "dry"), before)

    def test_kubectl_client_side_apply_then_server_side_apply(self):
        # kubectl moves the client-side apply manager's fields to its apply manager (csaupgrade)
        cm = self.write("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: csa\n  namespace: default\n"
                                   "data:\n  a: '1'\n")
        rc, out, err = self.kubectl("apply", "-f", cm)
        self.assertEqual(rc, 0, err)
        got = self.ok("GET", self.CM + "csa")
        self.assertIn(("kubectl-client-side-apply", "Update"), managers(got))
        rc, out, err = self.kubectl("apply", "--server-side", "-f", self.write("cm2.yaml", self.read(cm).replace("'1'", "'2'")))
        self.assertEqual((rc, out.strip()), (0, "configmap/csa serverside-applied"), err)
        got = self.ok("GET", self.CM + "csa")
        self.assertEqual(got["data"], {"a": "2"})
        self.assertNotIn(("kubectl-client-side-apply", "Update"), managers(got))
        self.assertEqual(managers(got)[("kubectl", "Apply")], {"f:data": {"f:a": {}}})

    def apply(self, path, body, query="fieldManager=tester", **kw):
        return self.api("PATCH", path + ("?" + query if query else ""), body, APPLY, **kw)

    def test_apply_patch_status_codes(self):
        y = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: raw\ndata:\n  a: '1'\n"
        code, body, _ = self.apply(self.CM + "raw", y, query="")
        self.assertEqual((code, body["reason"], body["message"]), (422, "Invalid",
                         'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'))
        self.assertEqual(body["details"], {"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [
            {"reason": "FieldValueRequired", "message": "Required value: is required for apply patch", "field": "fieldManager"}]})
        code, body, _ = self.apply(self.CM + "raw", y)                        # YAML body, missing object: created
        self.assertEqual((code, body["data"]), (201, {"a": "1"}), body)
        self.assertEqual(body["metadata"]["managedFields"][0]["manager"], "tester")
        rv = body["metadata"]["resourceVersion"]
        code, body, _ = self.apply(self.CM + "raw", json.dumps(yamlish.load_all(y)[0]))   # JSON body, no change
        self.assertEqual((code, body["metadata"]["resourceVersion"]), (200, rv))
        y2 = y.replace("'1'", "'2'")
        code, body, _ = self.apply(self.CM + "raw", y2, "fieldManager=other")
        self.assertEqual((code, body["reason"], body["message"]),
                         (409, "Conflict", 'Apply failed with 1 conflict: conflict with "tester": .data.a'))
        self.assertEqual(body["details"], {"causes": [{"reason": "FieldManagerConflict",
                                                       "message": 'conflict with "tester"', "field": ".data.a"}]})
        code, body, _ = self.apply(self.CM + "raw", y2, "fieldManager=other&force=true&dryRun=All")
        self.assertEqual((code, body["data"]), (200, {"a": "2"}))
        self.assertEqual(self.ok("GET", self.CM + "raw")["metadata"]["resourceVersion"], rv)   # dry run
        code, body, _ = self.apply(self.CM + "raw", y2, "fieldManager=other&force=true")
        self.assertEqual((code, body["data"]), (200, {"a": "2"}))
        self.assertEqual(managers(body), {("other", "Apply"): {"f:data": {"f:a": {}}}})   # tester owned only a
        code, body, _ = self.apply(self.CM + "raw2", y.replace("raw", "raw2"), "fieldManager=tester&dryRun=All")
        self.assertEqual(code, 201)
        self.assertEqual(self.api("GET", self.CM + "raw2")[0], 404)
        # more manager conflicts: one message line per manager and path
        self.apply(self.CM + "raw", "apiVersion: v1\nkind: ConfigMap\ndata: {b: x}\n", "fieldManager=third")
        code, body, _ = self.apply(self.CM + "raw", "apiVersion: v1\nkind: ConfigMap\ndata: {a: '3', b: y}\n")
        self.assertEqual((code, body["message"]), (409, 'Apply failed with 2 conflicts: conflicts with "other":\n'
                                                        '- .data.a\nconflicts with "third":\n- .data.b'))
        # refused configurations
        for q, text, want in [
                ("fieldManager=t&force=true", None, (422, 'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: '
                                                          'may not be specified for non-apply patch')),
                ("", "apiVersion: v2\nkind: ConfigMap\n", (400, "Incorrect version specified in apply patch. Specified "
                                                                "patch version: v2, expected: v1")),
                ("", "apiVersion: v1\nkind: ConfigMap\nmetadata: {managedFields: []}\n",
                 (400, "metadata.managedFields must be nil")),
                ("", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n",
                 (400, "the name of the object (other) does not match the name on the URL (raw)")),
                ("", "apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: kube-system}\n",
                 (400, "the namespace of the provided object does not match the namespace sent on the request")),
                ("", "[1]", (400, "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot "
                                  "unmarshal array into Go value of type map[string]interface {}")),
                ("", "apiVersion: v1\nkind: ConfigMap\nspec: {x: 1}\n",
                 (500, "failed to create typed patch object (/v1, Kind=ConfigMap): .spec: field not declared in schema"))]:
            if text is None:
                code, body, _ = self.api("PATCH", self.CM + "raw?" + q, {"data": {}}, "application/merge-patch+json")
            else:
                code, body, _ = self.apply(self.CM + "raw", text, q or "fieldManager=t")
            self.assertEqual((code, body["message"]), want)
        code, body, _ = self.apply("/api/v1/namespaces/default/services/none/status",
                                   "apiVersion: v1\nkind: Service\nstatus: {}\n")
        self.assertEqual(code, 404)   # the status subresource never creates

    def test_apply_to_an_untracked_object_conflicts_with_before_first_apply(self):
        # objects the server made itself (and fixtures) carry no managedFields
        svc = self.ok("GET", "/api/v1/namespaces/default/services/kubernetes")
        self.assertNotIn("managedFields", svc["metadata"])
        cfg = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "kubernetes"},
               "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 7443}]}}
        code, body, _ = self.apply("/api/v1/namespaces/default/services/kubernetes", json.dumps(cfg))
        self.assertEqual(code, 409)
        self.assertRegex(body["message"], r'^Apply failed with 1 conflict: conflict with "before-first-apply" using v1 '
                                          r'at [0-9T:-]+Z: \.spec\.ports\[port=443,protocol="TCP"\]\.targetPort$')
        code, body, _ = self.apply("/api/v1/namespaces/default/services/kubernetes", json.dumps(cfg),
                                   "fieldManager=tester&force=true")
        self.assertEqual((code, body["spec"]["ports"][0]["targetPort"]), (200, 7443))
        self.assertEqual(set(managers(body)), {("before-first-apply", "Update"), ("tester", "Apply")})

    def test_apply_creating_needs_the_create_verb_and_status_apply(self):
        rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/"
        self.ok("POST", rbac + "roles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                                         "metadata": {"name": "cm-patch"},
                                         "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                                                    "verbs": ["get", "patch"]}]})
        self.ok("POST", rbac + "rolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "alice-cm"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-patch"},
            "subjects": [{"kind": "User", "name": "alice"}]})
        y = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: byalice\ndata:\n  a: '1'\n"
        code, body, _ = self.apply(self.CM + "byalice", y, user="alice")
        self.assertEqual((code, body["message"]), (403, 'configmaps "byalice" is forbidden: User "alice" cannot create '
                                                        'resource "configmaps" in API group "" in the namespace "default"'))
        self.ok("POST", "/api/v1/namespaces/default/configmaps",
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "byalice"}})
        code, body, _ = self.apply(self.CM + "byalice", y, user="alice")
        self.assertEqual((code, body["data"]), (200, {"a": "1"}))
        # apply to /status: its own manager entry, only status fields, spec untouched
        self.ok("POST", "/apis/apps/v1/namespaces/default/deployments", {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "st"},
            "spec": {"selector": {"matchLabels": {"a": "b"}},
                     "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
        code, body, _ = self.apply("/apis/apps/v1/namespaces/default/deployments/st/status", json.dumps({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "st"}, "spec": {"replicas": 7},
            "status": {"replicas": 1, "readyReplicas": 1}}), "fieldManager=ctl")
        self.assertEqual((code, body["spec"]["replicas"], body["status"]["readyReplicas"]), (200, 1, 1), body)
        entry = next(e for e in body["metadata"]["managedFields"] if e["manager"] == "ctl")
        self.assertEqual((entry["operation"], entry["subresource"], entry["fieldsV1"]),
                         ("Apply", "status", {"f:status": {"f:readyReplicas": {}, "f:replicas": {}}}))

    def test_update_operations_record_managed_fields(self):
        # create: the whole object belongs to the creator (fieldManager, else the User-Agent's prefix)
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "upd", "labels": {"x": "1"}},
              "data": {"a": "1"}}
        body = self.ok("POST", "/api/v1/namespaces/default/configmaps", cm, headers={"User-Agent": "my-tool/1.0 (linux)"})
        self.assertEqual(body["metadata"]["managedFields"], [{
            "manager": "my-tool", "operation": "Update", "apiVersion": "v1", "time": body["metadata"]["managedFields"][0]["time"],
            "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}, "f:a": {}},
                                                   "f:metadata": {"f:labels": {".": {}, "f:x": {}}}}}])
        # a PUT without managedFields keeps them; the changed field moves to the writer
        body["data"]["a"] = "2"
        del body["metadata"]["managedFields"]
        body = self.ok("PUT", self.CM + "upd?fieldManager=editor", body)
        self.assertEqual(managers(body)[("editor", "Update")], {"f:data": {"f:a": {}}})
        self.assertEqual(managers(body)[("my-tool", "Update")], {"f:data": {}, "f:metadata": {"f:labels": {".": {}, "f:x": {}}}})
        # a no-op write changes nothing, not even managedFields
        rv = body["metadata"]["resourceVersion"]
        again = self.ok("PUT", self.CM + "upd?fieldManager=someone", body)
        self.assertEqual((again["metadata"]["resourceVersion"], again["metadata"]["managedFields"]),
                         (rv, body["metadata"]["managedFields"]))
        # managedFields written by a client replace the stored ones (GitOps tools hand fields over so)
        mf = [dict(e, manager="gitops") if e["manager"] == "editor" else e for e in body["metadata"]["managedFields"]]
        body = self.ok("PATCH", self.CM + "upd", [{"op": "replace", "path": "/metadata/managedFields", "value": mf}],
                       "application/json-patch+json")
        self.assertEqual(sorted(managers(body)), [("gitops", "Update"), ("my-tool", "Update")])
        code, body, _ = self.api("PATCH", "/apis/authentication.k8s.io/v1/selfsubjectreviews/x?fieldManager=t",
                                 "{}", APPLY)
        self.assertEqual(code, 404)   # never stored: nothing to apply to
        # managedFields: [{}] resets them (how clients strip them)
        body = self.ok("PATCH", self.CM + "upd", {"metadata": {"managedFields": [{}]}}, "application/merge-patch+json")
        self.assertNotIn("managedFields", body["metadata"])
        # untracked objects stay untracked through updates
        body = self.ok("PATCH", self.CM + "upd", {"data": {"b": "3"}}, "application/merge-patch+json")
        self.assertNotIn("managedFields", body["metadata"])


class TestEvictionAndPDB(ServerTestCase):
    def setUp(self):
        self.ns = "ev-%d" % (int(time.monotonic() * 1000) % 10000000)
        self.ok("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.ns}})
        self.rs = self.ok("POST", "/apis/apps/v1/namespaces/%s/replicasets" % self.ns, {
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "a"}},
                     "template": {"metadata": {"labels": {"app": "a"}},
                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
        for i in range(3):
            self.ok("POST", "/api/v1/namespaces/%s/pods" % self.ns,
                    pod("a%d" % i, "n1", {"app": "a"}, ns=self.ns,
                        owner={"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                               "uid": self.rs["metadata"]["uid"], "controller": True}))
            self.make_running(self.ns, "a%d" % i)

    def pdb(self, name, **spec):
        spec.setdefault("selector", {"matchLabels": {"app": "a"}})
        return self.ok("POST", "/apis/policy/v1/namespaces/%s/poddisruptionbudgets" % self.ns,
                       {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name},
                        "spec": spec})

    def evict(self, name, dry=False, body=None):
        return self.api("POST", "/api/v1/namespaces/%s/pods/%s/eviction%s" % (self.ns, name, "?dryRun=All" if dry else ""),
                        body or {"apiVersion": "policy/v1", "kind": "Eviction",
                                 "metadata": {"name": name, "namespace": self.ns}})

    def pdb_status(self, name):
        return self.ok("GET", "/apis/policy/v1/namespaces/%s/poddisruptionbudgets/%s" % (self.ns, name))["status"]

    def test_pdb_status_is_computed_like_the_disruption_controller(self):
        self.pdb("p", maxUnavailable="34%")
        st = self.wait_for(lambda: (lambda s: s if s.get("expectedPods") == 3 else None)(self.pdb_status("p")))
        # 34% of 3 rounds up to 2 unavailable -> desired 1
        self.assertEqual((st["currentHealthy"], st["desiredHealthy"], st["disruptionsAllowed"]), (3, 1, 2))

    def test_eviction_allowed_deletes_pod_and_records_disruption(self):
        self.pdb("p", minAvailable=2)
        code, body, _ = self.evict("a0")
        self.assertEqual((code, body["status"]), (201, "Success"))
        self.assertEqual(self.api("GET", "/api/v1/namespaces/%s/pods/a0" % self.ns)[0], 404)
        code, body, resp = self.evict("a1")
        self.assertEqual(code, 429)
        self.assertEqual(body["reason"], "TooManyRequests")
        self.assertEqual(body["message"], "Cannot evict pod as it would violate the pod's disruption budget.")
        # NewTooManyRequests(..., 0): no retryAfterSeconds, so no Retry-After header
        self.assertNotIn("retryAfterSeconds", body["details"])
        self.assertIsNone(resp.getheader("Retry-After"))
        self.assertEqual(body["details"]["causes"][0]["reason"], "DisruptionBudget")
        self.assertEqual(body["details"]["causes"][0]["message"],
                         "The disruption budget p needs 2 healthy pods and has 2 currently")

    def test_evicted_pod_gets_disruption_target_condition_before_deletion(self):
        rv = self.ok("GET", "/api/v1/namespaces/%s/pods" % self.ns)["metadata"]["resourceVersion"]
        w = self.srv.watch("/api/v1/namespaces/%s/pods?watch=1&fieldSelector=metadata.name%%3Da1&resourceVersion=%s"
                           % (self.ns, rv))
        code, _, _ = self.evict("a1")
        self.assertEqual(code, 201)
        evs = w.collect(4)
        w.close()
        # condition added, graceful deletion starts, then the kubelet stand-in's final DELETE
        # (gracePeriodSeconds=0) writes the zero grace period and the pod is removed
        self.assertEqual([e["type"] for e in evs], ["MODIFIED", "MODIFIED", "MODIFIED", "DELETED"])
        self.assertTrue(evs[1]["object"]["metadata"]["deletionTimestamp"])
        self.assertEqual(evs[1]["object"]["metadata"]["deletionGracePeriodSeconds"], 30)
        self.assertEqual(evs[2]["object"]["metadata"]["deletionGracePeriodSeconds"], 0)
        cond = [c for c in evs[0]["object"]["status"]["conditions"] if c["type"] == "DisruptionTarget"][0]
        self.assertEqual((cond["status"], cond["reason"]), ("True", "EvictionByEvictionAPI"))

    def test_eviction_dry_run_changes_nothing(self):
        self.pdb("p", minAvailable=1)
        code, body, _ = self.evict("a0", dry=True)
        self.assertEqual(code, 201)
        self.assertEqual(self.api("GET", "/api/v1/namespaces/%s/pods/a0" % self.ns)[0], 200)
        self.assertNotIn("disruptedPods", self.pdb_status("p"))

    def test_two_pdbs_matching_is_500(self):
        self.pdb("p1", minAvailable=1)
        self.pdb("p2", maxUnavailable=1)
        code, body, _ = self.evict("a0")
        self.assertEqual(code, 500)
        self.assertEqual(body["message"],
                         "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.")
        self.assertNotIn("reason", body)

    def test_eviction_of_pending_or_missing_pod(self):
        self.pdb("p", minAvailable=3)
        self.ok("POST", "/api/v1/namespaces/%s/pods" % self.ns, pod("pend", "n1", {"app": "a"}, ns=self.ns))
        code, _, _ = self.evict("pend")
        self.assertEqual(code, 201)  # Pending pods skip the PDB
        code, body, _ = self.evict("nosuch")
        self.assertEqual((code, body["message"]), (404, 'pods "nosuch" not found'))

    def test_eviction_uid_precondition_conflict(self):
        code, body, _ = self.evict("a0", body={"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "a0"},
                                               "deleteOptions": {"preconditions": {"uid": "other"}}})
        self.assertEqual((code, body["reason"]), (409, "Conflict"))
        self.assertTrue(body["message"].startswith('Operation cannot be fulfilled on Pod "a0": the UID in the '
                                                   'precondition (other) does not match the UID in record'), body["message"])

    def test_eviction_body_is_decoded_as_the_go_type(self):
        base = "/api/v1/namespaces/%s/pods/a0/eviction" % self.ns
        bad = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "a0"},
               "deleteOptions": {"gracePeriodSeconds": "30"}}
        code, body, _ = self.api("POST", base, bad)
        self.assertEqual(code, 400, body)
        self.assertEqual(body["message"], 'Eviction in version "v1" cannot be handled as a Eviction: json: cannot '
                         'unmarshal string into Go struct field DeleteOptions.deleteOptions.gracePeriodSeconds of '
                         'type int64')
        typo = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "a0"},
                "deleteOptions": {"gracePeriod": 0}}
        code, body, _ = self.api("POST", base + "?fieldValidation=Strict", typo)
        self.assertEqual(code, 400, body)
        self.assertIn('strict decoding error: unknown field "deleteOptions.gracePeriod"', body["message"])
        code, body, headers = self.api("POST", base + "?dryRun=All", typo)
        self.assertEqual(code, 201, body)
        self.assertEqual(headers.getheader("Warning"), '299 - "unknown field \\"deleteOptions.gracePeriod\\""')

    def test_eviction_name_mismatch_is_400(self):
        code, _, _ = self.evict("a0", body={"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "other"}})
        self.assertEqual(code, 400)

    def test_percent_min_available_needs_controller_scale(self):
        self.pdb("p", minAvailable="50%")
        st = self.wait_for(lambda: (lambda s: s if s.get("expectedPods") == 3 else None)(self.pdb_status("p")))
        self.assertEqual((st["desiredHealthy"], st["disruptionsAllowed"]), (2, 1))


# ---------------------------------------------------------------------------------- webhooks
class WebhookServer:
    """A tiny HTTPS admission webhook. `behaviour(review) -> (http_code, body_dict or bytes, delay)`."""

    def __init__(self, certdir, behaviour):
        self.reviews = []
        self.paths = []
        self.behaviour = behaviour
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                review = json.loads(self.rfile.read(n))
                outer.reviews.append(review)
                outer.paths.append((self.path, self.headers.get("Content-Type")))
                code, body, delay = outer.behaviour(review)
                if delay:
                    time.sleep(delay)
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass

        self.ca, ca_key = make_ca(certdir, "whca", "webhook-ca")
        crt, key = make_leaf(certdir, "wh", self.ca, ca_key, dns=["localhost", "wh.nodegate.svc"], ips=["127.0.0.1"])
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(crt, key)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self.thread.start()
        with open(self.ca, "rb") as f:
            self.ca_b64 = base64.b64encode(f.read()).decode()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def allow(review, **extra):
    r = {"uid": review["request"]["uid"], "allowed": True}
    r.update(extra)
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": r}


def deny(review, code, message, retry=None, warnings=None):
    st = {"code": code, "message": message, "reason": "TooManyRequests" if code == 429 else "Forbidden"}
    if retry:
        st["details"] = {"retryAfterSeconds": retry}
    r = {"uid": review["request"]["uid"], "allowed": False, "status": st}
    if warnings:
        r["warnings"] = warnings
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": r}


class TestAdmissionWebhooks(ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.certdir = tempfile.mkdtemp(prefix="ktestapi-wh-")
        cls.mode = {"kind": "allow"}

        def behaviour(review):
            m = cls.mode["kind"]
            if m == "allow":
                return 200, allow(review, warnings=["be careful"]), 0
            if m == "deny429":
                return 200, deny(review, 429, "budget exhausted", retry=7, warnings=["w1"]), 0
            if m == "deny429plain":
                return 200, deny(review, 429, "budget exhausted"), 0
            if m == "deny403":
                return 200, deny(review, 403, "nope"), 0
            if m == "deny403retry":
                return 200, deny(review, 403, "later", retry=3), 0
            if m == "slow":
                return 200, allow(review), 3
            if m == "500":
                return 500, b"boom", 0
            if m == "v1beta1":
                return 200, {"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview",
                             "response": {"uid": review["request"]["uid"], "allowed": True}}, 0
            return 200, allow(review), 0
        cls.wh = WebhookServer(cls.certdir, behaviour)
        cls.srv.api("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": {"name": "guarded", "labels": {"guard": "on"}}})
        cls.srv.api("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)
        # RBAC: alice and the nodegate-devs group (carol's certificate) may edit; nodegate's
        # service account may write NodeDisruption status and configmaps
        rbac = "/apis/rbac.authorization.k8s.io/v1/"
        cls.srv.api("POST", rbac + "clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "devs-edit"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
            "subjects": [{"kind": "User", "name": "alice"}, {"kind": "Group", "name": "nodegate-devs"}]})
        cls.srv.api("POST", rbac + "clusterroles", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "nodegate"},
            "rules": [{"apiGroups": ["nodegate.io"], "resources": ["nodedisruptions", "nodedisruptions/status"],
                       "verbs": ["get", "list", "watch", "update", "patch"]},
                      {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "get"]}]})
        cls.srv.api("POST", rbac + "clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "nodegate"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "nodegate"},
            "subjects": [{"kind": "ServiceAccount", "name": "nodegate", "namespace": "nodegate"}]})

    @classmethod
    def tearDownClass(cls):
        cls.wh.close()
        shutil.rmtree(cls.certdir, ignore_errors=True)
        super().tearDownClass()

    def setUp(self):
        self.mode["kind"] = "allow"
        self.wh.reviews.clear()
        self.wh.paths.clear()

    def tearDown(self):
        self.api("DELETE", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/test")

    def register(self, rules, failure="Fail", timeout=None, ns_sel=None, obj_sel=None, service=False, ca=True,
                 match_policy=None):
        cc = {"url": "https://127.0.0.1:%d/validate" % self.wh.port}
        if service:
            cc = {"service": {"namespace": "nodegate", "name": "wh", "path": "/validate", "port": 8443}}
            self.srv.control("service-endpoint", {"service": "nodegate/wh:8443", "address": "127.0.0.1:%d" % self.wh.port})
        if ca:
            cc["caBundle"] = self.wh.ca_b64
        w = {"name": "check.nodegate.io", "clientConfig": cc, "rules": rules, "failurePolicy": failure,
             "sideEffects": "None", "admissionReviewVersions": ["v1"]}
        if timeout:
            w["timeoutSeconds"] = timeout
        if ns_sel is not None:
            w["namespaceSelector"] = ns_sel
        if obj_sel is not None:
            w["objectSelector"] = obj_sel
        if match_policy:
            w["matchPolicy"] = match_policy
        self.ok("POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
                {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                 "metadata": {"name": "test"}, "webhooks": [w]})

    EVICT_RULE = [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/eviction"]}]
    CM_RULE = [{"operations": ["CREATE", "UPDATE", "DELETE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["configmaps"]}]

    def test_eviction_review_is_sent_exactly_like_kube_apiserver(self):
        self.ok("POST", "/api/v1/namespaces/default/pods", pod("wev", "n1"))
        self.make_running("default", "wev")
        self.register(self.EVICT_RULE, timeout=4)
        code, body, resp = self.api("POST", "/api/v1/namespaces/default/pods/wev/eviction",
                                    {"apiVersion": "policy/v1", "kind": "Eviction",
                                     "metadata": {"name": "wev", "namespace": "default"}}, user="alice")
        self.assertEqual(code, 201, body)
        self.assertEqual(resp.getheader("Warning"), '299 - "be careful"')
        self.assertEqual(self.wh.paths[0], ("/validate?timeout=4s", "application/json"))
        rv = self.wh.reviews[0]
        self.assertEqual((rv["apiVersion"], rv["kind"]), ("admission.k8s.io/v1", "AdmissionReview"))
        req = rv["request"]
        self.assertEqual(req["operation"], "CREATE")
        self.assertEqual(req["subResource"], "eviction")
        self.assertEqual(req["resource"], {"group": "", "version": "v1", "resource": "pods"})
        self.assertEqual(req["kind"], {"group": "policy", "version": "v1", "kind": "Eviction"})
        self.assertEqual((req["name"], req["namespace"]), ("wev", "default"))
        self.assertEqual(req["object"]["kind"], "Eviction")
        self.assertEqual(req["userInfo"]["username"], "alice")
        self.assertIn("system:authenticated", req["userInfo"]["groups"])
        self.assertIs(req["dryRun"], False)
        self.assertIsNone(req.get("oldObject"))

    def test_user_info_from_client_certificate_and_service_account_kubeconfig(self):
        self.register(self.CM_RULE)
        code, body, _ = self.api("POST", "/api/v1/namespaces/default/configmaps",
                                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x509"}}, user="carol-cert")
        self.assertEqual(code, 201, body)
        ui = self.wh.reviews[-1]["request"]["userInfo"]
        self.assertEqual((ui["username"], ui["groups"]), ("carol", ["nodegate-devs", "system:authenticated"]))
        rc, out, err = self.kubectl("create", "-f", "-", user="system:serviceaccount:nodegate:nodegate",
                                    input='{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bysa"}}')
        self.assertEqual(rc, 0, err)
        ui = self.wh.reviews[-1]["request"]["userInfo"]
        self.assertEqual(ui["username"], "system:serviceaccount:nodegate:nodegate")
        rc, out, err = self.kubectl("get", "configmap", "x509", user="carol-cert")
        self.assertEqual(rc, 0, err)

    def test_denial_code_message_and_retry_after_pass_through(self):
        self.ok("POST", "/api/v1/namespaces/default/pods", pod("wdn", "n1"))
        self.make_running("default", "wdn")
        self.register(self.EVICT_RULE)
        self.mode["kind"] = "deny429"
        code, body, resp = self.api("POST", "/api/v1/namespaces/default/pods/wdn/eviction",
                                    {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "wdn"}})
        self.assertEqual(code, 429)
        self.assertEqual(body["message"], 'admission webhook "check.nodegate.io" denied the request: budget exhausted')
        self.assertEqual(body["reason"], "TooManyRequests")
        self.assertEqual(body["details"], {"retryAfterSeconds": 7})
        self.assertEqual(resp.getheader("Retry-After"), "7")
        self.assertEqual(resp.getheader("Warning"), '299 - "w1"')
        self.assertEqual(self.api("GET", "/api/v1/namespaces/default/pods/wdn")[0], 200)
        # without retryAfterSeconds the 429 passes through with no Retry-After header
        self.mode["kind"] = "deny429plain"
        code, body, resp = self.api("POST", "/api/v1/namespaces/default/pods/wdn/eviction",
                                    {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "wdn"}})
        self.assertEqual((code, body["reason"]), (429, "TooManyRequests"))
        self.assertNotIn("details", body)
        self.assertIsNone(resp.getheader("Retry-After"))
        # a denial of any code keeps its details; retryAfterSeconds becomes the header there too
        self.mode["kind"] = "deny403retry"
        code, body, resp = self.api("POST", "/api/v1/namespaces/default/pods/wdn/eviction",
                                    {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "wdn"}})
        self.assertEqual((code, body["reason"], body["details"]), (403, "Forbidden", {"retryAfterSeconds": 3}))
        self.assertEqual(resp.getheader("Retry-After"), "3")

    def test_kubectl_drain_retries_webhook_429(self):
        self.ok("POST", "/api/v1/nodes", node("whn"))
        self.ok("POST", "/api/v1/namespaces/default/pods", pod("whp", "whn"))
        self.make_running("default", "whp")
        self.register(self.EVICT_RULE)
        # no retryAfterSeconds: with a Retry-After header client-go itself re-sends the request
        # up to 10 times before kubectl drain sees the 429, as against a real server
        self.mode["kind"] = "deny429plain"
        rc, out, err = self.kubectl("drain", "whn", "--force", "--timeout=6s", timeout=60)
        self.assertNotEqual(rc, 0)
        self.assertIn('admission webhook \\"check.nodegate.io\\" denied the request: budget exhausted'
                      if '\\"' in err else 'admission webhook "check.nodegate.io" denied the request: budget exhausted',
                      err)
        self.assertIn("will retry after 5s", err)

    def test_connections_to_webhooks_are_kept_alive_and_reused(self):
        conns = []
        orig = self.wh.httpd.RequestHandlerClass.setup

        def setup(handler):
            conns.append(handler.client_address)
            return orig(handler)
        self.wh.httpd.RequestHandlerClass.setup = setup
        try:
            self.register(self.CM_RULE)
            for i in range(3):
                self.ok("POST", "/api/v1/namespaces/default/configmaps",
                        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ka%d" % i}})
        finally:
            self.wh.httpd.RequestHandlerClass.setup = orig
        self.assertEqual(len(self.wh.reviews), 3)
        self.assertLessEqual(len(conns), 1)  # 0 when an earlier test left an idle connection

    def test_failure_policy_fail_returns_500_when_webhook_errors(self):
        self.register(self.CM_RULE, failure="Fail")
        self.mode["kind"] = "500"
        code, body, _ = self.api("POST", "/api/v1/namespaces/default/configmaps",
                                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ff"}})
        self.assertEqual((code, body["reason"]), (500, "InternalError"))
        self.assertTrue(body["message"].startswith('Internal error occurred: failed calling webhook "check.nodegate.io"'),
                        body["message"])

    def test_failure_policy_ignore_lets_request_through(self):
        self.register(self.CM_RULE, failure="Ignore")
        self.mode["kind"] = "500"
        code, body, _ = self.api("POST", "/api/v1/namespaces/default/configmaps",
                                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fi"}})
        self.assertEqual(code, 201)

    def test_timeout_applies_failure_policy(self):
        self.register(self.CM_RULE, failure="Fail", timeout=1)
        self.mode["kind"] = "slow"
        t0 = time.monotonic()
        code, body, _ = self.api("POST", "/api/v1/namespaces/default/configmaps",
                                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ft"}})
        self.assertEqual(code, 500)
        self.assertIn("?timeout=1s", body["message"])
        self.assertLess(time.monotonic() - t0, 3)

    def test_ca_bundle_is_verified(self):
        self.register(self.CM_RULE, failure="Fail", ca=False)
        code, body, _ = self.api("POST", "/api/v1/namespaces/default/configmaps",
                                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fca"}})
        self.assertEqual(code, 500)
        self.assertIn("certificate", body["message"])
        self.assertEqual(self.wh.reviews, [])

    def test_v1beta1_response_to_v1_request_is_invalid(self):
        self.register(self.CM_RULE, failure="Fail")
        self.mode["kind"] = "v1beta1"
        code, body, _ = self.api("POST", "/api/v1/namespaces/default/configmaps",
                                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fvb"}})
        self.assertEqual(code, 500)
        self.assertIn("expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview", body["message"])

    def test_update_sends_old_object_and_delete_sends_old_only(self):
        self.ok("POST", "/api/v1/namespaces/default/configmaps",
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fu"}, "data": {"a": "1"}})
        self.register(self.CM_RULE)
        self.ok("PATCH", "/api/v1/namespaces/default/configmaps/fu?dryRun=All", {"data": {"a": "2"}},
                "application/merge-patch+json")
        req = self.wh.reviews[-1]["request"]
        self.assertEqual((req["operation"], req["oldObject"]["data"], req["object"]["data"], req["dryRun"]),
                         ("UPDATE", {"a": "1"}, {"a": "2"}, True))
        self.assertEqual(req["options"]["kind"], "UpdateOptions")
        self.ok("DELETE", "/api/v1/namespaces/default/configmaps/fu")
        req = self.wh.reviews[-1]["request"]
        self.assertEqual(req["operation"], "DELETE")
        self.assertIsNone(req.get("object"))
        self.assertEqual(req["oldObject"]["metadata"]["name"], "fu")

    def test_namespace_and_object_selectors(self):
        self.register(self.CM_RULE, ns_sel={"matchLabels": {"guard": "on"}}, obj_sel={"matchLabels": {"check": "yes"}})
        self.mode["kind"] = "deny403"
        code, _, _ = self.api("POST", "/api/v1/namespaces/default/configmaps",
                              {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s1", "labels": {"check": "yes"}}})
        self.assertEqual(code, 201)  # namespace not selected
        code, _, _ = self.api("POST", "/api/v1/namespaces/guarded/configmaps",
                              {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s2"}})
        self.assertEqual(code, 201)  # object not selected
        code, body, _ = self.api("POST", "/api/v1/namespaces/guarded/configmaps",
                                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s3", "labels": {"check": "yes"}}})
        self.assertEqual((code, body["message"]), (403, 'admission webhook "check.nodegate.io" denied the request: nope'))

    def test_service_reference_and_custom_resource_status_subresource_rule(self):
        self.register([{"operations": ["UPDATE"], "apiGroups": ["nodegate.io"], "apiVersions": ["*"],
                        "resources": ["nodedisruptions/status"], "scope": "Cluster"}], service=True)
        self.ok("POST", "/apis/nodegate.io/v1alpha1/nodedisruptions",
                {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption", "metadata": {"name": "wst"}, "spec": {}})
        self.ok("PATCH", "/apis/nodegate.io/v1alpha1/nodedisruptions/wst", {"spec": {"priority": 1}},
                "application/merge-patch+json")
        self.assertEqual(self.wh.reviews, [])  # main resource does not match nodedisruptions/status
        self.ok("PATCH", "/apis/nodegate.io/v1alpha1/nodedisruptions/wst/status", {"status": {"state": "Granted"}},
                "application/merge-patch+json", user="system:serviceaccount:nodegate:nodegate")
        self.assertEqual(len(self.wh.reviews), 1)
        req = self.wh.reviews[0]["request"]
        self.assertEqual((req["subResource"], req["resource"]["resource"]), ("status", "nodedisruptions"))
        self.assertEqual(req["userInfo"]["username"], "system:serviceaccount:nodegate:nodegate")
        self.assertIn("system:serviceaccounts:nodegate", req["userInfo"]["groups"])

    def test_mutating_webhook_json_patch_is_applied_before_validation(self):
        orig = self.wh.behaviour

        def mutate(review):
            if review["request"]["kind"]["kind"] == "ConfigMap":
                p = base64.b64encode(json.dumps([{"op": "add", "path": "/data", "value": {"mutated": "yes"}}]).encode()).decode()
                return 200, allow(review, patch=p, patchType="JSONPatch"), 0
            return orig(review)
        self.wh.behaviour = mutate
        try:
            self.ok("POST", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", {
                "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
                "metadata": {"name": "mut"},
                "webhooks": [{"name": "mutate.nodegate.io", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                              "clientConfig": {"url": "https://127.0.0.1:%d/mutate" % self.wh.port,
                                               "caBundle": self.wh.ca_b64},
                              "rules": self.CM_RULE}]})
            out = self.ok("POST", "/api/v1/namespaces/default/configmaps",
                          {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mutme"}})
            self.assertEqual(out["data"], {"mutated": "yes"})
        finally:
            self.wh.behaviour = orig
            self.api("DELETE", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/mut")

    def test_match_policy_equivalent_matches_other_served_versions(self):
        crd = json.loads(json.dumps(CRD))
        crd["metadata"]["name"] = "widgets.example.io"
        crd["spec"]["group"] = "example.io"
        crd["spec"]["names"] = {"plural": "widgets", "kind": "Widget"}
        v1 = json.loads(json.dumps(crd["spec"]["versions"][0]))
        v1["name"], v1["storage"] = "v1", False
        crd["spec"]["versions"].append(v1)
        self.ok("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        rule = [{"operations": ["CREATE"], "apiGroups": ["example.io"], "apiVersions": ["v1alpha1"],
                 "resources": ["widgets"]}]
        self.register(rule, match_policy="Exact")
        self.ok("POST", "/apis/example.io/v1/widgets",
                {"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w1"}})
        self.assertEqual(self.wh.reviews, [])
        self.api("DELETE", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/test")
        self.register(rule)  # default matchPolicy: Equivalent
        self.ok("POST", "/apis/example.io/v1/widgets",
                {"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w2"}})
        req = self.wh.reviews[0]["request"]
        self.assertEqual(req["resource"]["version"], "v1alpha1")
        self.assertEqual(req["requestResource"]["version"], "v1")
        self.assertEqual(req["object"]["apiVersion"], "example.io/v1alpha1")
        self.assertEqual(req["requestKind"]["version"], "v1")

    def test_webhook_configurations_themselves_are_never_sent_to_webhooks(self):
        self.register([{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}])
        self.mode["kind"] = "deny403"
        code, _, _ = self.api("DELETE", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/test")
        self.assertEqual(code, 200)

    def test_invalid_webhook_configuration_is_422(self):
        code, body, _ = self.api("POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
                                 {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                                  "metadata": {"name": "bad"},
                                  "webhooks": [{"name": "x", "clientConfig": {"url": "http://127.0.0.1/"}}]})
        self.assertEqual(code, 422)
        self.assertIn("sideEffects", body["message"])


# ---------------------------------------------------------------------------------- RBAC
class TestRBACAndImpersonation(ServerTestCase):
    RBAC = "/apis/rbac.authorization.k8s.io/v1/"

    def test_unbound_user_is_forbidden_with_the_real_message(self):
        code, body, _ = self.api("GET", "/api/v1/namespaces/default/pods", user="bob")
        self.assertEqual((code, body["reason"]), (403, "Forbidden"))
        self.assertEqual(body["message"], 'pods is forbidden: User "bob" cannot list resource "pods" in API group "" '
                         'in the namespace "default"')
        self.assertEqual(body["details"], {"name": "", "group": "", "kind": "pods"})
        code, body, _ = self.api("GET", "/api/v1/nodes/x", user="bob")
        self.assertEqual(body["message"], 'nodes "x" is forbidden: User "bob" cannot get resource "nodes" in API '
                         'group "" at the cluster scope')
        rc, out, err = self.kubectl("get", "pods", user="bob")
        self.assertIn('Error from server (Forbidden): pods is forbidden: User "bob" cannot list resource "pods"', err)

    def test_discovery_is_allowed_to_every_authenticated_user(self):
        code, _, _ = self.api("GET", "/apis", user="bob")
        self.assertEqual(code, 200)
        rc, out, err = self.kubectl("api-resources", user="bob")
        self.assertEqual(rc, 0, err)

    def test_rolebinding_grants_only_in_its_namespace_and_subresources_are_separate(self):
        self.ok("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "rb"}})
        self.ok("POST", self.RBAC + "namespaces/rb/roles", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "podreader"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]})
        self.ok("POST", self.RBAC + "namespaces/rb/rolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "bob-read"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "podreader"},
            "subjects": [{"kind": "User", "name": "bob"}]})
        self.assertEqual(self.api("GET", "/api/v1/namespaces/rb/pods", user="bob")[0], 200)
        self.assertEqual(self.api("GET", "/api/v1/namespaces/default/pods", user="bob")[0], 403)
        self.assertEqual(self.api("GET", "/api/v1/pods", user="bob")[0], 403)
        self.ok("POST", "/api/v1/namespaces/rb/pods", pod("rbp", "n1", ns="rb"))
        code, body, _ = self.api("POST", "/api/v1/namespaces/rb/pods/rbp/eviction",
                                 {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "rbp"}}, user="bob")
        self.assertEqual(code, 403)
        self.assertIn('cannot create resource "pods/eviction" in API group "" in the namespace "rb"', body["message"])

    def test_service_account_subject_and_aggregated_edit_role(self):
        sa = "system:serviceaccount:nodegate:nodegate"
        self.assertEqual(self.api("GET", "/api/v1/namespaces/default/configmaps", user=sa)[0], 403)
        self.ok("POST", self.RBAC + "namespaces/default/rolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "ng-edit"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
            "subjects": [{"kind": "ServiceAccount", "name": "nodegate", "namespace": "nodegate"}]})
        self.assertEqual(self.api("GET", "/api/v1/namespaces/default/configmaps", user=sa)[0], 200)
        self.assertEqual(self.api("GET", "/api/v1/nodes", user=sa)[0], 403)

    def test_impersonation_needs_the_impersonate_verb(self):
        code, body, _ = self.api("GET", "/api/v1/namespaces/default/pods", headers={"Impersonate-User": "bob"})
        self.assertEqual(code, 403)  # admin may impersonate; bob may not list
        self.assertIn('User "bob" cannot list', body["message"])
        code, body, _ = self.api("GET", "/api/v1/namespaces/default/pods", user="bob",
                                 headers={"Impersonate-User": "admin"})
        self.assertEqual(code, 403)
        self.assertEqual(body["message"], 'users "admin" is forbidden: User "bob" cannot impersonate resource "users" '
                         'in API group "" at the cluster scope')
        rc, out, err = self.kubectl("get", "nodes", "--as=bob")
        self.assertIn('User "bob" cannot list resource "nodes"', err)
        rc, out, err = self.kubectl("get", "nodes", "--as=carol", "--as-group=system:masters")
        self.assertEqual(rc, 0, err)

    def test_kubectl_auth_can_i_uses_access_reviews(self):
        rc, out, err = self.kubectl("auth", "can-i", "list", "pods", user="bob")
        self.assertEqual(out.strip(), "no")
        rc, out, err = self.kubectl("auth", "can-i", "list", "pods")
        self.assertEqual(out.strip(), "yes")
        sar = self.ok("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": "x", "groups": ["system:masters"], "resourceAttributes": {"verb": "delete", "resource": "nodes"}}})
        self.assertTrue(sar["status"]["allowed"])

    def test_kubectl_auth_can_i_list_uses_rules_review(self):
        rc, out, err = self.kubectl("auth", "can-i", "--list", user="bob")
        self.assertEqual(rc, 0, err)
        self.assertIn("selfsubjectaccessreviews.authorization.k8s.io", out)
        self.assertNotIn("pods ", out)

    def test_authz_log_records_every_decision(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "authz.jsonl")
            with ServerProcess(authz_log=path) as srv:
                self.assertEqual(srv.api("GET", "/api/v1/namespaces/default/pods/p1", user="bob")[0], 403)
                self.assertEqual(srv.api("GET", "/api/v1/nodes")[0], 200)
                self.assertEqual(srv.api("GET", "/apis", user="bob")[0], 200)
                code, _, _ = srv.api("POST", "/api/v1/namespaces/default/pods/p1/eviction",
                                     {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p1"}},
                                     user="system:serviceaccount:nodegate:nodegate")
                self.assertEqual(code, 403)
                bob = srv.authz_decisions("bob")
                for e in bob:
                    self.assertIsInstance(e.pop("groups"), list)
                self.assertEqual(bob[0], {"user": "bob", "verb": "get",
                                          "apiGroup": "", "resource": "pods", "subresource": "", "namespace": "default",
                                          "name": "p1", "allowed": False})
                self.assertEqual(bob[1], {"user": "bob", "verb": "get",
                                          "path": "/apis", "allowed": True})
                admin = srv.authz_decisions("admin")
                self.assertEqual([(e["verb"], e["resource"], e["allowed"]) for e in admin], [("list", "nodes", True)])
                sa = srv.authz_decisions("system:serviceaccount:nodegate:nodegate")
                self.assertEqual([(e["verb"], e["resource"], e["subresource"], e["name"], e["allowed"]) for e in sa],
                                 [("create", "pods", "eviction", "p1", False)])
        with ServerProcess() as srv:  # opt-in: nothing recorded without it
            self.assertEqual(srv.authz_decisions(), [])

    def test_journal_records_every_write_in_commit_order(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "journal.jsonl")
            node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "jn1"}}
            with ServerProcess(extra_args=["--journal", path]) as srv:
                self.assertEqual(srv.api("POST", "/api/v1/nodes", node)[0], 201)
                self.assertEqual(srv.api("PATCH", "/api/v1/nodes/jn1", {"spec": {"unschedulable": True}},
                                         ctype="application/merge-patch+json")[0], 200)
                self.assertEqual(srv.api("GET", "/api/v1/nodes/jn1")[0], 200)  # reads are not written
                self.assertEqual(srv.api("DELETE", "/api/v1/nodes/jn1")[0], 200)
                with open(path, encoding="utf-8") as f:
                    lines = [json.loads(x) for x in f]
            initial = [e for e in lines if e["type"] == "INITIAL"]
            writes = [e for e in lines if e["type"] != "INITIAL" and e["resource"] == "/nodes"]
            # The state at start comes first: the namespaces the server makes, among others.
            self.assertIn("default", [e["object"]["metadata"]["name"] for e in initial if e["resource"] == "/namespaces"])
            self.assertEqual(lines[:len(initial)], initial)
            self.assertEqual([(e["type"], e["by"]["verb"], e["by"]["user"]) for e in writes],
                             [("ADDED", "POST", "admin"), ("MODIFIED", "PATCH", "admin"), ("DELETED", "DELETE", "admin")])
            self.assertEqual(writes[1]["by"]["path"], "/api/v1/nodes/jn1")
            self.assertTrue(writes[1]["object"]["spec"]["unschedulable"])
            rvs = [e["rv"] for e in lines if e["type"] != "INITIAL"]
            self.assertEqual(rvs, sorted(rvs))
            self.assertEqual([int(e["object"]["metadata"]["resourceVersion"]) for e in writes], [e["rv"] for e in writes])

    def test_always_allow_mode_is_available(self):
        with ServerProcess(extra_args=["--authorization", "always-allow"]) as srv:
            self.assertEqual(srv.api("GET", "/api/v1/pods", user="bob")[0], 200)


class TestTokenAndAccessReviews(ServerTestCase):
    """What an authenticating proxy (nodegate's admin endpoints, kube-rbac-proxy, controller-runtime's
    metrics filter) asks: TokenReview for the caller's token, SubjectAccessReview for a path."""
    RBAC = "/apis/rbac.authorization.k8s.io/v1/"
    TR = "/apis/authentication.k8s.io/v1/tokenreviews"
    SAR = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
    SA = "system:serviceaccount:nodegate:nodegate"

    def token_review(self, token, user="admin", audiences=None, expect=(201,)):
        spec = {"token": token}
        if audiences is not None:
            spec["audiences"] = audiences
        return self.ok("POST", self.TR, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                                         "spec": spec}, user=user, expect=expect)

    def sar(self, spec, user="admin"):
        return self.ok("POST", self.SAR, {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                                          "spec": spec}, user=user)["status"]

    def bind(self, name, role, subject):
        self.ok("POST", self.RBAC + "clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [subject]})

    def test_token_review_authenticates_as_requests_are(self):
        tr = self.token_review(self.srv.tokens["bob"])
        self.assertEqual((tr["apiVersion"], tr["kind"]), ("authentication.k8s.io/v1", "TokenReview"))
        st = tr["status"]
        self.assertIs(st["authenticated"], True)
        # the same identity, uid included, as the token's own requests have
        who = self.ok("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                      {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}, user="bob")
        self.assertEqual(st["user"], who["status"]["userInfo"])
        self.assertEqual(st["user"]["username"], "bob")
        self.assertEqual(st["user"]["groups"], ["system:authenticated"])
        self.assertEqual(st["audiences"], ["https://kubernetes.default.svc.cluster.local"])
        st = self.token_review(self.srv.tokens[self.SA], audiences=["nodegate"])["status"]
        self.assertEqual(st["user"]["username"], self.SA)
        self.assertEqual(st["user"]["groups"], ["system:serviceaccounts", "system:serviceaccounts:nodegate",
                                                "system:authenticated"])
        self.assertEqual(st["audiences"], ["nodegate"])
        # unknown: authenticated and error are omitempty in kube-apiserver's answer
        self.assertEqual(self.token_review("not-a-token")["status"], {"user": {}})
        self.assertEqual(self.token_review(" " + self.srv.tokens["bob"])["status"], {"user": {}})
        body = self.token_review("", expect=(400,))
        self.assertEqual(body["message"], "token is required for TokenReview in authentication")

    def test_token_review_needs_create_tokenreviews(self):
        code, body, _ = self.api("POST", self.TR, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                                                   "spec": {"token": self.srv.tokens["bob"]}}, user=self.SA)
        self.assertEqual(code, 403)
        self.assertEqual(body["message"], 'tokenreviews.authentication.k8s.io is forbidden: User "%s" cannot create '
                         'resource "tokenreviews" in API group "authentication.k8s.io" at the cluster scope' % self.SA)
        code, _, _ = self.api("POST", self.SAR, {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                                                 "spec": {"user": "bob", "nonResourceAttributes": {
                                                     "path": "/metrics", "verb": "get"}}}, user=self.SA)
        self.assertEqual(code, 403)
        # what nodegate is bound to when it authenticates its own callers
        role = self.ok("GET", self.RBAC + "clusterroles/system:auth-delegator")
        self.assertEqual(role["rules"], [
            {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
            {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]}])
        self.bind("nodegate-auth-delegator", "system:auth-delegator",
                  {"kind": "ServiceAccount", "name": "nodegate", "namespace": "nodegate"})
        st = self.token_review(self.srv.tokens["bob"], user=self.SA)["status"]
        self.assertEqual(st["user"]["username"], "bob")
        self.assertIs(self.sar({"user": "bob", "groups": ["system:authenticated"],
                                "nonResourceAttributes": {"path": "/healthz", "verb": "get"}}, user=self.SA)["allowed"],
                      True)

    def test_subject_access_review_matches_non_resource_urls_like_rbac(self):
        self.ok("POST", self.RBAC + "clusterroles", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "ng-debug"},
            "rules": [{"nonResourceURLs": ["/metrics", "/debug/*", "/v1/eval**"], "verbs": ["get", "post"]}]})
        self.bind("alice-ng-debug", "ng-debug", {"kind": "User", "name": "alice"})
        alice = {"user": "alice", "groups": ["system:authenticated"]}

        def allowed(path, verb="get", who=alice):
            return self.sar(dict(who, nonResourceAttributes={"path": path, "verb": verb})).get("allowed")
        self.assertTrue(allowed("/metrics"))
        self.assertTrue(allowed("/metrics", "post"))
        self.assertFalse(allowed("/metrics", "delete"))
        self.assertFalse(allowed("/metrics/x"))      # exact without a '*'
        self.assertFalse(allowed("/metricsx"))
        self.assertTrue(allowed("/debug/cache"))
        self.assertTrue(allowed("/debug/"))
        self.assertFalse(allowed("/debug"))          # the prefix is "/debug/"
        self.assertTrue(allowed("/v1/evaluate"))     # every trailing '*' is cut: prefix "/v1/eval"
        self.assertFalse(allowed("/debug/cache", who={"user": "bob", "groups": ["system:authenticated"]}))
        st = self.sar(dict(alice, nonResourceAttributes={"path": "/metrics", "verb": "get"}))
        self.assertEqual(st, {"allowed": True, "reason": "allowed by RBAC"})
        self.assertEqual(self.sar(dict(alice, nonResourceAttributes={"path": "/x", "verb": "get"})), {"allowed": False})
        # a group subject, and the bootstrap roles bound to system:authenticated: the review's subject
        # is in exactly the groups it names
        self.assertFalse(allowed("/healthz", who={"user": "alice"}))
        self.assertTrue(allowed("/healthz", who={"user": "alice", "groups": ["system:authenticated"]}))
        self.assertTrue(allowed("/anything", who={"groups": ["system:masters"]}))
        code, body, _ = self.api("POST", self.SAR, {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}})
        self.assertEqual(code, 422)
        self.assertEqual(body["message"], 'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: '
                         'Invalid value: "": at least one of user or group must be specified')

    def test_kubectl_create_token_review(self):
        doc = ("apiVersion: authentication.k8s.io/v1\nkind: TokenReview\nspec:\n  token: %s\n"
               % self.srv.tokens["alice"])
        rc, out, err = self.kubectl("create", "-f", "-", "-o", "json", input=doc)
        self.assertEqual(rc, 0, err)
        tr = json.loads(out)
        self.assertEqual(tr["kind"], "TokenReview")
        self.assertIs(tr["status"]["authenticated"], True)
        self.assertEqual(tr["status"]["user"]["username"], "alice")
        rc, out, err = self.kubectl("create", "-f", "-", input=doc.replace(self.srv.tokens["alice"], "nope"))
        self.assertEqual(rc, 0, err)
        self.assertIn("tokenreview.authentication.k8s.io/", out)
        self.assertIn("created", out)
        rc, out, err = self.kubectl("create", "-f", "-", input=doc, user="bob")
        self.assertNotEqual(rc, 0)
        self.assertIn('User "bob" cannot create resource "tokenreviews"', err)
        rc, out, err = self.kubectl("api-resources", "--api-group=authentication.k8s.io", "-o", "name")
        self.assertEqual(rc, 0, err)
        self.assertIn("tokenreviews.authentication.k8s.io", out.split())


# ---------------------------------------------------------------------------------- faults, fixtures
class TestFaultsAndRestart(ServerTestCase):
    def test_injected_conflict_and_error_are_count_limited(self):
        self.srv.control("faults", {"path": "^/api/v1/nodes$", "method": "GET", "code": 500, "count": 2})
        self.assertEqual(self.api("GET", "/api/v1/nodes")[0], 500)
        self.assertEqual(self.api("GET", "/api/v1/nodes")[0], 500)
        self.assertEqual(self.api("GET", "/api/v1/nodes")[0], 200)
        self.srv.control("faults", {"path": "configmaps/x409", "method": "PATCH", "code": 409, "count": 1})
        self.ok("POST", "/api/v1/namespaces/default/configmaps",
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x409"}})
        code, body, _ = self.api("PATCH", "/api/v1/namespaces/default/configmaps/x409", {"data": {"a": "b"}},
                                 "application/merge-patch+json")
        self.assertEqual((code, body["reason"]), (409, "Conflict"))
        self.srv.control("faults", method="DELETE")

    def test_injected_retry_after_is_in_the_status_and_the_header(self):
        self.srv.control("faults", {"path": "^/api/v1/namespaces/default/configmaps$", "method": "GET", "code": 429,
                                    "count": 1, "message": "slow down", "retryAfter": 4})
        code, body, resp = self.api("GET", "/api/v1/namespaces/default/configmaps")
        self.assertEqual((code, body["reason"], body["message"]), (429, "TooManyRequests", "slow down"))
        self.assertEqual(body["details"], {"retryAfterSeconds": 4})
        self.assertEqual(resp.getheader("Retry-After"), "4")
        self.assertEqual(self.api("GET", "/api/v1/namespaces/default/configmaps")[0], 200)

    def test_injected_fault_on_watches_only(self):
        """A rule with `query` takes only requests whose query string matches: a path's watches
        fail while its lists are served."""
        self.srv.control("faults", {"path": "^/api/v1/nodes$", "query": "watch=", "method": "GET",
                                    "code": 500, "count": -1})
        try:
            self.assertEqual(self.api("GET", "/api/v1/nodes?watch=1")[0], 500)
            self.assertEqual(self.api("GET", "/api/v1/nodes?limit=1")[0], 200)
            self.assertEqual(self.api("GET", "/api/v1/nodes?watch=1&resourceVersion=1")[0], 500)
        finally:
            self.srv.control("faults", method="DELETE")

    def test_injected_latency(self):
        self.srv.control("faults", {"path": "^/api/v1/namespaces$", "latencyMs": 500, "count": 1})
        t0 = time.monotonic()
        self.assertEqual(self.api("GET", "/api/v1/namespaces")[0], 200)
        self.assertGreaterEqual(time.monotonic() - t0, 0.5)

    def test_control_needs_admin_token(self):
        code, _, _ = self.api("POST", "/_control/compact", {}, user="alice")
        self.assertEqual(code, 403)

    def test_restart_keeps_state_and_drops_watches(self):
        self.ok("POST", "/api/v1/namespaces/default/configmaps",
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keep"}})
        rv = self.ok("GET", "/api/v1/namespaces/default/configmaps")["metadata"]["resourceVersion"]
        w = self.srv.watch("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=" + rv)
        code, _, _ = self.srv.control("restart", {"downSeconds": 1})
        self.assertEqual(code, 202)
        self.assertIsNone(w.next())
        w.close()
        time.sleep(0.3)
        with self.assertRaises(OSError):
            self.api("GET", "/api/v1/namespaces/default/configmaps/keep", timeout=2)
        self.wait_for(lambda: self._get_ok("/api/v1/namespaces/default/configmaps/keep"), 10, "server back")
        # resource versions survive the restart: resuming the watch works
        w = self.srv.watch("/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1&resourceVersion=" + rv)
        self.assertEqual(w.status, 200)
        self.assertIsNone(w.next())
        w.close()

    def _get_ok(self, path):
        try:
            return self.api("GET", path, timeout=2)[0] == 200
        except OSError:
            return False


FIXTURE_F = """\
apiVersion: v1
kind: Node
metadata:
  name: node1
  labels: {testselect: test1, kubernetes.io/hostname: node1}
status:
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: v1
kind: Node
metadata:
  name: node2
  labels: {testselect: test1, kubernetes.io/hostname: node2}
status:
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: node1-pv-local}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  local: {path: /mnt}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - key: kubernetes.io/hostname
          operator: In
          values: [node1]
---
apiVersion: v1
kind: Pod
metadata:
  name: pod1
  namespace: default
  labels: {app: db}
spec:
  nodeName: node1
  containers: [{name: db, image: postgres}]
status:
  phase: Running
  conditions: [{type: Ready, status: "True"}]
"""


REPO_CRDS = os.path.join(HERE, "..", "..", "manifests", "crds")


@unittest.skipUnless(os.path.isdir(REPO_CRDS), "manifests/crds not present")
def _rule_crd(plural, spec_schema, kind=None, group="cel.example.io", root_rules=None, status=False):
    kind = kind or plural[:-1].capitalize()
    root = {"type": "object", "properties": {"spec": spec_schema}}
    if status:
        root["properties"]["status"] = {"type": "object", "properties": {"phase": {"type": "string"}}}
    if root_rules:
        root["x-kubernetes-validations"] = root_rules
    v = {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": root}}
    if status:
        v["subresources"] = {"status": {}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "%s.%s" % (plural, group)},
            "spec": {"group": group, "scope": "Cluster", "names": {"plural": plural, "kind": kind},
                     "versions": [v]}}


class TestCelAndCRDChecks(ServerTestCase):
    """CRDs checked as apiextensions-apiserver does; x-kubernetes-validations evaluated on writes."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        for f in sorted(os.listdir(REPO_CRDS)):
            if f.endswith(".json"):
                with open(os.path.join(REPO_CRDS, f)) as fh:
                    code, body, _ = cls.srv.api("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                                json.load(fh))
                assert code == 201, (f, body)

    def create_crd(self, crd, expect=201):
        code, body, _ = self.api("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        self.assertEqual(code, expect, body)
        return body

    def refused(self, method, path, body, ctype="application/json"):
        code, out, _ = self.api(method, path, body, ctype)
        self.assertEqual(code, 422, out)
        return out

    def test_size_on_an_object_is_refused_at_create_with_the_compile_error(self):
        sel = {"type": "object", "properties": {"matchLabels": {"type": "object",
                                                               "additionalProperties": {"type": "string"}}}}
        crd = _rule_crd("sizeobjs", {"type": "object", "properties": {"sel": sel},
                                     "x-kubernetes-validations": [{"rule": "has(self.sel)"},
                                                                  {"rule": "size(self.sel) > 0"}]})
        out = self.create_crd(crd, 422)
        cause = out["details"]["causes"][0]
        self.assertEqual(cause["field"], "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].rule")
        self.assertIn('Invalid value: apiextensions.ValidationRule{Rule:"size(self.sel) > 0", Message:""', cause["message"])
        self.assertRegex(cause["message"], r"compilation failed: ERROR: <input>:1:5: found no matching overload for "
                                           r"'size' applied to '\(selfType\d+\.sel\)'\n \| size\(self\.sel\) > 0\n \| \.\.\.\.\^")
        self.assertEqual(self.api("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/sizeobjs.cel.example.io")[0], 404)
        # on a map and on a list size() has overloads
        crd = _rule_crd("sizemaps", {"type": "object", "properties": {"sel": sel, "l": {"type": "array", "items": {"type": "string"}}},
                                     "x-kubernetes-validations": [{"rule": "size(self.sel.matchLabels) > 0 || size(self.l) > 0"}]})
        self.create_crd(crd)
        base = "/apis/cel.example.io/v1/sizemaps"
        self.ok("POST", base, {"apiVersion": "cel.example.io/v1", "kind": "Sizemap", "metadata": {"name": "a"},
                               "spec": {"sel": {"matchLabels": {"x": "y"}}, "l": []}})
        out = self.refused("POST", base, {"apiVersion": "cel.example.io/v1", "kind": "Sizemap", "metadata": {"name": "b"},
                                          "spec": {"sel": {"matchLabels": {}}, "l": []}})
        self.assertEqual(out["message"], 'Sizemap.cel.example.io "b" is invalid: spec: Invalid value: "object": '
                                         'failed rule: size(self.sel.matchLabels) > 0 || size(self.l) > 0')

    def test_rules_calling_unimplemented_kubernetes_libraries_are_accepted_unchecked(self):
        crd = _rule_crd("quantities", {"type": "object", "properties": {"q": {"type": "string"},
                                                                         "l": {"type": "array", "items": {"type": "integer"}}},
                                       "x-kubernetes-validations": [
                                           {"rule": "quantity(self.q).isGreaterThan(quantity('0'))"},
                                           {"rule": "self.l.isSorted() && self.l.sum() < 10", "message": "sorted, small"}]})
        self.create_crd(crd)
        base = "/apis/cel.example.io/v1/quantities"
        self.ok("POST", base, {"apiVersion": "cel.example.io/v1", "kind": "Quantitie", "metadata": {"name": "a"},
                               "spec": {"q": "-1", "l": [1, 2]}})
        out = self.refused("POST", base, {"apiVersion": "cel.example.io/v1", "kind": "Quantitie",
                                          "metadata": {"name": "b"}, "spec": {"q": "1", "l": [2, 1]}})
        self.assertIn('spec: Invalid value: "object": sorted, small', out["message"])

    def test_structural_schema_and_extension_rules_at_create_and_update(self):
        crd = _rule_crd("structs", {"type": "object", "properties": {
            "a": {"properties": {"x": {"type": "string"}}},
            "b": {"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": {"type": "string"}},
            "c": {"type": "array"},
            "d": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object", "properties": {
                "k": {"type": "string"}}}},
            "e": {"type": "string", "x-kubernetes-map-type": "atomic"},
            "f": {"type": "integer", "default": "three"},
            "g": {"$ref": "#/definitions/x"}}})
        out = self.create_crd(crd, 422)
        got = {(c["field"], c["message"]) for c in out["details"]["causes"]}
        p = "spec.validation.openAPIV3Schema.properties[spec].properties"
        for want in [(p + "[a].type", "Required value: must not be empty for specified object fields"),
                     (p + "[b].additionalProperties", "Forbidden: additionalProperties and properties are mutual exclusive"),
                     (p + "[c].items", "Required value: must be specified"),
                     (p + "[d].x-kubernetes-list-map-keys", "Required value: must not be empty if x-kubernetes-list-type is map"),
                     (p + "[e].x-kubernetes-map-type", 'Invalid value: "atomic": must only be used if type is object'),
                     (p + "[g].$ref", "Forbidden: $ref is not supported")]:
            self.assertIn(want, got)
        self.assertTrue(any(f == p + "[f].default" and "must be of type integer" in m for f, m in got), got)
        meta = _rule_crd("metas", {"type": "object"})
        meta["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["metadata"] = {
            "type": "object", "properties": {"labels": {"type": "object"}}}
        out = self.create_crd(meta, 422)
        self.assertEqual(out["details"]["causes"][0]["field"], "spec.validation.openAPIV3Schema.properties[metadata]")
        # an update is checked too
        good = self.create_crd(_rule_crd("upds", {"type": "object", "properties": {"n": {"type": "integer"}}}))
        good["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = [
            {"rule": "self.n == 'x'", "reason": "Wrong"}]
        out = self.refused("PUT", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/upds.cel.example.io", good)
        got = {c["field"]: c["message"] for c in out["details"]["causes"]}
        xv = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0]"
        self.assertIn("found no matching overload for '_==_' applied to '(int, string)'", got[xv + ".rule"])
        self.assertTrue(got[xv + ".reason"].startswith('Unsupported value: "Wrong"'))

    def nd(self, name, spec):
        return {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption", "metadata": {"name": name}, "spec": spec}

    def test_nodedisruption_rules(self):
        base = "/apis/nodegate.io/v1alpha1/nodedisruptions"
        empty = "an empty nodeSelector would select every node"
        for i, sel in enumerate([{"matchLabels": {}}, {}, {"matchExpressions": []}]):
            out = self.refused("POST", base, self.nd("empty-%d" % i, {"type": "maintenance", "nodeSelector": sel}))
            self.assertIn('spec: Invalid value: "object": ' + empty, out["message"])
        self.ok("POST", base, self.nd("sel", {"type": "maintenance", "nodeSelector": {"matchLabels": {"pool": "a"}}}))
        self.ok("POST", base, self.nd("expr", {"type": "maintenance", "nodeSelector": {"matchExpressions": [
            {"key": "pool", "operator": "In", "values": ["a"]}]}}))
        self.ok("POST", base, self.nd("names", {"type": "maintenance", "nodeNames": ["n1"]}))
        out = self.refused("POST", base, self.nd("both", {"type": "maintenance", "nodeNames": ["n1"],
                                                          "nodeSelector": {"matchLabels": {"a": "b"}}}))
        self.assertIn("exactly one of nodeSelector and nodeNames is required", out["message"])
        self.refused("POST", base, self.nd("neither", {"type": "maintenance"}))
        # an empty list of names names no node (minItems)
        out = self.refused("POST", base, self.nd("none", {"nodeNames": []}))
        self.assertIn("spec.nodeNames", out["message"])
        # a merge patch that empties the selector is refused like a create
        out = self.refused("PATCH", base + "/sel", {"spec": {"nodeSelector": {"matchLabels": {"pool": None}}}},
                           "application/merge-patch+json")
        self.assertIn(empty, out["message"])

    def test_nodegateconfig_is_a_singleton_named_default(self):
        base = "/apis/nodegate.io/v1alpha1/nodegateconfigs"
        cfg = {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig", "metadata": {"name": "other"}, "spec": {}}
        out = self.refused("POST", base, cfg)
        self.assertEqual(out["message"], 'NodeGateConfig.nodegate.io "other" is invalid: <nil>: Invalid value: "object": '
                                         'nodegate reads only the NodeGateConfig named default; name it default')
        cfg["metadata"]["name"] = "default"
        self.ok("POST", base, cfg)
        cfg = self.ok("GET", base + "/default")
        cfg["spec"]["alertGate"] = {"query": "up == 0", "alertNameRegex": "x"}
        out = self.refused("PUT", base + "/default", cfg)
        self.assertIn("spec.alertGate: Invalid value: \"object\": exactly one of query and alertNameRegex is required",
                      out["message"])

    def test_noderemediation_name_is_at_most_63_characters(self):
        crd = self.ok("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/noderemediations.nodegate.io")
        v = crd["spec"]["versions"][0]["name"]
        base = "/apis/nodegate.io/%s/noderemediations" % v
        sch = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        spec = {k: None for k in sch.get("required", [])}
        for k in spec:
            t = sch["properties"][k].get("type")
            spec[k] = {"string": "x", "integer": 1, "boolean": True, "array": [], "object": {}}.get(t, "x")
        rem = {"apiVersion": "nodegate.io/" + v, "kind": "NodeRemediation", "metadata": {"name": "r" * 64}, "spec": spec}
        code, out, _ = self.api("POST", base, rem)
        self.assertEqual(code, 422, out)
        self.assertIn("<nil>: Invalid value: \"object\": the name of a NodeRemediation is at most 63 characters", out["message"])
        rem["metadata"]["name"] = "r" * 63
        code, out2, _ = self.api("POST", base, rem)
        self.assertNotIn("at most 63 characters", json.dumps(out2))

    def test_budget_rules(self):
        base = "/apis/nodegate.io/v1alpha1/nodedisruptionbudgets"
        nb = {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget", "metadata": {"name": "b"},
              "spec": {"nodeSelector": {"matchLabels": {"a": "b"}}}}
        out = self.refused("POST", base, nb)
        self.assertIn("at least one of maxDisruptedNodes, minUndisruptedNodes and topologyKey is required", out["message"])
        nb["spec"]["topologyKey"] = "zone"
        out = self.refused("POST", base, nb)
        self.assertIn("topologyKey goes with maxDisruptedDomains", out["message"])
        nb["spec"]["maxDisruptedDomains"] = 1
        self.ok("POST", base, nb)
        adb = {"apiVersion": "nodegate.io/v1alpha1", "kind": "ApplicationDisruptionBudget",
               "metadata": {"name": "a", "namespace": "default"}, "spec": {}}
        out = self.refused("POST", "/apis/nodegate.io/v1alpha1/namespaces/default/applicationdisruptionbudgets", adb)
        self.assertIn("at least one of podSelector and pvcSelector is required", out["message"])

    def test_transition_rule_message_expression_and_status_writes(self):
        spec = {"type": "object", "properties": {"size": {"type": "integer"}, "name": {"type": "string"}},
                "x-kubernetes-validations": [
                    {"rule": "self.size >= oldSelf.size", "message": "size may not shrink"},
                    {"rule": "self.name.startsWith('ok')", "messageExpression": "'name ' + self.name + ' must start with ok'"},
                    {"rule": "self.size < 100", "messageExpression": "'too big: ' + string(self.size)",
                     "fieldPath": ".size", "reason": "FieldValueForbidden"}]}
        self.create_crd(_rule_crd("grows", spec, status=True,
                                  root_rules=[{"rule": "!has(self.status) || self.status.phase != 'bad'",
                                               "message": "bad phase"}]))
        base = "/apis/cel.example.io/v1/grows"
        obj = {"apiVersion": "cel.example.io/v1", "kind": "Grow", "metadata": {"name": "g"},
               "spec": {"size": 5, "name": "ok-1"}}
        self.ok("POST", base, obj)
        out = self.refused("PATCH", base + "/g", {"spec": {"size": 3}}, "application/merge-patch+json")
        self.assertIn('spec: Invalid value: "object": size may not shrink', out["message"])
        self.ok("PATCH", base + "/g", {"spec": {"size": 7}}, "application/merge-patch+json")
        out = self.refused("PATCH", base + "/g", {"spec": {"name": "nope", "size": 200}}, "application/merge-patch+json")
        causes = {(c["reason"], c["field"], c["message"]) for c in out["details"]["causes"]}
        self.assertIn(("FieldValueInvalid", "spec", 'Invalid value: "object": name nope must start with ok'), causes)
        self.assertIn(("FieldValueForbidden", "spec.size", "Forbidden: too big: 200"), causes)
        # the status subresource goes through the same rules
        out = self.refused("PATCH", base + "/g/status", {"status": {"phase": "bad"}}, "application/merge-patch+json")
        self.assertIn("<nil>: Invalid value: \"object\": bad phase", out["message"])
        self.ok("PATCH", base + "/g/status", {"status": {"phase": "good"}}, "application/merge-patch+json")
        # server-side apply too
        code, out, _ = self.api("PATCH", base + "/g?fieldManager=t&force=true",
                                json.dumps({"apiVersion": "cel.example.io/v1", "kind": "Grow", "metadata": {"name": "g"},
                                            "spec": {"size": 1, "name": "ok"}}), "application/apply-patch+yaml")
        self.assertEqual(code, 422, out)
        self.assertIn("size may not shrink", out["message"])

    def test_kubectl_apply_of_a_bad_resource_shows_the_message(self):
        y = ("apiVersion: nodegate.io/v1alpha1\nkind: NodeGateConfig\nmetadata:\n  name: cluster\nspec: {}\n")
        rc, out, err = self.kubectl("apply", "-f", "-", input=y)
        self.assertNotEqual(rc, 0)
        self.assertIn('The NodeGateConfig "cluster" is invalid: <nil>: Invalid value: "object": nodegate reads only '
                      'the NodeGateConfig named default; name it default', err)

    def positive_n_kind(self, srv, plural):
        """Register a kind whose spec.n must be positive (one CEL rule); returns create(name, n)."""
        crd = _rule_crd(plural, {"type": "object", "properties": {"n": {"type": "integer"}},
                                 "x-kubernetes-validations": [{"rule": "self.n > 0"}]})
        code, body, _ = srv.api("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        self.assertEqual(code, 201, body)
        kind = crd["spec"]["names"]["kind"]

        def create(name, n):
            return srv.api("POST", "/apis/cel.example.io/v1/" + plural,
                           {"apiVersion": "cel.example.io/v1", "kind": kind, "metadata": {"name": name},
                            "spec": {"n": n}})
        return create

    def test_a_dead_evaluator_is_restarted_once_then_writes_fail_with_500(self):
        with ServerProcess() as srv:
            self.assertIsNone(srv.control("cel", method="GET")[1]["pid"])   # not started until needed
            create = self.positive_n_kind(srv, "restarts")
            self.assertEqual(create("a", 1)[0], 201)
            pid = srv.control("cel", method="GET")[1]["pid"]
            os.kill(pid, 9)
            code, body, _ = create("b", 0)
            self.assertEqual(code, 422, body)
            st = srv.control("cel", method="GET")[1]
            self.assertNotEqual(st["pid"], pid)
            self.assertEqual(st["starts"], 2)
            os.kill(st["pid"], 9)
            code, body, _ = create("c", 0)
            self.assertEqual(code, 500, body)
            self.assertIn("CEL validation rules cannot be evaluated", body["message"])
            self.assertEqual(create("d", 5)[0], 500)   # never stored unchecked

    def test_an_evaluator_that_does_not_answer_is_replaced(self):
        with mock.patch.dict(os.environ, {"KTESTAPI_CEL_TIMEOUT": "1"}), ServerProcess() as srv:
            create = self.positive_n_kind(srv, "stalls")
            self.assertEqual(create("a", 1)[0], 201)
            pid = srv.control("cel", method="GET")[1]["pid"]
            os.kill(pid, signal.SIGSTOP)
            try:
                code, body, _ = create("b", 0)   # answered by a new process, rules still applied
            finally:
                try:
                    os.kill(pid, signal.SIGKILL)   # the server has killed it already, unless it failed
                except ProcessLookupError:
                    pass
            self.assertEqual(code, 422, body)
            st = srv.control("cel", method="GET")[1]
            self.assertNotEqual(st["pid"], pid)
            self.assertEqual(st["starts"], 2)


class TestRepositoryCRDs(unittest.TestCase):
    def test_nodegate_crds_load_as_fixtures_and_serve_their_kinds(self):
        files = sorted(os.path.join(REPO_CRDS, f) for f in os.listdir(REPO_CRDS) if f.endswith(".json"))
        with ServerProcess(fixtures=files) as srv:
            kinds = {}
            for f in files:
                with open(f) as fh:
                    crd = json.load(fh)
                spec = crd["spec"]
                v = [x for x in spec["versions"] if x.get("storage")][0]["name"]
                kinds[spec["names"]["kind"]] = ("/apis/%s/%s" % (spec["group"], v), spec["names"]["plural"],
                                                spec["scope"] == "Namespaced")
            self.assertIn("NodeDisruption", kinds)
            base, plural, namespaced = kinds["NodeDisruption"]
            nd = {"apiVersion": base[6:], "kind": "NodeDisruption", "metadata": {"name": "repo-nd", "labels": {"a": "b"}},
                  "spec": {"nodeNames": ["node1"]}}
            rc, out, err = srv.kubectl("apply", "-f", "-", input=json.dumps(nd))
            self.assertEqual(rc, 0, err)
            code, got, _ = srv.api("GET", "%s/%s/repo-nd" % (base, plural))
            self.assertEqual((code, got["metadata"]["labels"], got["spec"]["nodeNames"]), (200, {"a": "b"}, ["node1"]))
            rc, out, err = srv.kubectl("get", "nd")
            self.assertEqual(rc, 0, err)
            self.assertIn("repo-nd", out)
            # The printer columns show plain values, not JSON text.
            code, _, _ = srv.api("PATCH", "%s/%s/repo-nd/status" % (base, plural),
                                 {"status": {"state": "Granted", "disruptedNodes": ["node1", "node2"],
                                             "nodeCount": 2}},
                                 "application/merge-patch+json")
            self.assertEqual(code, 200)
            rc, out, err = srv.kubectl("get", "nd", "repo-nd")
            self.assertEqual(rc, 0, err)
            lines = out.strip().splitlines()
            self.assertEqual(lines[0].split(), ["NAME", "NODE", "NODES", "STATE", "DRAIN", "TYPE", "REQUESTOR", "AGE"])
            self.assertEqual(lines[1].split()[:4], ["repo-nd", "node1", "2", "Granted"])


    def test_printer_columns_evaluate_filters_and_print_the_first_result(self):
        """kubectl get nd / ndb / adb on the repository's CRDs: the DRAIN, VALID and MESSAGE
        columns are condition filters ([?(@.type=="...")]) and print the matching condition's
        field, as kube-apiserver does."""
        files = sorted(os.path.join(REPO_CRDS, f) for f in os.listdir(REPO_CRDS) if f.endswith(".json"))
        g = "/apis/nodegate.io/v1alpha1/"
        now = "2024-01-01T00:00:00Z"

        def cond(typ, status, reason, message=""):
            return {"type": typ, "status": status, "reason": reason, "message": message, "lastTransitionTime": now}
        with ServerProcess(fixtures=files) as srv:
            def ok(method, path, body, ctype="application/json"):
                code, out, _ = srv.api(method, path, body, ctype)
                self.assertIn(code, (200, 201), out)
            ok("POST", g + "nodedisruptions", {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption",
                                               "metadata": {"name": "cols"}, "spec": {"nodeNames": ["node1", "node2"]}})
            ok("PATCH", g + "nodedisruptions/cols/status", {"status": {
                "state": "Granted", "disruptedNodes": ["node1", "node2"], "nodeCount": 2,
                "conditions": [cond("Granted", "True", "Granted", "granted by the gate"),
                               cond("Ready", "False", "Draining", "evicting 3 pods")]}}, "application/merge-patch+json")
            rc, out, err = srv.kubectl("get", "nd", "cols")
            self.assertEqual(rc, 0, err)
            head, row = out.strip().splitlines()
            self.assertEqual(head.split(), ["NAME", "NODE", "NODES", "STATE", "DRAIN", "TYPE", "REQUESTOR", "AGE"])
            self.assertEqual(row.split()[:5], ["cols", "node1", "2", "Granted", "Draining"])
            rc, out, err = srv.kubectl("get", "nd", "cols", "-o", "wide")
            self.assertEqual(rc, 0, err)
            head, row = out.strip().splitlines()
            # MESSAGE: the Granted condition's; DRAIN-MESSAGE, the last column: the Ready one's
            msg, drain_msg = head.index("MESSAGE"), head.index("DRAIN-MESSAGE")
            self.assertEqual(row[msg:drain_msg].strip(), "granted by the gate")
            self.assertEqual(row[drain_msg:].strip(), "evicting 3 pods")
            self.assertIn('["node1","node2"]', row)              # ALL-NODES: one result, a list
            # Table cells as the API returns them: the filter's first match, None when none matches
            code, table, _ = srv.api("GET", g + "nodedisruptions", headers={
                "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
            self.assertEqual(code, 200, table)
            names = [c["name"] for c in table["columnDefinitions"]]
            cells = dict(zip(names, table["rows"][0]["cells"]))
            self.assertEqual((cells["Drain"], cells["Message"], cells["Node"]),
                             ("Draining", "granted by the gate", "node1"))
            ok("POST", g + "nodedisruptions", {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption",
                                               "metadata": {"name": "fresh"}, "spec": {"nodeNames": ["node3"]}})
            code, table, _ = srv.api("GET", g + "nodedisruptions/fresh", headers={
                "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
            self.assertEqual(code, 200, table)
            cells = dict(zip(names, table["rows"][0]["cells"]))
            self.assertEqual((cells["Node"], cells["Drain"], cells["Message"]), (None, None, None))

            ok("POST", g + "nodedisruptionbudgets", {"apiVersion": "nodegate.io/v1alpha1",
                                                     "kind": "NodeDisruptionBudget", "metadata": {"name": "ndb"},
                                                     "spec": {"maxDisruptedNodes": 1, "nodeSelector": {}}})
            ok("PATCH", g + "nodedisruptionbudgets/ndb/status", {"status": {
                "conditions": [cond("Valid", "False", "InvalidSelector", "bad")]}}, "application/merge-patch+json")
            rc, out, err = srv.kubectl("get", "ndb", "ndb")
            self.assertEqual(rc, 0, err)
            head, row = out.strip().splitlines()
            self.assertIn("VALID", head)
            self.assertEqual(row[head.index("VALID"):].split()[0], "InvalidSelector")
            ok("POST", g + "namespaces/default/applicationdisruptionbudgets", {
                "apiVersion": "nodegate.io/v1alpha1", "kind": "ApplicationDisruptionBudget",
                "metadata": {"name": "adb", "namespace": "default"},
                "spec": {"maxDisruptions": 1, "podSelector": {"matchLabels": {"app": "web"}}}})
            ok("PATCH", g + "namespaces/default/applicationdisruptionbudgets/adb/status", {"status": {
                "conditions": [cond("Valid", "True", "Valid")]}}, "application/merge-patch+json")
            rc, out, err = srv.kubectl("get", "adb", "adb", "-n", "default")
            self.assertEqual(rc, 0, err)
            head, row = out.strip().splitlines()
            self.assertIn("VALID", head)
            self.assertEqual(row[head.index("VALID"):].split()[0], "Valid")

    def test_remediation_crds_default_refuse_and_print(self):
        """NodeRemediation and NodeDisruptionTemplate on the repository's CRDs: the schema's
        defaults are applied, malformed rules are refused with the field named, and kubectl get
        prints their columns. (The root CEL rule on the name's length is not evaluated here.)"""
        files = sorted(os.path.join(REPO_CRDS, f) for f in os.listdir(REPO_CRDS) if f.endswith(".json"))
        g = "/apis/nodegate.io/v1alpha1/"
        with ServerProcess(fixtures=files) as srv:
            code, ndt, _ = srv.api("POST", g + "nodedisruptiontemplates", {
                "apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionTemplate", "metadata": {"name": "reboot"},
                "spec": {"type": "repair", "drain": {"force": True}, "operation": {"waitForReboot": True}}})
            self.assertEqual(code, 201, ndt)
            self.assertEqual((ndt["spec"]["priority"], ndt["spec"]["drain"]["evictionStrategy"]), (0, "Evict"))
            nrem = {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeRemediation", "metadata": {"name": "kd"},
                    "spec": {"nodeSelector": {"matchLabels": {"pool": "a"}}, "templateName": "reboot",
                             "rule": {"conditions": [{"type": "example.com/KernelDeadlock", "status": "True"}]}}}
            code, got, _ = srv.api("POST", g + "noderemediations", nrem)
            self.assertEqual(code, 201, got)
            self.assertEqual((got["spec"]["maxConcurrent"], got["spec"]["cooldownSeconds"],
                              got["spec"]["rule"]["conditions"][0]["forSeconds"]), (1, 3600, 0))
            bad = json.loads(json.dumps(nrem))
            bad["metadata"]["name"] = "bad"
            bad["spec"]["rule"]["conditions"] = [{"type": "Ready", "status": "Maybe", "forSeconds": 31536001}]
            bad["spec"]["maxConcurrent"] = "150%"
            bad["spec"]["stormGuard"] = {}
            code, out, _ = srv.api("POST", g + "noderemediations", bad)
            self.assertEqual(code, 422, out)
            fields = sorted(c["field"] for c in out["details"]["causes"])
            self.assertEqual(fields, ["spec.maxConcurrent", "spec.rule.conditions[0].forSeconds",
                                      "spec.rule.conditions[0].status", "spec.stormGuard.maxUnhealthy"])
            bad = dict(nrem, metadata={"name": "none"}, spec=dict(nrem["spec"], rule={"conditions": []}))
            code, out, _ = srv.api("POST", g + "noderemediations", bad)
            self.assertEqual(code, 422, out)
            self.assertIn("spec.rule.conditions in body should have at least 1 items", out["message"])
            for v in ("5", -1, 1000001):  # a count is an integer, a percentage a string
                bad = dict(nrem, metadata={"name": "mc"}, spec=dict(nrem["spec"], maxConcurrent=v))
                code, out, _ = srv.api("POST", g + "noderemediations", bad)
                self.assertEqual(code, 422, (v, out))
            code, out, _ = srv.api("PATCH", g + "noderemediations/kd/status", {"status": {
                "matchedNodes": 3, "unhealthyNodes": 1, "activeCount": 1, "storm": {"active": False},
                "activeRequests": [{"node": "node1", "name": "kd-node1", "since": "2024-01-01T00:00:00Z",
                                    "state": "", "phase": ""}],
                "conditions": [{"type": "Ready", "status": "True", "reason": "Watching",
                                "lastTransitionTime": "2024-01-01T00:00:00Z"}]}}, "application/merge-patch+json")
            self.assertEqual(code, 200, out)
            rc, out, err = srv.kubectl("get", "nrem", "kd", "-o", "wide")
            self.assertEqual(rc, 0, err)
            head, row = out.strip().splitlines()
            self.assertEqual(head.split(), ["NAME", "MATCHED", "UNHEALTHY", "ACTIVE", "STORM", "TEMPLATE", "AGE",
                                            "READY"])
            self.assertEqual(row.split()[:6] + row.split()[-1:], ["kd", "3", "1", "1", "false", "reboot", "Watching"])
            rc, out, err = srv.kubectl("get", "ndt", "reboot", "-o", "wide")
            self.assertEqual(rc, 0, err)
            head, row = out.strip().splitlines()
            self.assertEqual(head.split(), ["NAME", "TYPE", "REQUESTOR", "DRAIN", "AGE", "OPERATION"])
            self.assertEqual(row.split()[:3] + row.split()[-1:], ["reboot", "repair", "Evict", "true"])


class TestPrinterColumnJSONPath(unittest.TestCase):
    """The JSONPath subset of additionalPrinterColumns, and kube-apiserver's rule that a column
    whose path yields several values shows the first."""
    OBJ = {"metadata": {"name": "x"},
           "spec": {"n": 3, "flag": False, "items": [{"k": "a", "v": 1}, {"k": "b", "v": 2}, {"k": "c", "v": 2}]},
           "status": {"conditions": [{"type": "Granted", "reason": "G"}, {"type": "Ready", "reason": "R"}],
                      "nodes": ["n1", "n2", "n3"]}}

    def test_paths(self):
        from ktestapi.tables import jsonpath
        cases = [
            (".spec.n", [3]), ("{.spec.n}", [3]), ("$.spec.n", [3]), (".spec['n']", [3]),
            (".status.nodes[0]", ["n1"]), (".status.nodes[-1]", ["n3"]), (".status.nodes[5]", []),
            (".status.nodes[*]", ["n1", "n2", "n3"]), (".status.nodes[1:]", ["n2", "n3"]),
            (".status.nodes", [["n1", "n2", "n3"]]),
            ('.status.conditions[?(@.type=="Ready")].reason', ["R"]),
            (".status.conditions[?(@.type == 'Granted')].reason", ["G"]),
            ('.status.conditions[?(@.type!="Ready")].reason', ["G"]),
            ('.status.conditions[?(@.type=="Valid")].reason', []),
            (".spec.items[?(@.v==2)].k", ["b", "c"]), (".spec.items[?(@.v!=2)].k", ["a"]),
            (".spec.items[?(@.k)].v", [1, 2, 2]), (".spec.items[*].k", ["a", "b", "c"]),
            (".spec[?(@.n==3)].n", []), (".spec.missing.deeper", []), ("..k", []), (".spec.items[", []),
            (".spec.flag", [False]),
        ]
        for path, want in cases:
            self.assertEqual(jsonpath(self.OBJ, path), want, path)

    def test_a_multi_valued_column_prints_its_first_value(self):
        from ktestapi.tables import to_table

        class Info:
            crd = {"additionalPrinterColumns": [
                {"name": "Kinds", "type": "string", "jsonPath": ".spec.items[*].k"},
                {"name": "Twos", "type": "string", "jsonPath": ".spec.items[?(@.v==2)].k"},
                {"name": "Nodes", "type": "string", "jsonPath": ".status.nodes"},
                {"name": "N", "type": "integer", "jsonPath": ".spec.items[*].v"},
                {"name": "None", "type": "string", "jsonPath": '.status.conditions[?(@.type=="X")].reason'}]}
        t = to_table(Info, [self.OBJ], {})
        self.assertEqual(t["rows"][0]["cells"], ["x", "a", "b", '["n1","n2","n3"]', 1, None])


class TestPersistence(unittest.TestCase):
    def test_persist_keeps_objects_uids_and_versions_across_process_restarts(self):
        d = tempfile.mkdtemp(prefix="ktestapi-persist-")
        try:
            with ServerProcess(extra_args=["--persist"], workdir=d) as srv:
                code, cm, _ = srv.api("POST", "/api/v1/namespaces/default/configmaps",
                                      {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p1"},
                                       "data": {"a": "b"}})
                self.assertEqual(code, 201)
            with ServerProcess(extra_args=["--persist"], workdir=d) as srv:
                code, got, _ = srv.api("GET", "/api/v1/namespaces/default/configmaps/p1")
                self.assertEqual(code, 200)
                self.assertEqual((got["metadata"]["uid"], got["metadata"]["resourceVersion"], got["data"]),
                                 (cm["metadata"]["uid"], cm["metadata"]["resourceVersion"], {"a": "b"}))
                code, out, _ = srv.api("POST", "/api/v1/namespaces/default/configmaps",
                                       {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p2"}})
                self.assertGreater(int(out["metadata"]["resourceVersion"]), int(cm["metadata"]["resourceVersion"]))
        finally:
            shutil.rmtree(d, ignore_errors=True)


class TestBundledFixtures(unittest.TestCase):
    def test_fixture_f_and_drain_fixture_behave_like_a_cluster_under_kubectl_drain(self):
        fx = [os.path.join(HERE, "fixtures", "fixture-f.yaml"), os.path.join(HERE, "fixtures", "drain-node1.yaml")]
        with ServerProcess(fixtures=fx) as srv:
            code, nodes, _ = srv.api("GET", "/api/v1/nodes?labelSelector=testselect%3Dtest1")
            self.assertEqual(sorted(n["metadata"]["name"] for n in nodes["items"]), ["node1", "node2"])
            code, pod1, _ = srv.api("GET", "/api/v1/namespaces/default/pods/pod1")
            self.assertEqual(pod1["metadata"]["ownerReferences"][0]["kind"], "StatefulSet")
            rc, out, err = srv.kubectl("drain", "node1", "--timeout=5s")
            self.assertNotEqual(rc, 0)
            self.assertIn("cannot delete Pods that declare no controller (use --force to override): default/bare", err)
            self.assertIn("cannot delete Pods with local storage (use --delete-emptydir-data to override): "
                          "default/scratch", err)
            code, pods, _ = srv.api("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode1")
            self.assertEqual(len(pods["items"]), 9)  # nothing evicted
            rc, out, err = srv.kubectl("drain", "node1", "--force", "--delete-emptydir-data", "--ignore-daemonsets",
                                       "--timeout=20s")
            self.assertEqual(rc, 0, err)
            code, pods, _ = srv.api("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode1")
            self.assertEqual(sorted(p["metadata"]["name"] for p in pods["items"]), ["ds-1", "static-1"])


class TestNoLeftoverServers(unittest.TestCase):
    def test_server_exits_when_the_test_process_that_started_it_dies(self):
        import subprocess
        code = ("import sys, os; sys.path.insert(0, %r)\n"
                "from ktestapi.testing import ServerProcess\n"
                "s = ServerProcess(); s.start(); print(s.proc.pid, s.dir, flush=True); os._exit(0)\n" % HERE)
        out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, timeout=60).stdout.decode().split()
        pid, d = int(out[0]), out[1]
        try:
            gone = False
            for _ in range(40):
                try:
                    with open("/proc/%d/stat" % pid) as f:
                        if f.read().rsplit(")", 1)[1].split()[0] == "Z":  # exited, not yet reaped
                            gone = True
                            break
                except (FileNotFoundError, ProcessLookupError):
                    gone = True
                    break
                time.sleep(0.25)
            if not gone:
                os.kill(pid, 15)
            self.assertTrue(gone, "server outlived its parent")
        finally:
            shutil.rmtree(d, ignore_errors=True)


class TestFixturesAndGenerator(unittest.TestCase):
    def test_fixture_yaml_and_generator_load_at_start(self):
        d = tempfile.mkdtemp(prefix="ktestapi-fx-")
        try:
            fx = os.path.join(d, "f.yaml")
            with open(fx, "w") as f:
                f.write(FIXTURE_F)
            crd = os.path.join(d, "crd.json")
            with open(crd, "w") as f:
                json.dump({"apiVersion": "v1", "kind": "List", "items": [CRD, {
                    "apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption", "metadata": {"name": "fx"},
                    "spec": {"nodeNames": ["node1"]}, "status": {"state": "Granted"}}]}, f)
            with ServerProcess(fixtures=[fx, crd], generate="nodes=4,pods-per-node=3,pvcs-per-node=1,namespaces=2") as srv:
                code, p, _ = srv.api("GET", "/api/v1/namespaces/default/pods/pod1")
                self.assertEqual((code, p["status"]["phase"]), (200, "Running"))
                code, pv, _ = srv.api("GET", "/api/v1/persistentvolumes/node1-pv-local")
                self.assertEqual(pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"], ["node1"])
                code, nd, _ = srv.api("GET", "/apis/nodegate.io/v1alpha1/nodedisruptions/fx")
                self.assertEqual((code, nd["status"]["state"]), (200, "Granted"))
                code, nodes, _ = srv.api("GET", "/api/v1/nodes?labelSelector=testselect%3Dtest1")
                self.assertEqual(len(nodes["items"]), 2)
                code, pods, _ = srv.api("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-00002")
                self.assertEqual(len(pods["items"]), 3)
                code, pvcs, _ = srv.api("GET", "/api/v1/persistentvolumeclaims")
                self.assertEqual(len(pvcs["items"]), 4)
                rc, out, err = srv.kubectl("get", "pods", "-A")
                self.assertEqual(rc, 0, err)
                self.assertEqual(len(out.strip().splitlines()), 1 + 1 + 12)
        finally:
            shutil.rmtree(d, ignore_errors=True)


@unittest.skipIf(os.environ.get("NG_BIG") == "0", "NG_BIG=0 skips the 150,000-pod benchmark")
class TestBigCluster(unittest.TestCase):
    def test_150k_pods_full_paginated_list(self):
        t0 = time.monotonic()
        with ServerProcess(generate="nodes=5000,pods-per-node=30", start_timeout=600) as srv:
            started = time.monotonic() - t0
            t1 = time.monotonic()
            total = 0
            cont = ""
            conn = srv.connection(120)
            for _ in range(1000):
                conn.request("GET", "/api/v1/pods?limit=500" + ("&continue=" + cont if cont else ""),
                             headers={"Authorization": "Bearer " + srv.tokens["admin"], "Accept": "application/json"})
                resp = conn.getresponse()
                body = json.loads(resp.read())
                self.assertEqual(resp.status, 200)
                total += len(body["items"])
                cont = body["metadata"].get("continue")
                if not cont:
                    break
            conn.close()
            took = time.monotonic() - t1
            sys.stderr.write("\n[big] start+generate %.1fs; paginated list of %d pods in %.1fs\n" % (started, total, took))
            self.assertEqual(total, 150000)


def deployment(name, replicas=1):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}}


class UpstreamDefinitionsTest(ServerTestCase):
    """Built-in kinds are decoded against Kubernetes v1.32's own OpenAPI models."""

    DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"

    def test_nested_unknown_field_warn_strict_ignore(self):
        d = deployment("deep-unknown")
        d["spec"]["template"]["spec"]["foo"] = 1
        d["spec"]["template"]["spec"]["containers"][0]["securityContext"] = {"runAsUser": 1, "runAsUsr": 2}
        code, body, _ = self.api("POST", self.DEPLOYMENTS + "?fieldValidation=Strict", d)
        self.assertEqual(code, 400, body)
        self.assertEqual(body["message"], 'Deployment in version "v1" cannot be handled as a Deployment: strict '
                         'decoding error: unknown field "spec.template.spec.containers[0].securityContext.runAsUsr", '
                         'unknown field "spec.template.spec.foo"')
        code, body, resp = self.api("POST", self.DEPLOYMENTS, d)
        self.assertEqual(code, 201, body)
        self.assertEqual(resp.headers.get_all("Warning"),
                         ['299 - "unknown field \\"spec.template.spec.containers[0].securityContext.runAsUsr\\""',
                          '299 - "unknown field \\"spec.template.spec.foo\\""'])
        self.assertNotIn("foo", body["spec"]["template"]["spec"])
        self.assertEqual(body["spec"]["template"]["spec"]["containers"][0]["securityContext"], {"runAsUser": 1})
        code, body, resp = self.api("PATCH", self.DEPLOYMENTS + "/deep-unknown?fieldValidation=Ignore",
                                    {"spec": {"template": {"spec": {"bar": 1}}}}, "application/merge-patch+json")
        self.assertEqual((code, resp.getheader("Warning")), (200, None))
        # unknown fields inside maps of structs and lists of lists are found too
        code, body, _ = self.api("POST", "/api/v1/namespaces/default/pods?fieldValidation=Strict", dict(
            pod("deep-aff"), spec={"containers": [{"name": "c", "image": "i"}], "affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "k", "operator": "In", "values": ["v"], "valuse": []}]}]}}}}))
        self.assertEqual(code, 400)
        self.assertIn('unknown field "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.'
                      'nodeSelectorTerms[0].matchExpressions[0].valuse"', body["message"])

    def test_kubectl_apply_validate_strict_refuses_a_nested_unknown_field(self):
        d = deployment("kubectl-strict")
        d["spec"]["template"]["spec"]["foo"] = "x"
        rc, out, err = self.kubectl("apply", "--validate=strict", "-f", "-", input=json.dumps(d))
        self.assertNotEqual(rc, 0)
        self.assertIn('strict decoding error: unknown field "spec.template.spec.foo"', err)
        rc, out, err = self.kubectl("apply", "--validate=warn", "-f", "-", input=json.dumps(d))
        self.assertEqual(rc, 0, err)
        self.assertIn('Warning: unknown field "spec.template.spec.foo"', err)

    def test_type_error_deep_inside_a_pod(self):
        p = pod("deep-type")
        p["spec"]["containers"][0]["ports"] = [{"containerPort": "80"}]
        code, body, _ = self.api("POST", "/api/v1/namespaces/default/pods", p)
        self.assertEqual(code, 400)
        self.assertEqual(body["message"], 'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal '
                         'string into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32')
        p["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
        p["spec"]["containers"][0]["resources"] = {"limits": {"cpu": 1, "memory": "1Gi"}}  # quantities: numbers too
        p["spec"]["containers"][0]["livenessProbe"] = {"httpGet": {"port": "http"}}      # int or string
        self.ok("POST", "/api/v1/namespaces/default/pods", p)
        p = pod("deep-type2")
        p["spec"]["tolerations"] = [{"key": "k", "tolerationSeconds": 1.5}]
        code, body, _ = self.api("POST", "/api/v1/namespaces/default/pods", p)
        self.assertIn("json: cannot unmarshal number 1.5 into Go struct field Toleration.spec.tolerations."
                      "tolerationSeconds of type int64", body["message"])
        p["spec"]["tolerations"] = None        # null is nil for slices, pointers and maps
        p["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "lots"}}
        code, body, _ = self.api("POST", "/api/v1/namespaces/default/pods", p)
        self.assertEqual(code, 400)
        self.assertIn("quantities must match the regular expression", body["message"])

    def test_int32_out_of_range_bad_date_and_bad_base64(self):
        d = deployment("range", replicas=1 << 31)
        code, body, _ = self.api("POST", self.DEPLOYMENTS, d)
        self.assertEqual(code, 400)
        self.assertEqual(body["message"], 'Deployment in version "v1" cannot be handled as a Deployment: json: '
                         'cannot unmarshal number 2147483648 into Go struct field DeploymentSpec.spec.replicas of '
                         'type int32')
        ev = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1", "namespace": "default"},
              "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}, "reason": "R",
              "firstTimestamp": "yesterday"}
        code, body, _ = self.api("POST", "/api/v1/namespaces/default/events", ev)
        self.assertEqual(code, 400)
        self.assertEqual(body["message"], 'Event in version "v1" cannot be handled as a Event: parsing time '
                         '"yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"')
        ev["firstTimestamp"] = "2026-13-01T00:00:00Z"
        code, body, _ = self.api("POST", "/api/v1/namespaces/default/events", ev)
        self.assertIn('parsing time "2026-13-01T00:00:00Z": month out of range', body["message"])
        ev["firstTimestamp"] = "2026-11-01T00:00:00+01:00"
        self.ok("POST", "/api/v1/namespaces/default/events", ev)
        sec = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "b64", "namespace": "default"},
               "data": {"k": "not base64!"}}
        code, body, _ = self.api("POST", "/api/v1/namespaces/default/secrets", sec)
        self.assertEqual(code, 400)
        self.assertIn("illegal base64 data at input byte 3", body["message"])

    def test_events_k8s_io_fields_are_its_own(self):
        ev = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e2", "namespace": "default"},
              "eventTime": "2026-11-01T00:00:00.000000Z", "reason": "R", "action": "A",
              "reportingController": "x.io/c", "reportingInstance": "i",
              "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}, "message": "core's name"}
        code, body, _ = self.api("POST", "/apis/events.k8s.io/v1/namespaces/default/events?fieldValidation=Strict",
                                 ev)
        self.assertEqual(code, 400)
        self.assertIn('strict decoding error: unknown field "message"', body["message"])
        ev["note"] = ev.pop("message")
        ev["eventTime"] = "2026-11-01T00:00:00Z"   # MicroTime needs six fraction digits
        code, body, _ = self.api("POST", "/apis/events.k8s.io/v1/namespaces/default/events", ev)
        self.assertEqual(code, 400)
        self.assertIn('cannot parse "Z" as ".000000"', body["message"])

    def test_required_field_missing_in_a_job_template_container(self):
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "noname", "namespace": "default"},
               "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"image": "busybox"}]}}}}
        code, body, _ = self.api("POST", "/apis/batch/v1/namespaces/default/jobs", job)
        self.assertEqual((code, body["reason"]), (422, "Invalid"))
        self.assertIn({"reason": "FieldValueRequired", "message": "Required value",
                       "field": "spec.template.spec.containers[0].name"}, body["details"]["causes"])
        # status fields are not required (the Go types decode them as zero values)
        n = node("no-cond-status")
        n["status"]["conditions"] = [{"type": "Ready"}]
        self.ok("POST", "/api/v1/nodes", n)


class AuditTest(unittest.TestCase):
    def test_server_refuses_to_start_without_the_definitions(self):
        import subprocess
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run([sys.executable, os.path.join(HERE, "apiserver.py"), "--port", "0", "--state-dir", d],
                               env=dict(os.environ, KTESTAPI_UPSTREAM=os.path.join(d, "nothing")),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"upstream definitions missing", r.stderr)
        self.assertIn(b"run `. scripts/deps.sh; ng_install_upstream_definitions`", r.stderr)

    def test_audit_lists_dropped_fields_and_stop_fails_on_them(self):
        srv = ServerProcess(audit=True)
        srv.start()
        try:
            cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"},
                  "data": {}, "date": {"k": "v"}}
            code, _, _ = srv.api("POST", "/api/v1/namespaces/default/configmaps", cm, user="admin")
            self.assertEqual(code, 201)
            code, body, _ = srv.control("audit", method="GET")
            self.assertEqual(body["invalid"], [])
            self.assertEqual(body["dropped"], [{"user": "admin", "verb": "POST", "apiVersion": "v1",
                                                "path": "/api/v1/namespaces/default/configmaps", "kind": "ConfigMap",
                                                "namespace": "default", "name": "a", "field": "date"}])
        finally:
            with self.assertRaises(testing.AuditFailure) as cm_:
                srv.stop()
        self.assertIn('dropped unknown field "date" of v1 ConfigMap default/a (POST '
                      '/api/v1/namespaces/default/configmaps by admin)', str(cm_.exception))
        # a test that sends the field on purpose names it; nothing else is excused
        with ServerProcess(audit=True, audit_expect=["date"]) as srv:
            srv.api("POST", "/api/v1/namespaces/default/configmaps", cm)

    def test_audit_lists_refused_writes(self):
        srv = ServerProcess(audit=True)
        srv.start()
        try:
            job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "default"},
                   "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"image": "i"}]}}}}
            code, _, _ = srv.api("POST", "/apis/batch/v1/namespaces/default/jobs", job)
            self.assertEqual(code, 422)
            code, _, _ = srv.api("POST", "/api/v1/namespaces/default/configmaps?fieldValidation=Strict",
                                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "dta": {}})
            self.assertEqual(code, 400)
            findings = srv.audit()
            self.assertEqual(len(findings), 2, findings)
            self.assertIn("refused batch/v1 Job default/j (POST /apis/batch/v1/namespaces/default/jobs by admin): "
                          "spec.template.spec.containers[0].name: Required value", findings)
            srv.reset_audit()
            self.assertEqual(srv.audit(), [])
        finally:
            srv.stop()

    def test_audit_rechecks_stored_objects(self):
        with tempfile.TemporaryDirectory() as d:
            fx = os.path.join(d, "f.json")
            with open(fx, "w") as f:
                json.dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                           "spec": {"containers": [{"name": "c", "image": "i", "imagee": "j"}]}}, f)
            srv = ServerProcess(fixtures=[fx], audit=True)
            srv.start()
            self.assertIn('stored /pods default/p: unknown field "spec.containers[0].imagee"', srv.audit())
            with self.assertRaises(testing.AuditFailure):
                srv.stop()


if __name__ == "__main__":
    unittest.main()


class TestKindRules(ServerTestCase):
    """Per-kind enums and rules restated from kube-apiserver's pkg/apis/*/validation (ktestapi/kindcheck.py)."""

    def refused(self, path, obj, field, message):
        code, body, _ = self.api("POST", path, obj)
        self.assertEqual(code, 422, body)
        causes = [(c["field"], c["message"]) for c in body["details"]["causes"]]
        self.assertIn((field, message), causes)

    def accepted(self, path, obj):
        self.ok("POST", path, obj)

    @staticmethod
    def pod_spec(**kw):
        s = {"containers": [{"name": "c", "image": "busybox:1"}]}
        s.update(kw)
        return s

    def test_pod(self):
        P = "/api/v1/namespaces/default/pods"
        self.refused(P, {"metadata": {"name": "kr-p1"}, "spec": self.pod_spec(restartPolicy="Sometimes")},
                     "spec.restartPolicy", 'Unsupported value: "Sometimes": supported values: "Always", "Never", "OnFailure"')
        self.refused(P, {"metadata": {"name": "kr-p2"}, "spec": self.pod_spec(
            tolerations=[{"key": "k", "operator": "Exists", "value": "v"}])},
            "spec.tolerations[0].operator", "Invalid value: core.Toleration{Key:\"k\", Operator:\"Exists\", "
            "Value:\"v\", Effect:\"\", TolerationSeconds:(*int64)(nil)}: value must be empty when `operator` is 'Exists'")
        self.refused(P, {"metadata": {"name": "kr-p3"}, "spec": {"containers": [
            {"name": "C", "image": "x:1", "ports": [{"containerPort": 1, "protocol": "tcp"}]}]}},
            "spec.containers[0].ports[0].protocol", 'Unsupported value: "tcp": supported values: "SCTP", "TCP", "UDP"')
        self.accepted(P, {"metadata": {"name": "kr-p4"}, "spec": self.pod_spec(
            restartPolicy="Never", dnsPolicy="Default",
            tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule"}])})

    def test_job(self):
        P = "/apis/batch/v1/namespaces/default/jobs"
        tmpl = {"metadata": {"labels": {"a": "b"}}, "spec": self.pod_spec(restartPolicy="Always")}
        self.refused(P, {"metadata": {"name": "kr-j1"}, "spec": {"template": tmpl}},
                     "spec.template.spec.restartPolicy",
                     'Unsupported value: "Always": supported values: "OnFailure", "Never"')
        tmpl = {"metadata": {"labels": {"a": "b"}}, "spec": self.pod_spec(restartPolicy="Never")}
        self.refused(P, {"metadata": {"name": "kr-j2"}, "spec": {"template": tmpl, "backoffLimit": -1}},
                     "spec.backoffLimit", "Invalid value: -1: must be greater than or equal to 0")
        self.accepted(P, {"metadata": {"name": "kr-j3"}, "spec": {"template": tmpl, "backoffLimit": 0}})

    def test_deployment(self):
        P = "/apis/apps/v1/namespaces/default/deployments"
        tmpl = {"metadata": {"labels": {"app": "x"}}, "spec": self.pod_spec()}
        self.refused(P, {"metadata": {"name": "kr-d1"}, "spec": {"selector": {"matchLabels": {"app": "y"}},
                                                                 "template": tmpl}},
                     "spec.template.metadata.labels",
                     'Invalid value: map[string]string{"app":"x"}: `selector` does not match template `labels`')
        self.refused(P, {"metadata": {"name": "kr-d2"}, "spec": {"selector": {"matchLabels": {"app": "x"}},
                                                                 "template": tmpl, "strategy": {"type": "Fast"}}},
                     "spec.strategy.type", 'Unsupported value: "Fast": supported values: "Recreate", "RollingUpdate"')
        self.accepted(P, {"metadata": {"name": "kr-d3"}, "spec": {"selector": {"matchLabels": {"app": "x"}},
                                                                  "template": tmpl}})

    def test_lease(self):
        P = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
        self.refused(P, {"metadata": {"name": "kr-l1"}, "spec": {"leaseDurationSeconds": 0}},
                     "spec.leaseDurationSeconds", "Invalid value: 0: must be greater than 0")
        self.accepted(P, {"metadata": {"name": "kr-l2"}, "spec": {"leaseDurationSeconds": 15, "leaseTransitions": 0}})

    def test_secret(self):
        P = "/api/v1/namespaces/default/secrets"
        self.refused(P, {"metadata": {"name": "kr-s1"}, "type": "kubernetes.io/tls", "data": {"tls.crt": ""}},
                     "data[tls.key]", "Required value")
        self.refused(P, {"metadata": {"name": "kr-s2"}, "data": {"a b": ""}}, "data[a b]",
                     "Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' "
                     "or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
                     "'[-._a-zA-Z0-9]+')")
        self.accepted(P, {"metadata": {"name": "kr-s3"}, "immutable": True, "data": {"a": "eA=="}})
        code, body, _ = self.api("PATCH", P + "/kr-s3", {"data": {"a": "eQ=="}}, "application/merge-patch+json")
        self.assertEqual(code, 422, body)
        self.assertIn(("data", "Forbidden: field is immutable when `immutable` is set"),
                      [(c["field"], c["message"]) for c in body["details"]["causes"]])

    def test_service(self):
        P = "/api/v1/namespaces/default/services"
        self.refused(P, {"metadata": {"name": "kr-v1"}, "spec": {"type": "Internal", "ports": [{"port": 80}]}},
                     "spec.type", 'Unsupported value: "Internal": supported values: "ClusterIP", "ExternalName", '
                     '"LoadBalancer", "NodePort"')
        self.refused(P, {"metadata": {"name": "kr-v2"}, "spec": {"ports": [{"port": 80, "name": "a"}, {"port": 81}]}},
                     "spec.ports[1].name", "Required value")
        self.accepted(P, {"metadata": {"name": "kr-v3"}, "spec": {"ports": [{"port": 80, "name": "a"},
                                                                           {"port": 81, "name": "b"}]}})

    def test_network_policy(self):
        P = "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies"
        self.refused(P, {"metadata": {"name": "kr-n1"}, "spec": {"podSelector": {}, "policyTypes": ["ingress"]}},
                     "spec.policyTypes[0]", 'Unsupported value: "ingress": supported values: "Egress", "Ingress"')
        self.accepted(P, {"metadata": {"name": "kr-n2"}, "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}})

    def test_rbac(self):
        G = "/apis/rbac.authorization.k8s.io/v1"
        self.refused(G + "/namespaces/default/roles", {"metadata": {"name": "kr-r1"}, "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": []}]},
            "rules[0].verbs", "Required value: verbs must contain at least one value")
        self.accepted(G + "/namespaces/default/roles", {"metadata": {"name": "kr-r2"}, "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]})
        ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}
        self.refused(G + "/clusterrolebindings", {"metadata": {"name": "kr-b1"}, "roleRef": ref},
                     "roleRef.kind", 'Unsupported value: "Role": supported values: "ClusterRole"')
        self.refused(G + "/clusterrolebindings", {"metadata": {"name": "kr-b2"}, "roleRef": dict(ref, kind="ClusterRole"),
                                                   "subjects": [{"kind": "ServiceAccount", "name": "sa"}]},
                     "subjects[0].namespace", "Required value")
        self.accepted(G + "/namespaces/default/rolebindings", {"metadata": {"name": "kr-b3"}, "roleRef": ref,
                                                               "subjects": [{"kind": "User", "name": "bob"}]})
        code, body, _ = self.api("PATCH", G + "/namespaces/default/rolebindings/kr-b3", {"roleRef": {"name": "s"}},
                                 "application/merge-patch+json")
        self.assertEqual(code, 422, body)
        self.assertIn("cannot change roleRef", body["message"])

    def test_webhook_configuration(self):
        P = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
        hook = {"name": "a.b.c", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                "clientConfig": {"url": "https://127.0.0.1:1/"},
                "rules": [{"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]}
        self.refused(P, {"metadata": {"name": "kr-w1"}, "webhooks": [dict(hook, reinvocationPolicy="Always")]},
                     "webhooks[0].reinvocationPolicy", 'Unsupported value: "Always": supported values: "IfNeeded", "Never"')
        bad = dict(hook, rules=[dict(hook["rules"][0], operations=["EVICT"])])
        self.refused(P, {"metadata": {"name": "kr-w2"}, "webhooks": [bad]}, "webhooks[0].rules[0].operations[0]",
                     'Unsupported value: "EVICT": supported values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE"')
        self.accepted(P, {"metadata": {"name": "kr-w3"}, "webhooks": [dict(hook, matchPolicy="Exact")]})

    def test_pdb(self):
        P = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
        self.refused(P, {"metadata": {"name": "kr-b1"}, "spec": {"minAvailable": 1, "selector": {},
                                                                 "unhealthyPodEvictionPolicy": "Never"}},
                     "spec.unhealthyPodEvictionPolicy",
                     'Unsupported value: "Never": supported values: "AlwaysAllow", "IfHealthyBudget"')
        self.accepted(P, {"metadata": {"name": "kr-b2"}, "spec": {"minAvailable": 1, "selector": {},
                                                                  "unhealthyPodEvictionPolicy": "AlwaysAllow"}})

    def test_event(self):
        core = "/api/v1/namespaces/kube-public/events"
        self.refused(core, {"metadata": {"name": "kr-e1"}, "involvedObject": {"kind": "Node", "name": "n1"},
                            "reason": "R", "message": "m"},
                     "involvedObject.namespace", 'Invalid value: "": does not match event.namespace')
        self.accepted("/api/v1/namespaces/default/events", {
            "metadata": {"name": "kr-e2"}, "involvedObject": {"kind": "Node", "name": "n1"}, "reason": "R",
            "type": "Normal", "source": {"component": "c"}, "count": 1})
        v1 = "/apis/events.k8s.io/v1/namespaces/default/events"
        ev = {"metadata": {"name": "kr-e3"}, "regarding": {"kind": "Node", "name": "n1"}, "reason": "R",
              "action": "A", "type": "Normal", "reportingController": "x.io/c", "reportingInstance": "i"}
        self.refused(v1, ev, "eventTime", "Required value")
        ev["eventTime"] = "2026-11-28T05:00:00.000000Z"
        self.refused(v1, dict(ev, type="Info"), "type", 'Invalid value: "": has invalid value: Info')
        self.accepted(v1, ev)
