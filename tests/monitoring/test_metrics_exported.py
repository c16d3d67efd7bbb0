#!/usr/bin/env python3
"""monitoring: every metric the Grafana dashboard (manifests/monitoring/dashboard.json) and the
alerting rules (manifests/monitoring/alerts.yaml, and the series their unit tests feed them,
tests/monitoring/alerts_test.yaml) name is one that nodegate exports.

It starts the test API server with the drainer's fixture, a NodeDisruptionBudget, `nodegate
serve` and `nodegate drain` as the drain e2e tests do (tests/e2e/test_drain.py's DrainTest),
drains node1 once, and scrapes serve's /metrics on both its listeners (the per-budget series are
on the admin listener only) and drain's. A name counts as exported when one of them
declares its family (`# TYPE`), or, for a name ending in _bucket, _sum or _count, when that
family is a histogram. Families that have samples are also checked for the label names the
expressions select on (`name{label=...}`).

Metric names are taken out of PromQL roughly: every identifier starting with `nodegate_`
outside label values.

Environment: NODEGATE (the binary), NG_SOURCE_ROOT (the repository)."""
import json
import os
import re
import sys
import unittest

ROOT = os.environ.get("NG_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import test_drain  # noqa: E402  (puts tests/apiserver on sys.path too)
from ktestapi.yamlish import load_all  # noqa: E402

DASHBOARD = os.path.join(ROOT, "manifests", "monitoring", "dashboard.json")
ALERTS = os.path.join(ROOT, "manifests", "monitoring", "alerts.yaml")
ALERTS_TEST = os.path.join(ROOT, "tests", "monitoring", "alerts_test.yaml")
NDB_PATH = "/apis/nodegate.io/v1alpha1/nodedisruptionbudgets"
HIST_SUFFIXES = ("_bucket", "_sum", "_count")
# Labels Prometheus adds or a histogram carries, not nodegate's own.
OWN_LABELS_IGNORED = {"job", "instance", "le", "__name__"}

NAME = re.compile(r"\bnodegate_[A-Za-z0-9_]*")
STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
SELECTOR = re.compile(r"\b(nodegate_[A-Za-z0-9_]*)\s*\{([^}]*)\}")
MATCHER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)")


def dashboard_exprs():
    """(where, expr) of every query of every panel, rows' nested panels included."""
    with open(DASHBOARD, encoding="utf-8") as f:
        dash = json.load(f)
    out = []

    def walk(panels):
        for p in panels:
            for t in p.get("targets", []):
                if t.get("expr"):
                    out.append((f"dashboard panel {p.get('title')!r}", t["expr"]))
            walk(p.get("panels", []))
    walk(dash.get("panels", []))
    return out


def rule_exprs():
    with open(ALERTS, encoding="utf-8") as f:
        doc = load_all(f.read())[0]
    return [(f"rule {r.get('alert') or r.get('record')}", r["expr"])
            for g in doc["groups"] for r in g["rules"]]


def test_series():
    with open(ALERTS_TEST, encoding="utf-8") as f:
        doc = load_all(f.read())[0]
    return [(f"alerts_test {t['name']!r}", s["series"])
            for t in doc["tests"] for s in t.get("input_series", [])]


def names_in(expr):
    return set(NAME.findall(STRING.sub('""', expr)))


def selectors_in(expr):
    """{metric name: label names matched in its selectors}."""
    out = {}
    for name, body in SELECTOR.findall(expr):
        out.setdefault(name, set()).update(MATCHER.findall(STRING.sub('""', body)))
    return out


def parse_exposition(text):
    """({family: type}, {sample name: set of label names})."""
    types, labels = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, fam, typ = line.split(None, 3)
            types[fam] = typ.strip()
        elif line and not line.startswith("#"):
            m = re.match(r"([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})?\s", line)
            if m:
                labels.setdefault(m.group(1), set()).update(
                    re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="', m.group(3) or ""))
    return types, labels


def family_of(name, types):
    """The family @name belongs to, or None when no process exports it."""
    if name in types and types[name] != "histogram":
        return name
    for suf in HIST_SUFFIXES:
        base = name[: -len(suf)]
        if name.endswith(suf) and types.get(base) in ("histogram", "summary"):
            return base
    return None


class MonitoringMetricsTest(test_drain.DrainTest):
    def scrape(self):
        """serve's webhook port, serve's admin listener and the drainer's exposition."""
        code, body = self.ng.get("/metrics")
        self.assertEqual(code, 200)
        serve = body.decode()
        code, body = self.ng.admin("GET", "/metrics")
        self.assertEqual(code, 200)
        admin = body.decode()
        code, body = self.drainer.get("/metrics")
        self.assertEqual(code, 200)
        return serve, admin, body.decode()

    def test_every_name_in_the_dashboard_and_rules_is_exported(self):
        # A budget (its gauges are per budget) and one drain, so most families have samples.
        self.create(NDB_PATH, {"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruptionBudget",
                               "metadata": {"name": "pool"},
                               "spec": {"nodeSelector": {"matchLabels": {}}, "maxDisruptedNodes": 3}})
        self.nd("m1", drain=test_drain.FORCE)
        self.wait_drained("m1")
        # The budget's gauges follow its status pass (at most every 500 ms).
        test_drain.eventually(lambda: 'name="pool"' in self.ng.admin("GET", "/metrics")[1].decode())
        serve, admin, drain = self.scrape()
        # Series that name cluster objects are on the admin listener only: the webhook port
        # (anyone on the pod network) carries counts (docs/operations.md "Scraping").
        budget = 'nodegate_budget_disruptions_allowed{kind="NodeDisruptionBudget",namespace="",name="pool"}'
        self.assertIn(budget, admin)
        self.assertNotIn("nodegate_budget_", serve)
        self.assertNotIn('name="pool"', serve)
        types, labels = {}, {}
        for text in (serve, admin, drain):
            t, lab = parse_exposition(text)
            types.update(t)
            for k, v in lab.items():
                labels.setdefault(k, set()).update(v)
        # The two processes tell their leases apart only by what else they export.
        self.assertIn("nodegate_gate_decisions_total", parse_exposition(serve)[0])
        self.assertNotIn("nodegate_gate_decisions_total", parse_exposition(drain)[0])
        self.assertIn("nodegate_drain_attempts_total", parse_exposition(drain)[0])
        self.assertNotIn("nodegate_drain_attempts_total", parse_exposition(serve)[0])

        sources = dashboard_exprs() + rule_exprs() + test_series()
        self.assertGreater(len(dashboard_exprs()), 10)
        self.assertGreater(len(rule_exprs()), 5)
        missing, bad_labels, used = [], [], set()
        for where, expr in sources:
            for name in sorted(names_in(expr)):
                used.add(name)
                if family_of(name, types) is None:
                    missing.append(f"{where}: {name}")
            for name, keys in selectors_in(expr).items():
                have = labels.get(name)
                if not have:
                    continue  # no sample to compare with (e.g. no health hook was called)
                for k in sorted(keys - OWN_LABELS_IGNORED - have):
                    bad_labels.append(f"{where}: {name} has no label {k!r} (has {sorted(have)})")
        test_drain.log(f"{len(sources)} expressions, {len(used)} metric names, all exported"
                       if not missing else "")
        self.assertEqual(missing, [], "named but not exported by serve or drain")
        # Every series a panel or rule names on the webhook port's scrape stays there.
        on_admin_only = set(parse_exposition(admin)[0]) - set(parse_exposition(serve)[0])
        self.assertTrue(on_admin_only, "the admin listener carries the per-object series")
        self.assertEqual(bad_labels, [], "selects on a label the series do not carry")


class ParseTest(unittest.TestCase):
    """The rough PromQL scan itself."""

    def test_names_skip_label_values_and_keep_suffixes(self):
        e = ('histogram_quantile(0.99, sum by (le) (rate(nodegate_x_seconds_bucket{job="nodegate_y"}[5m])))'
             ' / nodegate_z')
        self.assertEqual(names_in(e), {"nodegate_x_seconds_bucket", "nodegate_z"})
        self.assertEqual(selectors_in('nodegate_a{decision="error", code=~"5.."} + nodegate_b'),
                         {"nodegate_a": {"decision", "code"}})

    def test_histogram_suffixes_resolve_only_for_histograms(self):
        types = {"nodegate_h": "histogram", "nodegate_c_count": "counter", "nodegate_g": "gauge"}
        self.assertEqual(family_of("nodegate_h_bucket", types), "nodegate_h")
        self.assertEqual(family_of("nodegate_c_count", types), "nodegate_c_count")
        self.assertIsNone(family_of("nodegate_h", types))
        self.assertIsNone(family_of("nodegate_g_sum", types))
        self.assertIsNone(family_of("nodegate_nope", types))


if __name__ == "__main__":
    unittest.main()
