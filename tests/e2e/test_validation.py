#!/usr/bin/env python3
"""e2e: the object admission webhooks (shared/acceptance/eviction.md V01-V10, DESIGN.md §5)
registered with the test API server as a cluster operator would: /validate/nodedisruption,
/validate/nodedisruption-status, /validate/budget (validating) and /mutate/nodedisruption
(mutating, records the creator). The API server calls nodegate exactly as kube-apiserver does;
the test API server does not evaluate the CRDs' CEL rules, so what is denied here is denied by
nodegate.

Every wait is bounded (WAIT_S). Environment: NODEGATE (the binary), NG_SOURCE_ROOT."""
import base64
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_live_cache import ND_PATH, eventually  # noqa: E402
from test_gate import ADB_PATH, NDB_PATH, ON_TEST1, GateTest  # noqa: E402

NG_USER = "system:serviceaccount:nodegate:nodegate"
ADMISSION = "/apis/admissionregistration.k8s.io/v1"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
NDT_PATH = "/apis/nodegate.io/v1alpha1/nodedisruptiontemplates"
NREM_PATH = "/apis/nodegate.io/v1alpha1/noderemediations"
AUTHORED = ["nodedisruptiontemplates", "noderemediations", "noderemediations/status"]
BY, BY_GROUPS = "nodegate.io/created-by", "nodegate.io/created-by-groups"
PRIVILEGED = "nodedisruptions/privileged-operation"


def operation(**pod_spec):
    """spec.operation with a one-container Job whose pod spec also holds @pod_spec."""
    return {"jobTemplate": {"spec": {"template": {"spec": dict(
        pod_spec, restartPolicy="Never", containers=[{"name": "reboot", "image": "busybox"}])}}}}


def ndt_body(name, spec, annotations=None):
    meta = {"name": name}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionTemplate", "metadata": meta, "spec": spec}


def nrem_body(name, annotations=None):
    meta = {"name": name}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeRemediation", "metadata": meta,
            "spec": {"nodeSelector": {"matchLabels": {"pool": "none"}}, "templateName": "t",
                     "rule": {"conditions": [{"type": "Ready", "status": "False"}]}}}


def nd_body(name, spec, annotations=None):
    meta = {"name": name}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption", "metadata": meta, "spec": spec}


class ValidationTest(GateTest):
    """Fixture F without the "db" budget (GateTest), nodegate registered for every webhook."""

    def setUp(self):
        super().setUp()
        with open(self.ng.cert, "rb") as f:
            ca = base64.b64encode(f.read()).decode()

        def hook(name, path, resources, operations, side_effects="None"):
            return {"name": name, "admissionReviewVersions": ["v1"], "sideEffects": side_effects,
                    "failurePolicy": "Fail", "timeoutSeconds": 5,
                    "clientConfig": {"url": f"https://127.0.0.1:{self.ng.port}{path}", "caBundle": ca},
                    "rules": [{"apiGroups": ["nodegate.io"], "apiVersions": ["v1alpha1"],
                               "operations": operations, "resources": resources}]}
        self.create(f"{ADMISSION}/validatingwebhookconfigurations", {
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "nodegate-objects"},
            "webhooks": [
                hook("nodedisruption.nodegate.io", "/validate/nodedisruption", ["nodedisruptions"],
                     ["CREATE", "UPDATE"]),
                hook("nodedisruption-status.nodegate.io", "/validate/nodedisruption-status",
                     ["nodedisruptions/status"], ["UPDATE"]),
                hook("budget.nodegate.io", "/validate/budget",
                     ["applicationdisruptionbudgets", "nodedisruptionbudgets", "nodegateconfigs"],
                     ["CREATE", "UPDATE"]),
                hook("authored.nodegate.io", "/validate/authored", AUTHORED, ["CREATE", "UPDATE"])]})
        self.create(f"{ADMISSION}/mutatingwebhookconfigurations", {
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "nodegate-objects"},
            "webhooks": [hook("created-by.nodegate.io", "/mutate/nodedisruption", ["nodedisruptions"],
                              ["CREATE"]),
                         hook("author.nodegate.io", "/mutate/author", AUTHORED, ["CREATE", "UPDATE"])]})

    def denied(self, method, path, body, *fragments, code_range=(400, 500), user="admin",
               ctype="application/json"):
        code, resp, _ = self.api.api(method, path, body, user=user, ctype=ctype)
        self.assertTrue(code_range[0] <= code < code_range[1], (code, resp))
        msg = resp.get("message", "") if isinstance(resp, dict) else str(resp)
        for frag in fragments:
            self.assertIn(frag, msg)
        return code, msg

    def test_V01_exactly_one_of_selector_and_names(self):
        self.denied("POST", ND_PATH, nd_body("v01a", dict(ON_TEST1, nodeNames=["node1"])),
                    "exactly one of nodeSelector and nodeNames")
        self.denied("POST", ND_PATH, nd_body("v01b", {"type": "reboot"}),
                    "exactly one of nodeSelector and nodeNames")

    def test_V02_bad_selector_points_at_the_field(self):
        _, msg = self.denied("POST", ND_PATH, nd_body("v02", {"nodeSelector": {"matchExpressions": [
            {"key": "testselect", "operator": "In"}]}}), "spec.nodeSelector.matchExpressions[0]")
        print(f"\n  V02: {msg}", file=sys.stderr)

    def test_V03_drain_regex_must_compile(self):
        self.denied("POST", ND_PATH, nd_body("v03", {"nodeNames": ["node1"], "drain": {
            "podEvictionFilters": [{"byResourceNameRegex": "nvidia.com/gpu-("}]}}),
            "byResourceNameRegex", "does not compile")

    def test_V04_creator_is_recorded_whatever_the_request_says(self):
        body = self.create(ND_PATH, nd_body("v04", {"nodeNames": ["node3"], "requestor": "someone-else"},
                                            {"nodegate.io/created-by": "mallory", "team": "infra"}))
        ann = body["metadata"]["annotations"]
        self.assertEqual(ann["nodegate.io/created-by"], "admin")
        self.assertEqual(ann["team"], "infra")
        body = self.create(ND_PATH, nd_body("v04b", {"nodeNames": ["node3"]}))
        self.assertEqual(body["metadata"]["annotations"], {"nodegate.io/created-by": "admin"})
        # Nobody rewrites it afterwards.
        self.denied("PATCH", f"{ND_PATH}/v04", {"metadata": {"annotations": {"nodegate.io/created-by": "alice"}}},
                    "nodegate.io/created-by", ctype="application/merge-patch+json")

    def test_V05_spec_is_immutable_once_granted(self):
        self.nd("v05", {"nodeNames": ["node3"], "retry": {"enabled": True, "deadline": "2030-01-01T00:00:00Z"}})
        self.wait_state("v05", "Granted")  # nodegate's own status writes pass the status webhook
        self.denied("PATCH", f"{ND_PATH}/v05", {"spec": {"nodeNames": ["node1"]}},
                    "immutable once Granted", ctype="application/merge-patch+json")
        code, body, _ = self.api.api("PATCH", f"{ND_PATH}/v05",
                                     {"spec": {"retry": {"deadline": "2031-01-01T00:00:00Z"},
                                               "additionalRequestors": ["drainer"]}},
                                     ctype="application/merge-patch+json")
        self.assertEqual(code, 200, body)

    def test_V06_nobody_grants_themselves(self):
        self.ndb("pool", dict(ON_TEST1, maxDisruptedNodes=0))
        self.nd("v06", dict(ON_TEST1, retry={"enabled": True}))
        self.wait_state("v06", "Pending")
        _, msg = self.denied("PATCH", f"{ND_PATH}/v06/status", {"status": {"state": "Granted"}},
                             "status.state", "only nodegate", code_range=(403, 404),
                             ctype="application/merge-patch+json")
        print(f"\n  V06: {msg}", file=sys.stderr)
        self.assertEqual(self.status("v06").get("state"), "Pending")
        # A requestor may still set its own condition.
        code, body, _ = self.api.api("PATCH", f"{ND_PATH}/v06/status", {"status": {"conditions": [
            {"type": "RequestorFailed", "status": "True", "reason": "Test", "message": "m",
             "lastTransitionTime": "2026-11-22T00:00:00Z"}]}}, ctype="application/merge-patch+json")
        self.assertEqual(code, 200, body)
        # And nodegate's own decisions still land.
        code, body, _ = self.api.api("PATCH", f"{NDB_PATH}/pool", {"spec": {"maxDisruptedNodes": 2}},
                                     ctype="application/merge-patch+json")
        self.assertEqual(code, 200, body)
        self.wait_state("v06", "Granted")

    def test_V07_V08_budgets_with_field_messages(self):
        self.denied("POST", ADB_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "ApplicationDisruptionBudget",
                                       "metadata": {"name": "v07", "namespace": "default"},
                                       "spec": {"podSelector": {}, "maxDisruptions": "150%"}},
                    "spec.maxDisruptions")
        self.denied("POST", NDB_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget",
                                       "metadata": {"name": "v07"}, "spec": {"nodeSelector": ON_TEST1["nodeSelector"]}},
                    "spec: Invalid value: \"object\": at least one of maxDisruptedNodes, minUndisruptedNodes and "
                    "topologyKey is required")
        self.denied("POST", ADB_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "ApplicationDisruptionBudget",
                                       "metadata": {"name": "v08", "namespace": "default"},
                                       "spec": {"podSelector": {}, "maxDisruptions": 1,
                                                "healthHook": {"url": "http://hooks.example.com/ready"}}},
                    "spec.healthHook", "http")

    def test_V09_unknown_node_is_allowed_with_a_warning(self):
        code, body, resp = self.api.api("POST", ND_PATH, nd_body("v09", {"nodeNames": ["ghost"]}))
        self.assertEqual(code, 201, body)
        warning = resp.getheader("Warning") or ""
        self.assertIn("1 of 1 node is not in the cluster: ghost", warning)

    def apply(self, yaml_text):
        """kubectl apply of @yaml_text: (rc, stdout, the `Warning:` lines, stderr)."""
        rc, out, err = self.api.kubectl("apply", "-f", "-", input=yaml_text)
        return rc, out, [ln for ln in err.splitlines() if ln.startswith("Warning: ")], err

    def test_O50_a_nodegateconfig_not_named_default_is_refused(self):
        """A user who creates a NodeGateConfig named "other" to pause nodegate is told at once that
        only "default" is read, instead of a pause that silently does nothing."""
        rc, _, _, err = self.apply("apiVersion: nodegate.io/v1alpha1\nkind: NodeGateConfig\n"
                                   "metadata: {name: other}\nspec: {paused: true}\n")
        self.assertNotEqual(rc, 0)
        self.assertIn("NodeGateConfig named default; name it default", err)

    def test_O51_an_empty_list_of_node_names_is_refused(self):
        """`nodeNames: []` is refused when applied, not admitted and then Rejected."""
        rc, _, _, err = self.apply("apiVersion: nodegate.io/v1alpha1\nkind: NodeDisruption\n"
                                   "metadata: {name: o51}\nspec: {nodeNames: []}\n")
        self.assertNotEqual(rc, 0)
        self.assertIn("spec.nodeNames", err)

    def test_O52_unknown_nodes_are_counted_in_a_kubectl_warning(self):
        """kubectl prints how many of the named nodes do not exist, the first few by name, for a
        request naming 2,000 unknown nodes and node1."""
        names = "".join(f"\n  - ghost-{i}" for i in range(2000))
        rc, _, warnings, err = self.apply("apiVersion: nodegate.io/v1alpha1\nkind: NodeDisruption\n"
                                          f"metadata: {{name: o52}}\nspec:\n  nodeNames:{names}\n  - node1\n")
        self.assertEqual(rc, 0, err)
        self.assertIn("Warning: 2000 of 2001 nodes are not in the cluster: ghost-0, ghost-1, ghost-2 and 1997 more",
                      warnings)

    def test_O53_O54_budgets_selecting_nothing_are_warned(self):
        """An ADB whose podSelector matches no pod, or an NDB whose nodeSelector matches no node, is
        created with a kubectl warning that it protects nothing now."""
        rc, _, warnings, err = self.apply(
            "apiVersion: nodegate.io/v1alpha1\nkind: ApplicationDisruptionBudget\n"
            "metadata: {name: o53, namespace: default}\n"
            "spec: {podSelector: {matchLabels: {app: postgress}}, maxDisruptions: 1}\n---\n"
            "apiVersion: nodegate.io/v1alpha1\nkind: NodeDisruptionBudget\nmetadata: {name: o54}\n"
            "spec: {nodeSelector: {matchLabels: {pool: nothing}}, maxDisruptedNodes: 1}\n")
        self.assertEqual(rc, 0, err)
        self.assertIn("Warning: no pod in namespace default matches spec.podSelector now: this budget protects "
                      "nothing until one does", warnings)
        self.assertIn("Warning: no node matches spec.nodeSelector now: this budget limits nothing until one does",
                      warnings)

    def test_V10_empty_selector_is_denied(self):
        self.denied("POST", ND_PATH, nd_body("v10", {"nodeSelector": {}}), "would select every node")

    def grant(self, name, user, rules):
        self.create(f"{RBAC}/clusterroles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                             "metadata": {"name": name}, "rules": rules})
        self.create(f"{RBAC}/clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "User", "name": user}]})

    def alice_writes_nodegate_objects(self):
        self.grant("v-alice", "alice", [{"apiGroups": ["nodegate.io"], "verbs": ["create", "update", "patch", "get"],
                                         "resources": ["nodedisruptions", "nodedisruptiontemplates",
                                                       "noderemediations", "noderemediations/status"]}])

    def test_V11_operations_may_not_read_secrets_or_tokens(self):
        for field, pod in (("volumes[0].secret", {"volumes": [{"name": "ca", "secret": {"secretName": "nodegate-ca"}}]}),
                           ("volumes[0].projected.sources[0].serviceAccountToken",
                            {"volumes": [{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]}),
                           ("automountServiceAccountToken", {"automountServiceAccountToken": True})):
            _, msg = self.denied("POST", ND_PATH, nd_body("v11", {"nodeNames": ["node3"], "operation": operation(**pod)}),
                                 "spec.operation.jobTemplate.spec.template.spec." + field, "not allowed",
                                 code_range=(422, 423))
            self.denied("POST", NDT_PATH, ndt_body("v11", {"operation": operation(**pod)}),
                        "NodeDisruptionTemplate", "spec.operation.jobTemplate.spec.template.spec." + field,
                        code_range=(422, 423))
        print(f"\n  V11: {msg}", file=sys.stderr)

    def test_V12_privileged_operations_need_their_own_permission(self):
        self.alice_writes_nodegate_objects()
        reboot = operation(hostPID=True)
        _, msg = self.denied("POST", ND_PATH, nd_body("v12", {"nodeNames": ["node3"], "operation": reboot}),
                             "spec.operation.jobTemplate.spec.template.spec.hostPID", PRIVILEGED,
                             'User "alice" cannot create', code_range=(403, 404), user="alice")
        print(f"\n  V12: {msg}", file=sys.stderr)
        self.denied("POST", NDT_PATH, ndt_body("v12", {"operation": reboot}), PRIVILEGED,
                    code_range=(403, 404), user="alice")
        # An unprivileged operation needs no more than create.
        code, body, _ = self.api.api("POST", NDT_PATH, ndt_body("v12-plain", {"operation": operation()}), user="alice")
        self.assertEqual(code, 201, body)
        # ... nor changing it into a privileged one.
        self.denied("PATCH", f"{NDT_PATH}/v12-plain", {"spec": {"operation": reboot}}, PRIVILEGED,
                    code_range=(403, 404), user="alice", ctype="application/merge-patch+json")
        # admin (system:masters) may; alice may once a ClusterRole grants it (refusals are
        # cached for 2 s).
        self.create(ND_PATH, nd_body("v12-admin", {"nodeNames": ["node3"], "operation": reboot}))
        self.grant("v-privileged", "alice", [{"apiGroups": ["nodegate.io"], "verbs": ["create"],
                                               "resources": [PRIVILEGED]}])
        ok, got = eventually(lambda: self.api.api("POST", ND_PATH, nd_body("v12", {
            "nodeNames": ["node3"], "operation": reboot}), user="alice")[0] == 201, 10, 0.5)
        self.assertTrue(ok, got)
        code, body, _ = self.api.api("POST", NDT_PATH, ndt_body("v12", {"operation": reboot}), user="alice")
        self.assertEqual(code, 201, body)

    def test_V13_authors_of_templates_and_remediations_are_recorded(self):
        self.alice_writes_nodegate_objects()
        forged = {BY: "mallory", BY_GROUPS: '["system:masters"]', "team": "infra"}
        code, t, _ = self.api.api("POST", NDT_PATH, ndt_body("v13", {"priority": 1}, forged), user="alice")
        self.assertEqual(code, 201, t)
        code, r, _ = self.api.api("POST", NREM_PATH, nrem_body("v13", forged), user="alice")
        self.assertEqual(code, 201, r)
        for obj in (t, r):
            ann = obj["metadata"]["annotations"]
            self.assertEqual(ann[BY], "alice")
            groups = json.loads(ann[BY_GROUPS])
            self.assertTrue(isinstance(groups, list) and "system:masters" not in groups, groups)
            self.assertEqual(ann["team"], "infra")
        # A change of spec records its author; a change of anything else keeps the recorded one.
        code, body, _ = self.api.api("PATCH", f"{NDT_PATH}/v13", {"spec": {"priority": 2}},
                                     ctype="application/merge-patch+json")
        self.assertEqual((code, body["metadata"]["annotations"][BY]), (200, "admin"), body)
        admin_groups = body["metadata"]["annotations"][BY_GROUPS]
        self.assertIn("system:masters", json.loads(admin_groups))
        for path in (f"{NDT_PATH}/v13", f"{NREM_PATH}/v13"):
            code, body, _ = self.api.api("PATCH", path, {"metadata": {"annotations": {BY: "mallory", "x": "y"}}},
                                         user="alice", ctype="application/merge-patch+json")
            self.assertEqual(code, 200, body)
            self.assertEqual(body["metadata"]["annotations"][BY], "admin" if "templates" in path else "alice")
            code, body, _ = self.api.api("PATCH", path, {"metadata": {"annotations": {BY_GROUPS: None}}},
                                         user="alice", ctype="application/merge-patch+json")
            self.assertEqual(code, 200, body)
            self.assertIn(BY_GROUPS, body["metadata"]["annotations"])
        # A status write keeps them too.
        code, body, _ = self.api.api("PATCH", f"{NREM_PATH}/v13/status",
                                     {"metadata": {"annotations": {BY: "mallory"}}, "status": {"matchedNodes": 0}},
                                     user="alice", ctype="application/merge-patch+json")
        self.assertEqual(code, 200, body)
        self.assertEqual(body["metadata"]["annotations"][BY], "alice", body["metadata"])

    def test_object_webhooks_are_counted(self):
        # a request the CRD's own rules let through (an empty selector they refuse before any webhook)
        self.denied("POST", ND_PATH, nd_body("m", {"nodeNames": ["node3"], "drain": {
            "podEvictionFilters": [{"byResourceNameRegex": "nvidia.com/gpu-("}]}}), "does not compile")
        self.create(ND_PATH, nd_body("m2", {"nodeNames": ["node3"]}))
        _, text = self.ng.get("/metrics")
        text = text.decode()
        self.assertIn('nodegate_admission_requests_total{webhook="nodedisruption",decision="denied"} 1', text)
        self.assertIn('nodegate_admission_requests_total{webhook="nodedisruption-mutate",decision="allowed"} 2', text)


def load_tests(loader, tests, pattern):
    """Only ValidationTest's own tests (GateTest's run in e2e-gate)."""
    return unittest.TestSuite(ValidationTest(n) for n in loader.getTestCaseNames(ValidationTest)
                              if n in vars(ValidationTest))


if __name__ == "__main__":
    unittest.main()
