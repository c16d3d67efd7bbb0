#!/usr/bin/env python3
"""e2e: the ClusterRoles nodegate ships for its users (manifests/rbac/users) give each one what
docs/security.md's "Who may do what" table says, and nothing more.

The test API server evaluates RBAC as kube-apiserver does (aggregated ClusterRoles included). It
starts with nodegate's CRDs and the user roles, binds them as an operator would, and every user
acts through impersonation, as `kubectl --as` does: real creates that must succeed or be refused
with 403, plus SubjectAccessReviews for the rights no create shows (the privileged-operation
permission nodegate's webhook asks about).

No nodegate process runs: this is about the roles alone. Environment: NG_SOURCE_ROOT."""
import glob
import json
import os
import sys
import unittest

ROOT = os.environ.get("NG_SOURCE_ROOT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "apiserver"))
from ktestapi.testing import ServerProcess  # noqa: E402

USERS = os.path.join(ROOT, "manifests", "rbac", "users", "users.json")
CRDS = sorted(glob.glob(os.path.join(ROOT, "manifests", "crds", "*.json")))
G = "/apis/nodegate.io/v1alpha1"
RBAC = "/apis/rbac.authorization.k8s.io/v1"


def nd(name, operation=None):
    spec = {"nodeNames": ["node1"], "type": "maintenance", "requestor": "roles-test"}
    if operation:
        spec["operation"] = operation
    return {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption", "metadata": {"name": name},
            "spec": spec}


def adb(ns, name):
    return {"apiVersion": "nodegate.io/v1alpha1", "kind": "ApplicationDisruptionBudget",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"podSelector": {"matchLabels": {"app": name}}, "maxDisruptions": 1}}


def ndb(name):
    return {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget", "metadata": {"name": name},
            "spec": {"nodeSelector": {"matchLabels": {"pool": name}}, "maxDisruptedNodes": 1}}


def ngc():
    return {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig", "metadata": {"name": "default"},
            "spec": {"paused": True}}


class RolesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.api = ServerProcess(fixtures=CRDS + [USERS], start_timeout=120)
        cls.api.start()
        for ns in ("team-a", "team-b"):
            cls.ok("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        # An operator's bindings: the maintenance tool, a privileged maintenance tool, the
        # operators, and a team that edits (built-in edit) or views (built-in view) team-a.
        cls.bind_cluster("maint-tool", "nodegate-requestor")
        cls.bind_cluster("reboot-tool", "nodegate-requestor")
        cls.bind_cluster("reboot-tool", "nodegate-privileged-operation")
        cls.bind_cluster("operator", "nodegate-admin")
        cls.bind_namespace("team-a", "team-dev", "edit")
        cls.bind_namespace("team-a", "team-viewer", "view")

    @classmethod
    def tearDownClass(cls):
        cls.api.stop()

    def tearDown(self):
        self.api.check_audit()   # the server is the class's: each test answers for its own writes

    @classmethod
    def ok(cls, method, path, body):
        code, out, _ = cls.api.api(method, path, json.dumps(body).encode())
        assert code in (200, 201), (code, out)

    @classmethod
    def bind_cluster(cls, user, role):
        cls.ok("POST", RBAC + "/clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "%s-%s" % (user, role)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})

    @classmethod
    def bind_namespace(cls, ns, user, role):
        cls.ok("POST", RBAC + "/namespaces/%s/rolebindings" % ns, {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "%s-%s" % (user, role), "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})

    def as_user(self, user, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        code, out, _ = self.api.api(method, path, data, headers={"Impersonate-User": user,
                                                                 "Impersonate-Group": "system:authenticated"})
        return code, out

    def may(self, user, verb, resource, namespace="", subresource=""):
        """kube-apiserver's answer to a SubjectAccessReview for @user (what nodegate asks)."""
        sar = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
               "spec": {"user": user, "groups": ["system:authenticated"],
                        "resourceAttributes": {"group": "nodegate.io", "resource": resource, "verb": verb,
                                               "namespace": namespace, "subresource": subresource}}}
        code, out, _ = self.api.api("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                                    json.dumps(sar).encode())
        self.assertEqual(code, 201, out)
        return out["status"]["allowed"]

    def assertCreated(self, user, path, body):
        code, out = self.as_user(user, "POST", path, body)
        self.assertEqual(code, 201, "%s creating %s: %s" % (user, body["kind"], out))

    def assertForbidden(self, user, path, body):
        code, out = self.as_user(user, "POST", path, body)
        self.assertEqual(code, 403, "%s creating %s: %s" % (user, body["kind"], out))

    def test_requestor_asks_for_nodes_and_nothing_else(self):
        self.assertCreated("maint-tool", G + "/nodedisruptions", nd("maint-1"))
        code, out = self.as_user("maint-tool", "DELETE", G + "/nodedisruptions/maint-1")
        self.assertEqual(code, 200, out)
        code, out = self.as_user("maint-tool", "GET", G + "/nodedisruptionbudgets")
        self.assertEqual(code, 200, out)  # reads what decides its requests
        self.assertForbidden("maint-tool", G + "/nodedisruptionbudgets", ndb("maint"))
        self.assertForbidden("maint-tool", G + "/nodegateconfigs", ngc())
        self.assertForbidden("maint-tool", G + "/namespaces/team-a/applicationdisruptionbudgets",
                             adb("team-a", "maint"))
        self.assertFalse(self.may("maint-tool", "create", "nodedisruptions", subresource="privileged-operation"))
        self.assertFalse(self.may("maint-tool", "create", "noderemediations"))
        self.assertFalse(self.may("maint-tool", "create", "nodedisruptiontemplates"))
        self.assertFalse(self.may("maint-tool", "patch", "nodedisruptions", subresource="status"))

    def test_privileged_operation_is_a_right_of_its_own(self):
        self.assertTrue(self.may("reboot-tool", "create", "nodedisruptions", subresource="privileged-operation"))
        self.assertTrue(self.may("reboot-tool", "create", "nodedisruptions"))
        self.assertFalse(self.may("reboot-tool", "create", "nodegateconfigs"))

    def test_namespace_editors_own_their_budgets_only(self):
        self.assertCreated("team-dev", G + "/namespaces/team-a/applicationdisruptionbudgets", adb("team-a", "db"))
        self.assertForbidden("team-dev", G + "/namespaces/team-b/applicationdisruptionbudgets", adb("team-b", "db"))
        self.assertForbidden("team-dev", G + "/nodedisruptions", nd("team-1"))
        self.assertForbidden("team-dev", G + "/nodedisruptionbudgets", ndb("team"))
        self.assertFalse(self.may("team-dev", "patch", "applicationdisruptionbudgets", "team-a", "status"))
        code, out = self.as_user("team-viewer", "GET", G + "/namespaces/team-a/applicationdisruptionbudgets")
        self.assertEqual(code, 200, out)
        self.assertForbidden("team-viewer", G + "/namespaces/team-a/applicationdisruptionbudgets",
                             adb("team-a", "viewer"))

    def test_admin_aggregates_every_role(self):
        self.assertCreated("operator", G + "/nodegateconfigs", ngc())
        self.assertCreated("operator", G + "/nodedisruptionbudgets", ndb("ops"))
        self.assertCreated("operator", G + "/namespaces/team-b/applicationdisruptionbudgets", adb("team-b", "ops"))
        self.assertCreated("operator", G + "/nodedisruptions", nd("ops-1"))
        for resource in ("noderemediations", "nodedisruptiontemplates"):
            self.assertTrue(self.may("operator", "create", resource), resource)
        self.assertTrue(self.may("operator", "create", "nodedisruptions", subresource="privileged-operation"))
        # Decisions stay nodegate's: nobody's role writes a request's status.
        self.assertFalse(self.may("operator", "patch", "nodedisruptions", subresource="status"))


if __name__ == "__main__":
    unittest.main()
