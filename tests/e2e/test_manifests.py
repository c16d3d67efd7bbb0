#!/usr/bin/env python3
"""e2e: nodegate's kustomize install (manifests/base and manifests/overlays/*).

For each overlay, real `kubectl kustomize` renders it offline and the rendered objects are
checked as an operator would read them: the inventory, labels, the Deployment's security
context, probes, resources, replicas and spreading, the Service and PodDisruptionBudget, the
webhook configurations' rules, failurePolicy, timeouts and namespaceSelector, the RBAC, the
NetworkPolicy, and the overlay's certificate wiring. Then `kubectl apply -f -` applies the
rendering to the test API server (cert-manager's CRDs, a minimal stand-in from
tests/e2e/cert-manager-crds.json, are installed first for that overlay); every rendered object
must then exist there with the rendered content, and a second apply must change nothing. The
same is done with `kubectl apply --server-side`, as GitOps tools apply; while the test API
server cannot create objects by server-side apply (it answers 404 or 415), those tests are
skipped with the server's answer printed, never passed.

With the configurations applied and no nodegate running, the test API server (which calls
webhooks as kube-apiserver does) also shows what docs/install.md says about an outage and an
uninstall: evictions outside nodegate's namespace and new NodeDisruptions are refused, nodegate's
own pods can still be evicted, setting failurePolicy Ignore or deleting nodegate-eviction lets
evictions through, and the uninstall steps leave nothing behind, finalizers included.

No nodegate process is started: nothing here runs the pods. Environment: NG_SOURCE_ROOT (the
repository)."""
import json
import os
import re
import subprocess
import sys
import unittest

ROOT = os.environ.get("NG_SOURCE_ROOT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "apiserver"))
from ktestapi.testing import ServerProcess  # noqa: E402

MANIFESTS = os.path.join(ROOT, "manifests")
OVERLAYS = ("default", "cert-manager")
CERT_MANAGER_CRDS = os.path.join(ROOT, "tests", "e2e", "cert-manager-crds.json")
NS = "nodegate"
OPS = "nodegate-operations"  # the drainer's operation Jobs, away from nodegate's Secrets
M8S = "medik8s-leases"  # medik8s's node Leases (docs/integrations/medik8s.md)
NAME_LABEL = {"app.kubernetes.io/name": "nodegate"}
UID = 65532
# kubectl's own behaviour, not ours: a PodDisruptionBudget's selector has patchStrategy
# "replace", so the strategic merge patch kubectl computes for it is never empty and a repeated
# `kubectl apply` reports it "configured" while sending the same content. Whether anything
# changed is checked on the objects themselves (everything but status and resourceVersion).
ALWAYS_PATCHED = {"PodDisruptionBudget"}

# What each overlay renders, as (kind, namespace, name).
BASE = {
    ("Namespace", "", NS),
    ("Namespace", "", OPS),
    ("CustomResourceDefinition", "", "nodedisruptions.nodegate.io"),
    ("CustomResourceDefinition", "", "nodedisruptionbudgets.nodegate.io"),
    ("CustomResourceDefinition", "", "applicationdisruptionbudgets.nodegate.io"),
    ("CustomResourceDefinition", "", "nodegateconfigs.nodegate.io"),
    ("CustomResourceDefinition", "", "noderemediations.nodegate.io"),
    ("CustomResourceDefinition", "", "nodedisruptiontemplates.nodegate.io"),
    ("ServiceAccount", NS, "nodegate"),
    ("ServiceAccount", OPS, "nodegate-operation"),  # operation Jobs run as it; no rights
    ("ClusterRole", "", "nodegate"), ("ClusterRoleBinding", "", "nodegate"),
    ("ClusterRole", "", "nodegate-drain"), ("ClusterRoleBinding", "", "nodegate-drain"),
    ("Role", NS, "nodegate-leader"), ("RoleBinding", NS, "nodegate-leader"),
    ("Role", OPS, "nodegate-drain-jobs"), ("RoleBinding", OPS, "nodegate-drain-jobs"),
    ("Namespace", "", M8S),
    ("Role", M8S, "nodegate-medik8s-leases"), ("RoleBinding", M8S, "nodegate-medik8s-leases"),
    # the users' roles (manifests/rbac/users), bound by nobody: tests/e2e/test_roles.py
    ("ClusterRole", "", "nodegate-requestor"), ("ClusterRole", "", "nodegate-privileged-operation"),
    ("ClusterRole", "", "nodegate-budget-owner"), ("ClusterRole", "", "nodegate-budget-viewer"),
    ("ClusterRole", "", "nodegate-admin-rules"), ("ClusterRole", "", "nodegate-admin"),
    ("Deployment", NS, "nodegate"),
    ("Service", NS, "nodegate"),
    ("PodDisruptionBudget", NS, "nodegate"),
    ("NetworkPolicy", NS, "nodegate"),
    ("ValidatingWebhookConfiguration", "", "nodegate-eviction"),
    ("ValidatingWebhookConfiguration", "", "nodegate-objects"),
    ("MutatingWebhookConfiguration", "", "nodegate-objects"),
}
OPERATIONS = {("ServiceAccount", OPS, "nodegate-operation"),
              ("Role", OPS, "nodegate-drain-jobs"), ("RoleBinding", OPS, "nodegate-drain-jobs")}
INVENTORY = {
    "default": BASE | {("Role", NS, "nodegate-ca"), ("RoleBinding", NS, "nodegate-ca"),
                       ("ClusterRole", "", "nodegate-webhook-ca"), ("ClusterRoleBinding", "", "nodegate-webhook-ca")},
    "cert-manager": BASE | {("Issuer", NS, "nodegate-selfsigned"), ("Certificate", NS, "nodegate-root-ca"),
                            ("Issuer", NS, "nodegate-root-ca"), ("Certificate", NS, "nodegate-tls")},
}

# The webhooks as docs/eviction-webhook.md and docs/admission-webhooks.md register them:
# (configuration kind, configuration name, webhook name) -> (path, rules, sideEffects).
ND_RULE = {"apiGroups": ["nodegate.io"], "apiVersions": ["v1alpha1"]}
# The kinds whose authors nodegate records (status too: a status write must not change them).
AUTHORED = ["nodedisruptiontemplates", "noderemediations", "noderemediations/status"]
WEBHOOKS = {
    ("ValidatingWebhookConfiguration", "nodegate-eviction", "eviction.nodegate.io"):
        ("/validate/eviction", [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                 "resources": ["pods/eviction"], "scope": "Namespaced"}], "NoneOnDryRun"),
    ("ValidatingWebhookConfiguration", "nodegate-objects", "nodedisruption.nodegate.io"):
        ("/validate/nodedisruption", [dict(ND_RULE, operations=["CREATE", "UPDATE"], resources=["nodedisruptions"],
                                           scope="Cluster")], "None"),
    ("ValidatingWebhookConfiguration", "nodegate-objects", "nodedisruption-status.nodegate.io"):
        ("/validate/nodedisruption-status", [dict(ND_RULE, operations=["UPDATE"],
                                                  resources=["nodedisruptions/status"], scope="Cluster")], "None"),
    ("ValidatingWebhookConfiguration", "nodegate-objects", "budget.nodegate.io"):
        ("/validate/budget", [dict(ND_RULE, operations=["CREATE", "UPDATE"],
                                   resources=["applicationdisruptionbudgets", "nodedisruptionbudgets",
                                              "nodegateconfigs"], scope="*")], "None"),
    ("MutatingWebhookConfiguration", "nodegate-objects", "created-by.nodegate.io"):
        ("/mutate/nodedisruption", [dict(ND_RULE, operations=["CREATE"], resources=["nodedisruptions"],
                                         scope="Cluster")], "None"),
    ("ValidatingWebhookConfiguration", "nodegate-objects", "authored.nodegate.io"):
        ("/validate/authored", [dict(ND_RULE, operations=["CREATE", "UPDATE"], resources=AUTHORED,
                                     scope="Cluster")], "None"),
    ("MutatingWebhookConfiguration", "nodegate-objects", "author.nodegate.io"):
        ("/mutate/author", [dict(ND_RULE, operations=["CREATE", "UPDATE"], resources=AUTHORED,
                                 scope="Cluster")], "None"),
}


def log(msg):
    print("\n  " + msg, file=sys.stderr)


def kubectl_offline(*args, input=None):
    """kubectl with no cluster at all: proves the command needs none."""
    env = dict(os.environ, KUBECONFIG=os.devnull)
    r = subprocess.run(["kubectl", *args], input=input, capture_output=True, text=True, env=env, timeout=120)
    if r.returncode != 0:
        raise AssertionError("kubectl %s failed (%d): %s" % (" ".join(args), r.returncode, r.stderr))
    return r.stdout


def json_stream(text):
    out, dec, i = [], json.JSONDecoder(), 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return out
        obj, i = dec.raw_decode(text, i)
        out.append(obj)


_rendered = {}


def render(overlay):
    """(YAML text, [objects]) of `kubectl kustomize manifests/overlays/OVERLAY`. The YAML is read
    back by kubectl itself (`annotate --local`, which touches no server; it adds an empty
    annotations map where there was none, removed again here)."""
    if overlay not in _rendered:
        text = kubectl_offline("kustomize", os.path.join(MANIFESTS, "overlays", overlay))
        objs = json_stream(kubectl_offline("annotate", "--local", "-f", "-", "-o", "json",
                                           "nodegate.io/none-", input=text))
        for o in objs:
            if o["metadata"].get("annotations") == {}:
                del o["metadata"]["annotations"]
        _rendered[overlay] = (text, objs)
    return _rendered[overlay]


def key(o):
    return (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])


def find(objs, kind, name):
    got = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    if len(got) != 1:
        raise AssertionError("%d %s %s rendered" % (len(got), kind, name))
    return got[0]


def selector_matches(sel, labels):
    """A metav1.LabelSelector against a label set."""
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        k, op, vals = e["key"], e["operator"], e.get("values") or []
        if op == "In" and labels.get(k) not in vals:
            return False
        if op == "NotIn" and k in labels and labels[k] in vals:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
    return True


def subset_diff(want, got, path=""):
    """Where @got (the server's object) does not hold @want (the rendered one): a list of
    paths. The server may add (defaults, status, metadata); it may not drop or change."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return [path]
        out = []
        for k, v in want.items():
            if k not in got:
                out.append("%s.%s (missing)" % (path, k))
            else:
                out += subset_diff(v, got[k], "%s.%s" % (path, k))
        return out
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return ["%s (list)" % path]
        out = []
        for i, (w, g) in enumerate(zip(want, got)):
            out += subset_diff(w, g, "%s[%d]" % (path, i))
        return out
    return [] if want == got else ["%s: %r != %r" % (path, want, got)]


# ------------------------------------------------------------------------------ rendering
class RenderTest(unittest.TestCase):
    """The rendered overlays, read as an operator reads them (no server)."""

    def rendered(self):
        return [(overlay, render(overlay)[1]) for overlay in OVERLAYS]

    def test_inventory_names_and_labels(self):
        for overlay, objs in self.rendered():
            with self.subTest(overlay=overlay):
                self.assertEqual(sorted(map(key, objs)), sorted(INVENTORY[overlay]))
                for o in objs:
                    self.assertEqual(o["metadata"]["labels"].get("app.kubernetes.io/name"), "nodegate", key(o))
                    cluster_scoped = o["kind"] in ("Namespace", "CustomResourceDefinition") or \
                        o["kind"].startswith("Cluster") or o["kind"].endswith("WebhookConfiguration")
                    if not cluster_scoped:
                        self.assertEqual(o["metadata"]["namespace"],
                                         OPS if key(o) in OPERATIONS else
                                         M8S if "medik8s" in key(o)[2] else NS, key(o))
                ns = find(objs, "Namespace", NS)
                self.assertEqual(ns["metadata"]["labels"].get("nodegate.io/exclude"), "true")

    def test_operations_run_apart_from_nodegates_secrets(self):
        """The drainer's Jobs run in a namespace of their own: a Job there cannot mount the CA's
        key or nodegate's token. Pod Security lets a reboot (hostPID, privileged) run there."""
        for overlay, objs in self.rendered():
            with self.subTest(overlay=overlay):
                labels = find(objs, "Namespace", OPS)["metadata"]["labels"]
                self.assertEqual(labels.get("pod-security.kubernetes.io/enforce"), "privileged")
                self.assertNotIn("nodegate.io/exclude", labels)  # budgets still cover its pods
                drain = find(objs, "Deployment", "nodegate")["spec"]["template"]["spec"]["containers"][1]
                self.assertEqual(self.args_of(drain).get("--operation-namespace"), OPS)
                self.assertEqual(find(objs, "ServiceAccount", "nodegate-operation")
                                 .get("automountServiceAccountToken"), False)
                self.assertEqual(self.rules_of(objs, "Role", "nodegate-drain-jobs"),
                                 [{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "create"]}])
                in_ops = {key(o) for o in objs if o["metadata"].get("namespace") == OPS}
                self.assertEqual(in_ops, OPERATIONS)
                # nothing nodegate keeps (the CA, the serving certificate) is issued there
                self.assertEqual([key(o) for o in objs if o["kind"] in ("Certificate", "Issuer", "Secret")
                                  and o["metadata"]["namespace"] == OPS], [])

    def test_deployment_pod_security_and_placement(self):
        for overlay, objs in self.rendered():
            with self.subTest(overlay=overlay):
                d = find(objs, "Deployment", "nodegate")
                spec = d["spec"]
                self.assertEqual(spec["replicas"], 2)
                self.assertEqual(spec["selector"], {"matchLabels": NAME_LABEL})
                tmpl = spec["template"]
                self.assertTrue(selector_matches(spec["selector"], tmpl["metadata"]["labels"]))
                self.assertEqual(spec["strategy"]["rollingUpdate"]["maxUnavailable"], 0)
                pod = tmpl["spec"]
                self.assertEqual(pod["serviceAccountName"], "nodegate")
                self.assertEqual(pod["priorityClassName"], "system-cluster-critical")
                psc = pod["securityContext"]
                self.assertEqual((psc["runAsNonRoot"], psc["runAsUser"], psc["runAsGroup"], psc["seccompProfile"]),
                                 (True, UID, UID, {"type": "RuntimeDefault"}))
                spread = {c["topologyKey"]: c for c in pod["topologySpreadConstraints"]}
                self.assertEqual(set(spread), {"kubernetes.io/hostname", "topology.kubernetes.io/zone"})
                for c in spread.values():
                    self.assertEqual(c["maxSkew"], 1)
                    self.assertEqual(c["labelSelector"], {"matchLabels": NAME_LABEL})
                self.assertEqual(spread["kubernetes.io/hostname"]["whenUnsatisfiable"], "DoNotSchedule")
                self.assertEqual(spread["kubernetes.io/hostname"]["nodeTaintsPolicy"], "Honor")
                self.assertEqual(spread["topology.kubernetes.io/zone"]["whenUnsatisfiable"], "ScheduleAnyway")
                self.assertEqual([c["name"] for c in pod["containers"]], ["serve", "drain"])
                for c in pod["containers"]:
                    self.assertEqual(c["image"], "nodegate:0.1.0")
                    sc = c["securityContext"]
                    self.assertEqual((sc["runAsNonRoot"], sc["runAsUser"], sc["runAsGroup"]), (True, UID, UID),
                                     c["name"])
                    self.assertIs(sc["readOnlyRootFilesystem"], True)
                    self.assertIs(sc["allowPrivilegeEscalation"], False)
                    self.assertEqual(sc["capabilities"], {"drop": ["ALL"]})
                    self.assertEqual(sc["seccompProfile"], {"type": "RuntimeDefault"})
                    for kind in ("requests", "limits"):
                        self.assertEqual(set(c["resources"][kind]), {"cpu", "memory"}, (c["name"], kind))
                    self.assertIn("--lease-namespace=nodegate", c["args"])
                    env = {e["name"]: e for e in c["env"]}
                    self.assertEqual(env["NG_IDENTITY"]["valueFrom"], {"fieldRef": {"fieldPath": "metadata.name"}})

    def args_of(self, container):
        out = {}
        for a in container["args"][1:]:
            k, _, v = a.partition("=")
            out[k] = v
        return out

    def test_probes_hit_the_real_endpoints(self):
        for overlay, objs in self.rendered():
            with self.subTest(overlay=overlay):
                pod = find(objs, "Deployment", "nodegate")["spec"]["template"]["spec"]
                serve, drain = pod["containers"]
                self.assertEqual(serve["args"][0], "serve")
                self.assertEqual(drain["args"][0], "drain")
                ports = {p["name"]: p["containerPort"] for c in (serve, drain) for p in c["ports"]}
                # serve: the webhook port (the admin listener stays on loopback, which the kubelet
                # cannot reach), HTTPS; drain: its --listen, plain HTTP.
                sa, da = self.args_of(serve), self.args_of(drain)
                self.assertEqual(sa["--listen"], "0.0.0.0:%d" % ports["webhook"])
                self.assertTrue(sa["--admin-listen"].startswith("127.0.0.1:"))
                self.assertEqual(da["--listen"], "0.0.0.0:%d" % ports["drain-metrics"])
                for c, port, scheme in ((serve, "webhook", "HTTPS"), (drain, "drain-metrics", None)):
                    for probe, path in (("startupProbe", "/healthz"), ("livenessProbe", "/healthz"),
                                        ("readinessProbe", "/readyz")):
                        get = c[probe]["httpGet"]
                        self.assertEqual((get["path"], get["port"], get.get("scheme")), (path, port, scheme),
                                         (c["name"], probe))
                # SIGKILL never comes before the process has had its grace: preStop + grace + margin.
                grace = max(int(self.args_of(c)["--shutdown-grace-seconds"]) for c in (serve, drain))
                pre = serve["lifecycle"]["preStop"]["sleep"]["seconds"]
                self.assertGreater(pod["terminationGracePeriodSeconds"], pre + grace)
                # Prometheus scrapes serve's /metrics where it is served.
                ann = find(objs, "Deployment", "nodegate")["spec"]["template"]["metadata"]["annotations"]
                self.assertEqual((ann["prometheus.io/scrape"], ann["prometheus.io/port"], ann["prometheus.io/path"],
                                  ann["prometheus.io/scheme"]), ("true", str(ports["webhook"]), "/metrics", "https"))

    def test_service_and_pdb(self):
        for overlay, objs in self.rendered():
            with self.subTest(overlay=overlay):
                pod = find(objs, "Deployment", "nodegate")["spec"]["template"]
                svc = find(objs, "Service", "nodegate")["spec"]
                self.assertTrue(selector_matches({"matchLabels": svc["selector"]}, pod["metadata"]["labels"]))
                self.assertEqual([(p["port"], p["targetPort"]) for p in svc["ports"]], [(443, "webhook")])
                pdb = find(objs, "PodDisruptionBudget", "nodegate")["spec"]
                self.assertEqual(pdb["minAvailable"], 1)
                self.assertTrue(selector_matches(pdb["selector"], pod["metadata"]["labels"]))

    def test_webhook_configurations(self):
        for overlay, objs in self.rendered():
            with self.subTest(overlay=overlay):
                ns = find(objs, "Namespace", NS)
                svc = find(objs, "Service", "nodegate")
                seen = set()
                for o in objs:
                    if not o["kind"].endswith("WebhookConfiguration"):
                        continue
                    self.assertEqual(o["metadata"]["labels"]["app.kubernetes.io/name"], "nodegate")
                    for w in o["webhooks"]:
                        k = (o["kind"], o["metadata"]["name"], w["name"])
                        seen.add(k)
                        path, rules, side = WEBHOOKS[k]
                        self.assertEqual(w["rules"], rules, k)
                        self.assertEqual(w["sideEffects"], side, k)
                        self.assertEqual(w["failurePolicy"], "Fail", k)
                        self.assertEqual(w["timeoutSeconds"], 5, k)
                        self.assertEqual(w["admissionReviewVersions"], ["v1"], k)
                        self.assertNotIn("caBundle", w["clientConfig"], k)  # written by serve or cert-manager
                        self.assertEqual(w["clientConfig"]["service"],
                                         {"namespace": svc["metadata"]["namespace"], "name": svc["metadata"]["name"],
                                          "path": path, "port": svc["spec"]["ports"][0]["port"]}, k)
                        if w["name"] == "eviction.nodegate.io":
                            # nodegate's own namespace is never sent; any other namespace is.
                            sel = w["namespaceSelector"]
                            self.assertFalse(selector_matches(sel, ns["metadata"]["labels"]))
                            self.assertTrue(selector_matches(sel, {"kubernetes.io/metadata.name": "default"}))
                            self.assertTrue(selector_matches(sel, {"kubernetes.io/metadata.name": "kube-system"}))
                        else:
                            self.assertNotIn("namespaceSelector", w, k)  # budgets are checked everywhere
                self.assertEqual(seen, set(WEBHOOKS))

    def rules_of(self, objs, kind, name):
        return find(objs, kind, name)["rules"]

    def test_rbac_is_per_container_and_least_privilege(self):
        for overlay, objs in self.rendered():
            with self.subTest(overlay=overlay):
                sa = {"kind": "ServiceAccount", "name": "nodegate", "namespace": NS}
                for o in objs:
                    if o["kind"].endswith("Binding"):
                        self.assertEqual(o["subjects"], [sa], key(o))
                        self.assertIn((o["roleRef"]["kind"],
                                       "" if o["kind"] == "ClusterRoleBinding" else o["metadata"]["namespace"],
                                       o["roleRef"]["name"]), set(map(key, objs)), key(o))
                    if o["kind"] in ("Role", "ClusterRole"):
                        for r in o["rules"]:
                            self.assertNotIn("*", r["verbs"], key(o))
                            self.assertNotIn("*", r["resources"], key(o))
                            if o["kind"] == "ClusterRole":  # no cluster-wide Secrets
                                self.assertNotIn("secrets", r["resources"], key(o))
                serve = self.rules_of(objs, "ClusterRole", "nodegate")
                drain = self.rules_of(objs, "ClusterRole", "nodegate-drain")
                flat = lambda rules: {(g, res, v) for r in rules for g in r["apiGroups"]  # noqa: E731
                                      for res in r["resources"] for v in r["verbs"]}
                # Only the drainer evicts, deletes pods and patches nodes; only serve creates requests.
                self.assertIn(("", "pods/eviction", "create"), flat(drain))
                self.assertNotIn(("", "pods/eviction", "create"), flat(serve))
                self.assertNotIn(("", "nodes", "patch"), flat(serve))
                self.assertIn(("nodegate.io", "nodedisruptions", "create"), flat(serve))
                self.assertNotIn(("nodegate.io", "nodedisruptions", "create"), flat(drain))
                # Remediation is serve's: it reads remediations and templates from its cache, deletes
                # the requests it created, patches its finalizer and status, and never writes a template.
                self.assertIn(("nodegate.io", "nodedisruptions", "delete"), flat(serve))
                self.assertNotIn(("nodegate.io", "nodedisruptions", "delete"), flat(drain))
                self.assertEqual({(res, v) for (g, res, v) in flat(serve) if res.startswith("noderemediations")
                                  or res.startswith("nodedisruptiontemplates")},
                                 {("noderemediations", "list"), ("noderemediations", "watch"),
                                  ("noderemediations", "patch"), ("noderemediations/status", "patch"),
                                  ("nodedisruptiontemplates", "list"), ("nodedisruptiontemplates", "watch")})
                # The drainer's cache lists every kind nodegate caches, and it writes none of these.
                self.assertEqual({(res, v) for (g, res, v) in flat(drain) if res.startswith("noderemediations")
                                  or res.startswith("nodedisruptiontemplates")},
                                 {("noderemediations", "list"), ("noderemediations", "watch"),
                                  ("nodedisruptiontemplates", "list"), ("nodedisruptiontemplates", "watch")})
                for role in (serve, drain):  # PodDisruptionBudgets: read, never written
                    self.assertEqual({(g, v) for (g, res, v) in flat(role) if res == "poddisruptionbudgets"},
                                     {("policy", "list"), ("policy", "watch")})
                # Cluster API Machines: serve lists, watches and patches them (its pre-drain hook), the
                # drainer's cache only lists them; nobody creates, updates or deletes one.
                self.assertEqual({(g, v) for (g, res, v) in flat(serve) if res.startswith("machines")},
                                 {("cluster.x-k8s.io", "list"), ("cluster.x-k8s.io", "watch"),
                                  ("cluster.x-k8s.io", "patch")})
                self.assertEqual({(g, v) for (g, res, v) in flat(drain) if res.startswith("machines")},
                                 {("cluster.x-k8s.io", "list"), ("cluster.x-k8s.io", "watch")})
                leases = self.rules_of(objs, "Role", "nodegate-leader")
                named = [r for r in leases if r.get("resourceNames")]
                self.assertEqual([sorted(r["resourceNames"]) for r in named], [["nodegate-drain", "nodegate-gate"]])
                self.assertEqual(sorted(v for r in named for v in r["verbs"]), ["get", "update"])
                if overlay == "default":
                    ca = self.rules_of(objs, "Role", "nodegate-ca")
                    # serve --self-signed reads the CA by name and creates it once; nothing else.
                    self.assertIn({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"],
                                   "resourceNames": ["nodegate-ca"]}, ca)
                    self.assertIn({"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}, ca)
                    wh = self.rules_of(objs, "ClusterRole", "nodegate-webhook-ca")
                    names = {n for (_, n, _) in WEBHOOKS}
                    # patch by name only: both configurations named nodegate-objects, and the
                    # validating nodegate-eviction (there is no mutating one by that name).
                    patch = {(res, n) for r in wh if "patch" in r["verbs"] for res in r["resources"]
                             for n in r.get("resourceNames", ())}
                    self.assertEqual(patch, {("validatingwebhookconfigurations", "nodegate-eviction"),
                                             ("validatingwebhookconfigurations", "nodegate-objects"),
                                             ("mutatingwebhookconfigurations", "nodegate-objects")})
                    self.assertTrue(all(r.get("resourceNames") for r in wh if "patch" in r["verbs"]))
                    self.assertEqual(names, {"nodegate-eviction", "nodegate-objects"})
                    self.assertEqual([r for r in wh if "patch" not in r["verbs"]][0]["verbs"], ["list"])
                    self.assertIn("--self-signed", find(objs, "Deployment", "nodegate")["spec"]["template"]["spec"]
                                  ["containers"][0]["args"])
                else:
                    self.assertNotIn(("Role", NS, "nodegate-ca"), set(map(key, objs)))

    def test_remediation_crds_reuse_the_request_and_budget_schemas(self):
        """A NodeDisruptionTemplate holds a NodeDisruption spec without the nodes, so its fields
        must validate and default exactly as the request's do; a NodeRemediation's pool is a
        NodeDisruptionBudget's nodeSelector and its conditions are the budgets' conditions. Only the
        descriptions differ (they say what the field does in the template or remediation)."""
        def schema(objs, plural):
            crd = find(objs, "CustomResourceDefinition", plural + ".nodegate.io")
            return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]

        def bare(node):
            return {k: v for k, v in node.items() if k != "description"}

        for overlay, objs in self.rendered():
            with self.subTest(overlay=overlay):
                nd = schema(objs, "nodedisruptions")["properties"]["spec"]["properties"]
                ndt = schema(objs, "nodedisruptiontemplates")["properties"]["spec"]["properties"]
                self.assertEqual(sorted(ndt), ["drain", "operation", "priority", "requestor", "retry", "type"])
                for field in ("type", "requestor", "priority", "drain", "operation"):
                    self.assertEqual(bare(ndt[field]), bare(nd[field]), field)
                self.assertEqual(sorted(ndt["retry"]["properties"]), ["enabled"])  # no deadline
                self.assertEqual(bare(ndt["retry"]["properties"]["enabled"]),
                                 bare(nd["retry"]["properties"]["enabled"]))
                ndb = schema(objs, "nodedisruptionbudgets")["properties"]
                nrem = schema(objs, "noderemediations")["properties"]
                self.assertEqual(bare(nrem["spec"]["properties"]["nodeSelector"]),
                                 bare(ndb["spec"]["properties"]["nodeSelector"]))
                self.assertEqual(bare(nrem["status"]["properties"]["conditions"]),
                                 bare(ndb["status"]["properties"]["conditions"]))

    def test_network_policy(self):
        for overlay, objs in self.rendered():
            with self.subTest(overlay=overlay):
                np = find(objs, "NetworkPolicy", "nodegate")["spec"]
                pod = find(objs, "Deployment", "nodegate")["spec"]["template"]
                self.assertTrue(selector_matches(np["podSelector"], pod["metadata"]["labels"]))
                self.assertEqual(sorted(np["policyTypes"]), ["Egress", "Ingress"])
                by_port = {p["port"]: rule for rule in np["ingress"] for p in rule["ports"]}
                self.assertNotIn("from", by_port["webhook"])  # the API server's address is not known
                scrapers = by_port["drain-metrics"]["from"]
                self.assertIn({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}},
                              scrapers)
                self.assertIn({"namespaceSelector": {"matchLabels": {"nodegate.io/scrape": "true"}}}, scrapers)
                egress_ports = {(p["port"], p.get("protocol", "TCP")) for r in np["egress"] for p in r.get("ports", ())}
                self.assertTrue({(443, "TCP"), (6443, "TCP"), (53, "UDP"), (53, "TCP")} <= egress_ports)
                self.assertIn({"to": [{"namespaceSelector": {}}]}, np["egress"])  # health hooks: pods anywhere

    def test_certificates_of_each_overlay(self):
        _, objs = render("cert-manager")
        pod = find(objs, "Deployment", "nodegate")["spec"]["template"]["spec"]
        serve = pod["containers"][0]
        args = self.args_of(serve)
        self.assertNotIn("--self-signed", args)
        mount = serve["volumeMounts"][0]
        vol = [v for v in pod["volumes"] if v["name"] == mount["name"]][0]
        self.assertTrue(mount["readOnly"])
        self.assertEqual(args["--tls-cert"], mount["mountPath"] + "/tls.crt")
        self.assertEqual(args["--tls-key"], mount["mountPath"] + "/tls.key")
        self.assertNotIn("volumeMounts", pod["containers"][1])  # the drainer needs no certificate
        tls = find(objs, "Certificate", "nodegate-tls")["spec"]
        self.assertEqual(tls["secretName"], vol["secret"]["secretName"])
        self.assertIn("nodegate.nodegate.svc", tls["dnsNames"])
        # The chain: self-signed Issuer -> CA Certificate -> CA Issuer -> serving Certificate.
        ca_issuer = find(objs, "Issuer", tls["issuerRef"]["name"])["spec"]
        ca_cert = [o["spec"] for o in objs if o["kind"] == "Certificate"
                   and o["spec"]["secretName"] == ca_issuer["ca"]["secretName"]][0]
        self.assertTrue(ca_cert["isCA"])
        self.assertEqual(ca_cert["privateKey"]["rotationPolicy"], "Never")
        self.assertIn("selfSigned", find(objs, "Issuer", ca_cert["issuerRef"]["name"])["spec"])
        for o in objs:
            if o["kind"].endswith("WebhookConfiguration"):
                self.assertEqual(o["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
                                 "nodegate/nodegate-tls")
        # default: serve makes its own, nothing is mounted, nothing is injected.
        _, objs = render("default")
        pod = find(objs, "Deployment", "nodegate")["spec"]["template"]["spec"]
        self.assertNotIn("volumes", pod)
        self.assertFalse([a for a in pod["containers"][0]["args"] if a.startswith("--tls-")])
        for o in objs:
            self.assertNotIn("cert-manager.io/inject-ca-from", o["metadata"].get("annotations", {}))


# ------------------------------------------------------------------------------ applying
class Cluster:
    """A fresh test API server with what an overlay needs before it is applied."""

    def __init__(self, overlay):
        self.srv = ServerProcess()
        self.srv.start()
        try:
            if overlay == "cert-manager":
                self.kubectl("apply", "-f", CERT_MANAGER_CRDS)
                self.kubectl("wait", "--for=condition=Established", "--timeout=30s",
                             "crd/certificates.cert-manager.io", "crd/issuers.cert-manager.io")
        except Exception:
            self.srv.stop()
            raise

    def kubectl(self, *args, input=None, check=True):
        rc, out, err = self.srv.kubectl(*args, input=input, timeout=120)
        if check and rc != 0:
            raise AssertionError("kubectl %s failed (%d):\n%s\n%s" % (" ".join(args), rc, out, err))
        return rc, out, err

    def live(self, text):
        """The server's copy of every object of the rendering, in its order."""
        _, out, _ = self.kubectl("get", "-f", "-", "-o", "json", input=text)
        got = json.loads(out)
        return got["items"] if got.get("kind") == "List" else [got]

    def stop(self):
        self.srv.stop()


class ApplyTest(unittest.TestCase):
    """kubectl apply (client-side, the default) of each overlay."""

    def check_live(self, objs, live):
        self.assertEqual(list(map(key, live)), list(map(key, objs)))
        for want, got in zip(objs, live):
            self.assertEqual(subset_diff(want, got), [], key(want))

    def test_apply_creates_every_object_as_rendered_and_again_changes_nothing(self):
        for overlay in OVERLAYS:
            with self.subTest(overlay=overlay):
                text, objs = render(overlay)
                c = Cluster(overlay)
                try:
                    _, out, _ = c.kubectl("apply", "-f", "-", input=text)
                    lines = out.strip().splitlines()
                    self.assertEqual(len(lines), len(objs), out)
                    self.assertTrue(all(line.endswith(" created") for line in lines), out)
                    live = c.live(text)
                    self.check_live(objs, live)
                    _, out, _ = c.kubectl("apply", "-f", "-", input=text)
                    for line, o in zip(out.strip().splitlines(), objs):
                        want = ("unchanged", "configured") if o["kind"] in ALWAYS_PATCHED else ("unchanged",)
                        self.assertIn(line.rsplit(" ", 1)[1], want, line)
                    again = c.live(text)
                    self.assertEqual(content(again), content(live))
                    log("%s: %d objects applied, the second apply changed none" % (overlay, len(objs)))
                finally:
                    c.stop()


SSA_UNSUPPORTED = (404, 415)


def content(live):
    """What an apply may change: everything but status (controllers write it) and the
    resourceVersion that status writes move."""
    out = []
    for o in live:
        o = json.loads(json.dumps(o))
        o.pop("status", None)
        o["metadata"].pop("resourceVersion", None)
        out.append(o)
    return out


def patch_statuses(stderr):
    """(url, HTTP status) of every PATCH in kubectl -v=6 output (both log formats)."""
    out = re.findall(r'\bPATCH (https?://\S+) (\d{3})\b', stderr)
    out += re.findall(r'verb="PATCH" url="([^"]+)" status="(\d{3})', stderr)
    return [(u, int(s)) for u, s in out]


class ServerSideApplyTest(unittest.TestCase):
    """kubectl apply --server-side of each overlay, into an empty cluster, as GitOps tools do."""

    def server_side(self, overlay):
        text, objs = render(overlay)
        c = Cluster(overlay)
        try:
            rc, out, err = c.kubectl("apply", "--server-side", "-v=6", "-f", "-", input=text, check=False)
            statuses = patch_statuses(err)
            refused = [(u, s) for u, s in statuses if s in SSA_UNSUPPORTED]
            if rc != 0 and refused:
                said = [json.loads('"%s"' % m) for m in re.findall(r'"message": "((?:[^"\\]|\\.)*)"', err)]
                said += [line for line in err.splitlines() if line.startswith(("Error from server", "error:"))]
                reason = ("the test API server cannot create objects by server-side apply: "
                          "%d of %d PATCH requests answered %s, the first with: %s"
                          % (len(refused), len(statuses), "/".join(sorted({str(s) for _, s in refused})),
                             said[0] if said else "(no message)"))
                log("SKIPPED %s: %s" % (overlay, reason))
                self.skipTest(reason)
            self.assertEqual(rc, 0, err[-4000:])
            lines = out.strip().splitlines()
            self.assertEqual(len(lines), len(objs), out)
            self.assertTrue(all(line.endswith(" serverside-applied") for line in lines), out)
            live = c.live(text)
            self.assertEqual(list(map(key, live)), list(map(key, objs)))
            for want, got in zip(objs, live):
                self.assertEqual(subset_diff(want, got), [], key(want))
            c.kubectl("apply", "--server-side", "-f", "-", input=text)
            self.assertEqual(content(c.live(text)), content(live))
        finally:
            c.stop()

    def test_server_side_apply_default(self):
        self.server_side("default")

    def test_server_side_apply_cert_manager(self):
        self.server_side("cert-manager")


# ------------------------------------------------------------------------------ operating
class OutageAndUninstallTest(unittest.TestCase):
    """The configurations applied, no nodegate answering: what docs/install.md says happens,
    and its recovery and uninstall commands, through the API server's own webhook calls."""

    def setUp(self):
        self.text, self.objs = render("default")
        self.c = Cluster("default")
        self.c.kubectl("apply", "-f", "-", input=self.text)
        self.api = self.c.srv.api

    def tearDown(self):
        self.c.stop()

    def pod(self, ns, name):
        code, body, _ = self.api("POST", "/api/v1/namespaces/%s/pods" % ns, {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": "node1", "containers": [{"name": "c", "image": "busybox"}]}})
        self.assertEqual(code, 201, body)

    def evict(self, ns, name):
        code, body, _ = self.api("POST", "/api/v1/namespaces/%s/pods/%s/eviction" % (ns, name), {
            "apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": ns}})
        return code, body

    def test_webhook_down_refuses_evictions_and_requests_until_recovered(self):
        self.pod("default", "app-1")
        self.pod("default", "app-2")
        self.pod(NS, "nodegate-x")
        code, body = self.evict("default", "app-1")
        self.assertEqual(code, 500, body)
        self.assertIn('failed calling webhook "eviction.nodegate.io"', body["message"])
        code, body = self.evict(NS, "nodegate-x")  # nodegate's own namespace is never sent
        self.assertEqual(code, 201, body)
        rc, out, err = self.c.kubectl("create", "-f", "-", check=False, input=json.dumps({
            "apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption", "metadata": {"name": "m1"},
            "spec": {"nodeNames": ["node1"]}}))
        self.assertNotEqual(rc, 0)
        self.assertIn("created-by.nodegate.io", err)
        # Recovery, as docs/install.md gives it: Ignore first, then deleting the configuration.
        self.c.kubectl("patch", "validatingwebhookconfiguration", "nodegate-eviction", "--type=json",
                       "-p", '[{"op": "replace", "path": "/webhooks/0/failurePolicy", "value": "Ignore"}]')
        code, body = self.evict("default", "app-1")
        self.assertEqual(code, 201, body)
        self.c.kubectl("delete", "validatingwebhookconfiguration", "nodegate-eviction")
        code, body = self.evict("default", "app-2")
        self.assertEqual(code, 201, body)
        # Re-applying the overlay puts it back as it was.
        self.c.kubectl("apply", "-f", "-", input=self.text)
        self.pod("default", "app-3")
        code, body = self.evict("default", "app-3")
        self.assertEqual(code, 500, body)

    def test_uninstall_leaves_nothing_behind(self):
        # A request nodegate still held when it went away: both finalizers set.
        self.c.kubectl("delete", "validatingwebhookconfiguration", "nodegate-objects")
        self.c.kubectl("delete", "mutatingwebhookconfiguration", "nodegate-objects")
        self.c.kubectl("create", "-f", "-", input=json.dumps({
            "apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption",
            "metadata": {"name": "held", "finalizers": ["nodegate.io/gate", "nodegate.io/drain"]},
            "spec": {"nodeNames": ["node1"]}}))
        self.c.kubectl("apply", "-f", "-", input=self.text)
        # docs/install.md, "Uninstall", step by step.
        self.c.kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration",
                       "-l", "app.kubernetes.io/name=nodegate")
        # No nodegate runs here to release the request: the delete waits out its timeout.
        rc, _, err = self.c.kubectl("delete", "nodedisruptions", "--all", "--timeout=2s", check=False)
        self.assertNotEqual(rc, 0)
        self.assertIn("timed out", err)
        self.c.kubectl("-n", NS, "delete", "deployment", "nodegate")
        _, out, _ = self.c.kubectl("get", "nodedisruptions", "-o", "name")
        self.assertEqual(out.split(), ["nodedisruption.nodegate.io/held"])  # kept by its finalizers
        _, cols, _ = self.c.kubectl("get", "nodedisruptions", "-o",
                                    "custom-columns=NAME:.metadata.name,FINALIZERS:.metadata.finalizers")
        self.assertIn("nodegate.io/gate", cols)
        for name in out.split():
            self.c.kubectl("patch", name, "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
        _, out, _ = self.c.kubectl("get", "nodedisruptions", "-o", "name")
        self.assertEqual(out.split(), [])
        self.c.kubectl("delete", "-k", os.path.join(MANIFESTS, "overlays", "default"), "--ignore-not-found",
                       "--timeout=60s")
        rc, out, err = self.c.kubectl("get", "-f", "-", "-o", "name", "--ignore-not-found", input=self.text,
                                      check=False)
        self.assertEqual(out.split(), [], err)


if __name__ == "__main__":
    unittest.main()
