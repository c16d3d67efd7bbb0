#!/usr/bin/env python3
"""e2e: every YAML example under examples/ (examples/migrate/** included) is accepted as users
would create it, `kubectl create -f FILE`, by the test API server with nodegate's object
webhooks registered exactly as test_validation.py registers them; every object reads back with
every field the file set (nothing pruned, renamed or rewritten); nodegate reads what was created
(budgets get a Valid condition, requests a decision); and `kubectl delete -f FILE` removes it
all again, finalizers included.

Nodes that the examples name in spec.nodeNames are added to the cluster first, so that any
warning kubectl prints is a failure. Each file is created and deleted on its own, since several
hold the singleton NodeGateConfig "default".

Environment: NODEGATE (the binary), NG_SOURCE_ROOT (the repository)."""
import glob
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_live_cache import ROOT, eventually  # noqa: E402
from test_validation import ValidationTest  # noqa: E402

EXAMPLES = os.path.join(ROOT, "examples")
# The worked examples docs/gate.md and README.md point at, and one directory per migration guide.
REQUIRED = ["nodedisruptionbudget.yaml", "applicationdisruptionbudget.yaml", "nodegateconfig.yaml",
            "nodedisruption.yaml", "nodedisruption-drain.yaml"]
MIGRATIONS = ["criteo-node-disruption-controller", "nvidia-maintenance-operator", "cke-reboot-queue",
              "pfn-node-operation-controller"]


def example_files():
    return sorted(glob.glob(os.path.join(EXAMPLES, "**", "*.yaml"), recursive=True))


def items_of(text):
    """The objects of `kubectl ... -o json` output: one object, a List of them, or (from
    create --dry-run) several objects one after the other."""
    out, dec, at = [], json.JSONDecoder(), 0
    while text[at:].strip():
        doc, end = dec.raw_decode(text, at + len(text[at:]) - len(text[at:].lstrip()))
        out += doc.get("items", []) if doc.get("kind", "").endswith("List") else [doc]
        at = end
    return out


def key_of(obj):
    m = obj["metadata"]
    return obj["kind"], m.get("namespace", ""), m["name"]


def missing(want, have, path=""):
    """Where @have (read back) differs from @want (what the file set): every key of a map in
    @want must be in @have with a matching value, lists item by item; @have may hold more keys
    (defaults, status, annotations nodegate adds). Returns a list of "path: ..." strings."""
    if isinstance(want, dict):
        if not isinstance(have, dict):
            return [f"{path or '.'}: set to a map, read back {have!r}"]
        out = []
        for k, v in want.items():
            if k not in have:
                out.append(f"{path}.{k}: set by the file, absent when read back")
            else:
                out += missing(v, have[k], f"{path}.{k}")
        return out
    if isinstance(want, list):
        if not isinstance(have, list) or len(have) != len(want):
            return [f"{path}: set to {want!r}, read back {have!r}"]
        out = []
        for i, (w, h) in enumerate(zip(want, have)):
            out += missing(w, h, f"{path}[{i}]")
        return out
    return [] if want == have else [f"{path}: set to {want!r}, read back {have!r}"]


def selected_labels(sel):
    """Labels a LabelSelector @sel selects: its matchLabels, and for each In or Exists expression
    a value it takes (NotIn and DoesNotExist hold without the label)."""
    labels = dict((sel or {}).get("matchLabels") or {})
    for e in (sel or {}).get("matchExpressions") or []:
        if e.get("operator") == "In":
            labels[e["key"]] = e["values"][0]
        elif e.get("operator") == "Exists":
            labels[e["key"]] = "yes"
    return labels


class ExamplesTest(ValidationTest):
    """Fixture F without the "db" budget, nodegate registered for every webhook (ValidationTest)."""

    def kubectl(self, *args):
        return self.api.kubectl(*args, timeout=60)

    def parse(self, path):
        """The file's objects as kubectl reads them (client-side: nothing is sent)."""
        rc, out, err = self.kubectl("create", "--dry-run=client", "-o", "json", "-f", path)
        self.assertEqual(rc, 0, f"kubectl cannot read {path}: {err}")
        objs = items_of(out)
        self.assertTrue(objs, f"{path} holds no object")
        return objs

    def prepare(self, objs):
        """The namespaces and nodes the objects need, as a cluster they are written for has: the
        nodes requests name, and a node or pod for each budget's selector to select (a budget
        that selects nothing is admitted with a warning)."""
        wanted = []
        for o in objs:
            name, ns = o["metadata"]["name"], o["metadata"].get("namespace")
            spec = o.get("spec", {})
            if o["kind"] == "NodeDisruptionBudget":
                node = f"ex-{name}"
                if self.api.api("GET", f"/api/v1/nodes/{node}")[0] == 404:
                    self.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
                        "name": node, "labels": selected_labels(spec.get("nodeSelector"))},
                        "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
                wanted.append(("nodes", node))
            if o["kind"] == "ApplicationDisruptionBudget" and spec.get("podSelector") is not None:
                self.prepare_namespace(ns)
                pod = f"ex-{name}"
                if self.api.api("GET", f"/api/v1/namespaces/{ns}/pods/{pod}")[0] == 404:
                    self.create(f"/api/v1/namespaces/{ns}/pods", {
                        "apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": pod, "labels": selected_labels(spec["podSelector"])},
                        "spec": {"nodeName": "node1", "containers": [{"name": "c", "image": "busybox"}]}})
                wanted.append(("pods", pod))
        ok, _ = eventually(lambda: all(n in [x.get("name") for x in (self.ng.cache() or {}).get(kind, [])]
                                       for kind, n in wanted), interval=0.2)
        self.assertTrue(ok, f"nodegate never saw {wanted}")
        for o in objs:
            self.prepare_namespace(o["metadata"].get("namespace"))
            for node in o.get("spec", {}).get("nodeNames", []) if o["kind"] == "NodeDisruption" else []:
                if self.api.api("GET", f"/api/v1/nodes/{node}")[0] == 404:
                    self.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})

    def prepare_namespace(self, ns):
        if ns and self.api.api("GET", f"/api/v1/namespaces/{ns}")[0] == 404:
            self.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

    def read_back(self, path):
        rc, out, err = self.kubectl("get", "-f", path, "-o", "json")
        self.assertEqual(rc, 0, f"kubectl get -f {path}: {err}")
        return {key_of(o): o for o in items_of(out)}

    def nodegate_read(self, path, keys):
        """Whether nodegate has read every object: budgets carry its Valid condition (True),
        requests its decision. The NodeGateConfig has no status; its webhook answer sufficed."""
        objs = self.read_back(path)
        for k in keys:
            kind, st = k[0], objs[k].get("status") or {}
            if kind == "NodeDisruption" and not st.get("state"):
                return None
            if kind in ("NodeDisruptionBudget", "ApplicationDisruptionBudget"):
                valid = [c for c in st.get("conditions", []) if c.get("type") == "Valid"]
                if not valid:
                    return None
                self.assertEqual(valid[0]["status"], "True", f"nodegate cannot read {k}: {valid[0]}")
        return objs

    def check_file(self, path):
        rel = os.path.relpath(path, ROOT)
        t0 = time.monotonic()
        objs = self.parse(path)
        self.prepare(objs)
        rc, out, err = self.kubectl("create", "-f", path)
        self.assertEqual(rc, 0, f"kubectl create -f {rel} was refused:\n{err}")
        self.assertEqual(err.strip(), "", f"kubectl create -f {rel} printed warnings:\n{err}")
        self.assertEqual(len(out.strip().splitlines()), len(objs), out)
        keys = [key_of(o) for o in objs]
        back = self.read_back(path)
        for o, k in zip(objs, keys):
            self.assertIn(k, back)
            diff = missing({f: o[f] for f in ("metadata", "spec") if f in o}, back[k])
            self.assertEqual(diff, [], f"{rel}: {k[0]} {k[2]} does not read back as written")
            if k[0] == "NodeDisruption":  # the mutating webhook saw it
                self.assertEqual(back[k]["metadata"]["annotations"].get("nodegate.io/created-by"), "admin")
        seen, _ = eventually(lambda: self.nodegate_read(path, keys), interval=0.2)  # kubectl per poll
        self.assertIsNotNone(seen, f"{rel}: nodegate never read {keys}: {self.read_back(path)}")
        states = [f"{k[2]}={seen[k]['status']['state']}" for k in keys if k[0] == "NodeDisruption"]
        rc, out, err = self.kubectl("delete", "-f", path, "--wait=false")
        self.assertEqual(rc, 0, f"kubectl delete -f {rel}: {err}")
        # A deleted request stays while spec.additionalRequestors names someone: each of them
        # removes itself when done, and then the request goes.
        for o in objs:
            if o["kind"] == "NodeDisruption" and o["spec"].get("additionalRequestors"):
                rc, out, err = self.kubectl("patch", "nodedisruptions.nodegate.io", o["metadata"]["name"],
                                            "--type=merge", "-p", '{"spec":{"additionalRequestors":[]}}')
                self.assertEqual(rc, 0, err)
        gone, _ = eventually(lambda: self.kubectl("get", "-f", path, "--ignore-not-found", "-o", "name")
                             == (0, "", ""), interval=0.2)
        self.assertTrue(gone, f"{rel}: left behind after delete: "
                        f"{self.kubectl('get', '-f', path, '--ignore-not-found', '-o', 'yaml')}")
        print(f"\n  {rel}: {len(objs)} object(s) created, read back, deleted in "
              f"{time.monotonic() - t0:.2f} s {' '.join(states)}", file=sys.stderr, end="")

    def test_every_example_is_accepted_and_reads_back(self):
        files = example_files()
        rels = [os.path.relpath(f, EXAMPLES) for f in files]
        for path in files:
            with self.subTest(example=os.path.relpath(path, ROOT)):
                self.check_file(path)
        print(file=sys.stderr)
        for name in REQUIRED:
            self.assertIn(name, rels)
        for system in MIGRATIONS:
            self.assertTrue(any(r.startswith(f"migrate/{system}/") for r in rels),
                            f"no converted objects for {system}")

    def test_a_broken_example_is_refused_through_kubectl(self):
        # The same path refuses what nodegate cannot read: a budget of 150% of its nodes.
        body = json.dumps({"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget",
                           "metadata": {"name": "broken"},
                           "spec": {"nodeSelector": {"matchLabels": {"pool": "gpu"}},
                                    "maxDisruptedNodes": "150%"}})
        rc, out, err = self.api.kubectl("create", "-f", "-", input=body)
        self.assertNotEqual(rc, 0, out)
        self.assertIn("spec.maxDisruptedNodes", err)
        self.assertIn("budget.nodegate.io", err)


def load_tests(loader, tests, pattern):
    """Only ExamplesTest's own tests (ValidationTest's run in e2e-validation)."""
    return unittest.TestSuite(ExamplesTest(n) for n in loader.getTestCaseNames(ExamplesTest)
                              if n in vars(ExamplesTest))


if __name__ == "__main__":
    unittest.main()
