#!/usr/bin/env python3
"""e2e: nodegate's RBAC (manifests/rbac/**/*.json) is exactly what nodegate calls.

The test API server records every authorization decision (--authz-log, set for every server
these tests start through $KTESTAPI_AUTHZ_LOG). The tests run the flows of nodegate as its
ServiceAccount system:serviceaccount:nodegate:nodegate with the RBAC fixtures and nothing else:

  * test_1_gate_and_drain: `serve` (gate, eviction webhook, leader Lease, `--admin-auth
    kubernetes` with a TokenReview and a SubjectAccessReview) and `drain` (leader Lease): an
    NDB and an ADB (their status), a NodeDisruption granted, drained with evictions and one
    Delete-strategy pod outside the protected namespaces (namespace lookup, pod delete),
    volume attachments counted, an operation Job created and read, Events, finalizers, release
    (node patch) and the request deleted;
  * test_2_auto_request: a denied eviction makes `serve` create the NodeDisruption itself; its
    API server has no WatchList (`--watch-list off`), so every cache of serve and drain lists in
    pages (verb `list`), where the other tests stream their lists (verb `watch`);
  * test_4_remediation: a NodeRemediation repairs node1 from a NodeDisruptionTemplate (the
    request created, drained, deleted once the node is healthy; status, finalizer, Events), then
    is deleted;
  * test_5_cluster_api: a Machine on node1, covered by an NDB, gets nodegate's pre-drain hook;
    deleted, its request is created and granted, the hook removed; gone, its request is deleted;
  * test_3_self_signed: `serve --self-signed` with manifests/rbac/self-signed (CA Secret get and
    create, webhook configurations listed and patched).

test_9_audit then asserts (a) that no request of the ServiceAccount was denied and (b) that every
rule granted to it (apiGroup, resource, verb, resourceName) was used at least once, except the
ones listed in RARE with the reason. Rules never used are printed.

Environment: as the other e2e suites (NODEGATE, NG_SOURCE_ROOT)."""
import http.client
import json
import os
import shutil
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_drain  # noqa: E402  (as a module: its test classes must not be collected here)
from test_drain import DRAIN_FIXTURE, FORCE, NGC_PATH, NDB_PATH, VA_PATH, BACKOFF, Drainer, log  # noqa: E402
from test_live_cache import (CRDS, ND_PATH, ROOT, WAIT_S, Nodegate, ServerProcess, eventually,  # noqa: E402
                             evict, make_client_ca)
import test_selfsigned  # noqa: E402
from ktestapi.authz import bootstrap_objects  # noqa: E402
from ktestapi.yamlish import load_all  # noqa: E402

SA = "system:serviceaccount:nodegate:nodegate"
SA_GROUPS = ("system:serviceaccounts", "system:serviceaccounts:nodegate", "system:authenticated")
RBAC_DIR = os.path.join(ROOT, "manifests", "rbac")
SELF_SIGNED_RBAC = os.path.join(RBAC_DIR, "self-signed", "self-signed.json")
ADB_PATH = "/apis/nodegate.io/v1alpha1/namespaces/default/applicationdisruptionbudgets"
MACHINE_CRDS = os.path.join(ROOT, "tests", "e2e", "cluster-api-crds.json")
MACHINES = "/apis/cluster.x-k8s.io/v1beta1/namespaces/default/machines"
CAPI_HOOK = "pre-drain.delete.hook.machine.cluster.x-k8s.io/nodegate"
LOG = os.path.join(tempfile.gettempdir(), "ng-rbac-audit-%d.jsonl" % os.getpid())

# Granted rules a run of these flows does not reach, each with why it must stay.
RARE = {
    ("nodegate.io", "nodedisruptions", "get", None):
        "the gate reads the request (GET) only to send it to the health hooks of the budgets that "
        "cover it (controller/gate_hooks.c hook_body); tests/e2e/test_hooks.py covers it",
    ("nodegate.io", "nodedisruptions/privileged-operation", "create", None):
        "never called: the object webhooks ask it of nodegate's own account by SubjectAccessReview when "
        "remediation creates a request with a privileged operation (a reboot), which the API server "
        "evaluates without recording it as a request of the account; tests/e2e/test_validation.py V12 "
        "covers the check",
}


def rbac_files():
    out = []
    for d, _, files in os.walk(RBAC_DIR):
        out += [os.path.join(d, f) for f in sorted(files) if f.endswith(".json")]
    return sorted(out)


def granted_rules():
    """{(apiGroup, resource, verb, resourceName or None): "Kind/name"} that bind to the SA."""
    objs = list(bootstrap_objects())
    for f in rbac_files():
        with open(f, encoding="utf-8") as fh:
            doc = json.load(fh)
        objs += doc.get("items", [doc])
    roles = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objs
             if o.get("kind") in ("Role", "ClusterRole")}
    out = {}
    for b in objs:
        if b.get("kind") not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not any((s.get("kind") == "ServiceAccount" and s.get("name") == "nodegate"
                    and s.get("namespace", b["metadata"].get("namespace")) == "nodegate")
                   or (s.get("kind") == "Group" and s.get("name") in SA_GROUPS) for s in b.get("subjects") or []):
            continue
        ref = b["roleRef"]
        ns = b["metadata"].get("namespace", "") if ref["kind"] == "Role" else ""
        role = roles.get((ref["kind"], ns, ref["name"]))
        assert role is not None, f"{b['kind']} {b['metadata']['name']} binds a role not in the manifests: {ref}"
        if b.get("kind") == "ClusterRoleBinding" and any(s.get("kind") == "Group" for s in b["subjects"]):
            continue  # bootstrap bindings for every authenticated user (discovery, self reviews)
        for r in role.get("rules") or []:
            for g in r.get("apiGroups") or []:
                for res in r.get("resources") or []:
                    for v in r.get("verbs") or []:
                        for n in r.get("resourceNames") or [None]:
                            out[(g, res, v, n)] = f"{role['kind']}/{role['metadata']['name']}"
    return out


def used_by(rule, decisions):
    g, res, verb, name = rule
    for e in decisions:
        if not e.get("allowed") or "resource" not in e:
            continue
        full = e["resource"] + ("/" + e["subresource"] if e.get("subresource") else "")
        if e["apiGroup"] == g and full == res and e["verb"] == verb and (name is None or e.get("name") == name):
            return True
    return False


def decisions():
    out = []
    try:
        with open(LOG, encoding="utf-8") as f:
            for line in f:
                if line.endswith("\n"):
                    e = json.loads(line)
                    if e.get("user") == SA:
                        out.append(e)
    except FileNotFoundError:
        pass
    return out


class RbacAudit(test_drain.DrainTest):
    """DrainTest's cluster (drainer fixture, NodeGateConfig, serve + drain as the SA), with serve
    also under --admin-auth kubernetes and the authorization log on."""

    NGC_SPEC = {"drain": {"protectedNamespaces": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}}
    # the drain scenarios' helpers
    operation_job = test_drain.DrainScenarios.operation_job
    JOB_TEMPLATE = test_drain.DrainScenarios.JOB_TEMPLATE
    JOB_MESSAGES = test_drain.DrainScenarios.JOB_MESSAGES
    JOB_POLL_S = test_drain.DrainScenarios.JOB_POLL_S
    job_status = test_drain.DrainScenarios.job_status
    job_condition = staticmethod(test_drain.DrainScenarios.job_condition)
    start_job = test_drain.DrainScenarios.start_job
    finish_job = test_drain.DrainScenarios.finish_job

    @classmethod
    def setUpClass(cls):
        if os.path.exists(LOG):
            os.unlink(LOG)
        cls.saved_env = os.environ.get("KTESTAPI_AUTHZ_LOG")
        os.environ["KTESTAPI_AUTHZ_LOG"] = LOG

    @classmethod
    def tearDownClass(cls):
        if cls.saved_env is None:
            os.environ.pop("KTESTAPI_AUTHZ_LOG", None)
        else:
            os.environ["KTESTAPI_AUTHZ_LOG"] = cls.saved_env
        if not os.environ.get("KTESTAPI_KEEP") and os.path.exists(LOG):
            os.unlink(LOG)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ng-rbac-audit-")
        self.ng = self.drainer = self.watch = None
        self.t_start = time.monotonic()
        ca, crt, key = make_client_ca(self.tmp)
        # The Machine CRD too: serve lists, watches and patches Machines (test_5_cluster_api).
        extra = ["--webhook-client-cert", f"{crt}:{key}"]
        if self._testMethodName == "test_2_auto_request":
            extra += ["--watch-list", "off"]  # lists in pages: the rules' `list`
        self.api = ServerProcess(fixtures=CRDS + [MACHINE_CRDS, DRAIN_FIXTURE], start_timeout=300,
                                 extra_args=extra)
        self.api.start()
        try:
            spec = json.loads(json.dumps(self.NGC_SPEC))
            spec["drain"]["backoff"] = dict(BACKOFF)
            if self._testMethodName == "test_2_auto_request":
                spec["eviction"] = {"autoRequest": True}
            if self._testMethodName == "test_5_medik8s_leases":
                spec["medik8sLeases"] = True
            self.create(NGC_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeGateConfig",
                                   "metadata": {"name": "default"}, "spec": spec})
            self.ng = Nodegate(self.api, self.tmp, client_ca=ca, extra_args=["--admin-auth", "kubernetes"])
            self.ng.register_webhook()
            self.ng.register_author_webhook()
            self.drainer = Drainer(self.api, self.tmp)
        except BaseException:
            self.abandon_setup()
            raise

    def admin_get(self, path, token):
        c = http.client.HTTPConnection("127.0.0.1", self.ng.admin_port, timeout=20)
        try:
            c.request("GET", path, headers={"Authorization": "Bearer " + token})
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def test_1_gate_and_drain(self):
        # --admin-auth kubernetes: the caller's token reviewed, then its access
        code, _ = self.admin_get("/debug/cache", self.api.tokens["admin"])
        self.assertEqual(code, 200)
        # budgets over node1 and its web pod: the gate writes their status
        self.create(NDB_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget",
                               "metadata": {"name": "audit"},
                               "spec": {"nodeSelector": {"matchLabels": {"testselect": "test1"}},
                                        "maxDisruptedNodes": 1}})
        self.create(ADB_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "ApplicationDisruptionBudget",
                               "metadata": {"name": "audit", "namespace": "default"},
                               "spec": {"podSelector": {"matchLabels": {"app": "web"}}, "maxDisruptions": 1}})
        ok, _ = eventually(lambda: self.api.api("GET", f"{ADB_PATH}/audit")[1].get("status")
                           and self.api.api("GET", f"{NDB_PATH}/audit")[1].get("status"), WAIT_S, 0.1)
        self.assertTrue(ok, "the gate never wrote the budgets' status")
        # a VolumeAttachment holds Drained back until it goes
        self.create(VA_PATH, {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
                              "metadata": {"name": "va-node1"},
                              "spec": {"attacher": "csi.example.com", "nodeName": "node1",
                                       "source": {"persistentVolumeName": "pv-1"}}})
        # Evict the others, Delete web-1 (default namespace, not protected), then the operation Job
        self.nd("audit", dict(FORCE, evictionStrategy="Delete"), operation={"jobTemplate": self.JOB_TEMPLATE})
        self.wait_granted("audit")
        ok, _ = eventually(lambda: self.api.api("GET", "/api/v1/namespaces/default/pods/web-1")[0] == 404,
                           WAIT_S, 0.1)
        self.assertTrue(ok, "web-1 was never deleted:" + self.describe("audit"))
        code, _, _ = self.api.api("DELETE", f"{VA_PATH}/va-node1")
        self.assertEqual(code, 200)
        self.wait_reason("audit", "Operating")
        job = self.operation_job("audit")
        self.start_job(job)
        self.finish_job(job, "Complete", "CompletionsReached")
        self.wait_reason("audit", "Completed", status="True")
        self.assert_event("audit", "Completed")
        # a second request evicts (the first one's strategy was Delete for every pod)
        self.delete_nd("audit")
        self.wait_gone("audit")
        self.assert_released()
        self.nd("audit-evict", FORCE, nodes=("node1",))
        # the drainer has nothing left to evict on node1 but DaemonSet/mirror pods; make one
        self.create("/api/v1/namespaces/default/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "late", "namespace": "default"},
            "spec": {"nodeName": "node1", "containers": [{"name": "c", "image": "i"}]}})
        self.wait_drained("audit-evict")
        self.assertIn("default/late", self.evicted_refs())
        self.delete_nd("audit-evict")
        self.wait_gone("audit-evict")
        # let both leaders renew their Lease at least once (update)
        time.sleep(1)

    def test_5_medik8s_leases(self):
        """medik8sLeases: a grant of node1 without a Lease (nodegate creates it), the request
        deleted (nodegate deletes it); then another holder's expired Lease on node1 and a new
        grant (nodegate takes it over with a patch), deleted again. The Leases of medik8s-leases
        are listed and watched throughout."""
        leases = "/apis/coordination.k8s.io/v1/namespaces/medik8s-leases/leases"

        def holder():
            code, body, _ = self.api.api("GET", f"{leases}/node-node1")
            return body["spec"].get("holderIdentity") if code == 200 else None
        for name in ("m8s-create", "m8s-take-over"):
            if name == "m8s-take-over":
                self.create(leases, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                     "metadata": {"name": "node-node1"},
                                     "spec": {"holderIdentity": "node-maintenance", "leaseDurationSeconds": 60,
                                              "renewTime": "2026-01-01T00:00:00.000000Z"}})
            self.nd(name, nodes=("node1",))
            self.wait_granted(name)
            ok, _ = eventually(lambda: holder() == "nodegate", WAIT_S, 0.1)
            self.assertTrue(ok, f"{name}: node1's Lease is held by {holder()!r}")
            self.delete_nd(name)
            self.wait_gone(name)
            ok, _ = eventually(lambda: holder() is None, WAIT_S, 0.1)
            self.assertTrue(ok, f"{name}: nodegate's Lease outlived the request")

    def test_2_auto_request(self):
        self.create(ADB_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "ApplicationDisruptionBudget",
                               "metadata": {"name": "web", "namespace": "default"},
                               "spec": {"podSelector": {"matchLabels": {"app": "web"}}, "maxDisruptions": 1}})
        ok, _ = eventually(lambda: (self.api.api("GET", f"{ADB_PATH}/web")[1].get("status") or {})
                           .get("watchedNodeCount"), WAIT_S, 0.1)
        self.assertTrue(ok, "the gate never counted the ADB's nodes")
        code, body, _ = evict(self.api, "web-1", dry_run=False)
        self.assertEqual(code, 429, body)
        ok, _ = eventually(lambda: self.api.api("GET", f"{ND_PATH}/auto-node1")[0] == 200, WAIT_S, 0.1)
        self.assertTrue(ok, "the denied eviction never created auto-node1")

    def test_4_remediation(self):
        ndt = "/apis/nodegate.io/v1alpha1/nodedisruptiontemplates"
        nrem = "/apis/nodegate.io/v1alpha1/noderemediations"
        self.create(ndt, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionTemplate",
                          "metadata": {"name": "audit"}, "spec": {"drain": FORCE}})
        self.create(nrem, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeRemediation",
                           "metadata": {"name": "audit"},
                           "spec": {"nodeSelector": {"matchLabels": {"testselect": "test1"}},
                                    "rule": {"conditions": [{"type": "example.com/Audit", "status": "True"}]},
                                    "templateName": "audit"}})

        def condition(status):
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            self.patch("/api/v1/nodes/node1/status", {"status": {"conditions": [
                {"type": "Ready", "status": "True", "reason": "KubeletReady"},
                {"type": "example.com/Audit", "status": status, "reason": "Audit", "lastTransitionTime": now}]}})
        self.t_created = time.monotonic()
        condition("True")
        self.wait_drained("audit-node1")
        condition("False")
        self.wait_gone("audit-node1")
        ok, _ = eventually(lambda: [e.get("node") for e in (self.api.api("GET", f"{nrem}/audit")[1]
                                                             .get("status") or {}).get("lastRemediated") or []]
                           == ["node1"], WAIT_S, 0.1)
        self.assertTrue(ok, "the repair was never recorded in status.lastRemediated")
        code, _, _ = self.api.api("DELETE", f"{nrem}/audit")
        self.assertEqual(code, 200)
        ok, _ = eventually(lambda: self.api.api("GET", f"{nrem}/audit")[0] == 404, WAIT_S, 0.1)
        self.assertTrue(ok, "the deleted NodeRemediation kept its finalizer")

    def test_5_cluster_api(self):
        self.create(NDB_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget",
                               "metadata": {"name": "audit"},
                               "spec": {"nodeSelector": {"matchLabels": {"testselect": "test1"}},
                                        "maxDisruptedNodes": 1}})
        self.create(MACHINES, {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine", "metadata": {
            "name": "m1", "namespace": "default", "finalizers": ["machine.cluster.x-k8s.io/stand-in"]},
            "spec": {"clusterName": "audit"}})
        code, body, _ = self.api.api("PATCH", f"{MACHINES}/m1/status", {"status": {"nodeRef": {
            "kind": "Node", "name": "node1"}}}, ctype="application/merge-patch+json")
        self.assertEqual(code, 200, body)

        def hook():
            return CAPI_HOOK in (self.api.api("GET", f"{MACHINES}/m1")[1]["metadata"].get("annotations") or {})
        ok, _ = eventually(hook, WAIT_S, 0.1)
        self.assertTrue(ok, "serve never put its pre-drain hook on the Machine")
        code, body, _ = self.api.api("DELETE", f"{MACHINES}/m1")
        self.assertEqual(code, 200, body)
        ok, _ = eventually(lambda: not hook(), WAIT_S, 0.1)
        self.assertTrue(ok, "the hook never went once the request was granted")
        self.assertEqual(self.api.api("GET", f"{ND_PATH}/capi-default.m1")[1]["status"]["state"], "Granted")
        code, body, _ = self.api.api("PATCH", f"{MACHINES}/m1", {"metadata": {"finalizers": None}},
                                     ctype="application/merge-patch+json")
        self.assertEqual(code, 200, body)
        ok, _ = eventually(lambda: self.api.api("GET", f"{ND_PATH}/capi-default.m1")[0] == 404, WAIT_S, 0.1)
        self.assertTrue(ok, "the request outlived its Machine")

    def test_3_self_signed(self):
        # serve --self-signed on its own server with the opt-in RBAC and the three labelled
        # webhook configurations of manifests/base (url clientConfig, Ignore: nothing answers)
        hooks = []
        with open(os.path.join(ROOT, "manifests", "base", "webhooks.yaml"), encoding="utf-8") as f:
            for o in load_all(f.read()):
                if o and o.get("kind", "").endswith("WebhookConfiguration"):
                    o["metadata"]["labels"] = {"app.kubernetes.io/name": "nodegate"}
                    for w in o["webhooks"]:
                        w["clientConfig"] = {"url": "https://127.0.0.1:1/x"}
                        w["failurePolicy"] = "Ignore"
                    hooks.append(o)
        fixture = os.path.join(self.tmp, "selfsigned.json")
        with open(fixture, "w", encoding="utf-8") as f:
            json.dump({"apiVersion": "v1", "kind": "List", "items": test_selfsigned.FIXTURE["items"] + hooks}, f)
        with ServerProcess(fixtures=CRDS + [SELF_SIGNED_RBAC, fixture], start_timeout=300) as api:
            r = test_selfsigned.Replica(api, self.tmp, "ss")
            try:
                def patched():
                    for o in hooks:
                        kind = o["kind"].lower() + "s"
                        code, body, _ = api.api("GET", f"/apis/admissionregistration.k8s.io/v1/{kind}/"
                                                f"{o['metadata']['name']}")
                        if code != 200 or not all(w["clientConfig"].get("caBundle") for w in body["webhooks"]):
                            return False
                    return api.api("GET", test_selfsigned.SECRET_PATH)[0] == 200
                ok, _ = eventually(patched, 3 * WAIT_S, 0.2)
                self.assertTrue(ok, "serve --self-signed never wrote the CA:\n" + r.read_log())
            finally:
                self.assertEqual(r.stop(), 0)

    def test_9_audit(self):
        seen = decisions()
        self.assertTrue(seen, f"no decision of {SA} recorded in {LOG}")
        denied = sorted({json.dumps({k: e.get(k) for k in ("verb", "apiGroup", "resource", "subresource",
                                                            "namespace", "name", "path")}, sort_keys=True)
                         for e in seen if not e["allowed"]})
        granted = granted_rules()
        unused = sorted((r for r in granted if not used_by(r, seen)), key=lambda r: tuple(x or "" for x in r))
        log(f"{len(seen)} decisions of {SA}; {len(granted)} granted rules")
        for r in unused:
            log(f"never used: {granted[r]} {r}" + (f" (allowed: {RARE[r]})" if r in RARE else ""))
        self.assertEqual(denied, [], f"requests of {SA} denied by the RBAC of manifests/rbac")
        self.assertEqual([r for r in unused if r not in RARE], [],
                         "granted by manifests/rbac but never used: remove them, or list them in RARE with why")
        self.assertEqual([r for r in RARE if r not in granted], [], "RARE names rules that are not granted")


if __name__ == "__main__":
    unittest.main()
