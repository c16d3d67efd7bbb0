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
import ssl
import sys
import tempfile
import threading
import time
import unittest
import shutil

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ktestapi.testing import ServerProcess          # noqa: E402
from ktestapi.certs import make_ca, make_leaf       # noqa: E402
from ktestapi import selection as selectors, patch, yamlish     # noqa: E402
from ktestapi.errors import APIError                # noqa: E402
from ktestapi.store import Store, Expired           # noqa: E402

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
        code, body, _ = self.evict("a1")
        self.assertEqual(code, 429)
        self.assertEqual(body["reason"], "TooManyRequests")
        self.assertEqual(body["message"], "Cannot evict pod as it would violate the pod's disruption budget.")
        self.assertEqual(body["details"]["causes"][0]["reason"], "DisruptionBudget")
        self.assertEqual(body["details"]["causes"][0]["message"],
                         "The disruption budget p needs 2 healthy pods and has 2 currently")

    def test_evicted_pod_gets_disruption_target_condition_before_deletion(self):
        rv = self.ok("GET", "/api/v1/namespaces/%s/pods" % self.ns)["metadata"]["resourceVersion"]
        w = self.srv.watch("/api/v1/namespaces/%s/pods?watch=1&fieldSelector=metadata.name%%3Da1&resourceVersion=%s"
                           % (self.ns, rv))
        code, _, _ = self.evict("a1")
        self.assertEqual(code, 201)
        evs = w.collect(3)
        w.close()
        # condition added, then graceful deletion starts, then the kubelet stand-in removes the pod
        self.assertEqual([e["type"] for e in evs], ["MODIFIED", "MODIFIED", "DELETED"])
        self.assertTrue(evs[1]["object"]["metadata"]["deletionTimestamp"])
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
        self.assertEqual(resp.getheader("Retry-After"), "7")
        self.assertEqual(resp.getheader("Warning"), '299 - "w1"')
        self.assertEqual(self.api("GET", "/api/v1/namespaces/default/pods/wdn")[0], 200)

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


if __name__ == "__main__":
    unittest.main()
