#!/usr/bin/env python3
"""e2e: the CLI reaches a cluster wherever kubectl does (docs/kubernetes-client.md): kubeconfigs
whose user is an exec credential plugin, as managed clusters (EKS, GKE, AKS) write them, and
$KUBECONFIG lists merged as kubectl merges them. `nodegate plan` and `nodegate check` run against
the test API server through small plugins the tests write; kubectl runs through the same
kubeconfig, which proves each plugin is what kubectl expects. The misbehaving plugins whose
bounds take time (hanging O28, flooding O29) and an expiring credential (O27) are in
tests/unit/test-kube-exec-cred.c, with a real plugin each.

One API server for the whole file (started once); no nodegate server runs.

Environment: NODEGATE (the binary), NG_SOURCE_ROOT (the repository)."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_live_cache import BINARY, CRDS, FIXTURE, WRAPPER, eventually  # noqa: E402
from ktestapi.testing import ServerProcess  # noqa: E402

V1 = "client.authentication.k8s.io/v1"
TIMEOUT_S = 120 if WRAPPER else 30


class ExecPluginTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.api = ServerProcess(fixtures=CRDS + [FIXTURE])
        cls.api.start()
        try:
            with open(cls.api.kubeconfig, encoding="utf-8") as f:
                cls.admin = json.load(f)
            with open(os.path.join(cls.api.state, "kubeconfig-carol-cert"), encoding="utf-8") as f:
                cls.carol = json.load(f)["users"][0]["user"]
            # carol (client certificate) may read what check lists, as an operator would.
            code, body, _ = cls.api.api("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "carol-admin"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": "cluster-admin"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "carol"}]})
            assert code == 201, body
        except BaseException:
            cls.api.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.api.stop()

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ng-exec-")
        self.nd = os.path.join(self.tmp, "nd.json")
        with open(self.nd, "w", encoding="utf-8") as f:
            json.dump({"apiVersion": "nodegate.io/v1alpha1", "kind": "NodeDisruption",
                       "metadata": {"name": "check-me"}, "spec": {"nodeNames": ["node1"]}}, f)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def plugin(self, name, body):
        """An executable plugin bin/NAME (a shell script) that appends a line to bin/NAME.runs
        each time it starts, then runs @body."""
        d = os.path.join(self.tmp, "bin")
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"#!/bin/sh\necho run >> '{path}.runs'\n{body}\n")
        os.chmod(path, 0o700)
        return path

    def runs(self, path):
        try:
            with open(path + ".runs", encoding="utf-8") as f:
                return len(f.readlines())
        except FileNotFoundError:
            return 0

    @staticmethod
    def answer(status):
        # printf, not echo: dash's echo would turn the JSON's \n escapes into newlines.
        return "printf '%s\\n' '" + json.dumps({"kind": "ExecCredential", "apiVersion": V1, "status": status}) + "'"

    def kubeconfig(self, name, exec_, context="exec"):
        """A kubeconfig NAME (YAML is JSON) for the test API server whose user runs @exec_."""
        cluster = self.admin["clusters"][0]["cluster"]
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"apiVersion": "v1", "kind": "Config", "current-context": context,
                       "clusters": [{"name": "test", "cluster": cluster}],
                       "users": [{"name": "plugin-user", "user": {"exec": dict(
                           {"apiVersion": V1, "interactiveMode": "Never"}, **exec_)}}],
                       "contexts": [{"name": context, "context": {"cluster": "test", "user": "plugin-user"}}]},
                      f)
        return path

    def nodegate(self, *args, env=None):
        e = dict(os.environ)
        e.pop("KUBECONFIG", None)
        e.update(env or {})
        return subprocess.run(WRAPPER + [BINARY, *args], capture_output=True, text=True,
                              timeout=TIMEOUT_S, env=e)

    def kubectl(self, kubeconfig, *args):
        return subprocess.run(["kubectl", "--kubeconfig", kubeconfig, *args], capture_output=True,
                              text=True, timeout=TIMEOUT_S)

    def test_O21_plan_check_and_kubectl_run_through_a_token_plugin(self):
        """An operator whose kubeconfig authenticates like EKS's (`aws eks get-token`) runs
        `nodegate plan` and `nodegate check` against the cluster and gets answers, not a refusal.
        The plugin, given args and env, runs once per command; kubectl accepts the same file."""
        token = self.api.tokens["admin"]
        plug = self.plugin("get-token", '[ "$1 $REGION" = "get-token eu-west-3" ] || exit 9\n'
                           + self.answer({"token": token}))
        kc = self.kubeconfig("kc", {"command": "./bin/get-token", "args": ["get-token"],
                                    "env": [{"name": "REGION", "value": "eu-west-3"}],
                                    "interactiveMode": "IfAvailable"})
        p = self.nodegate("plan", "--kubeconfig", kc, "--nodes", "testselect=test1", "--output", "json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(n for w in json.loads(p.stdout)["waves"] for n in w["nodes"]),
                         ["node1", "node2"], p.stdout)
        self.assertEqual(self.runs(plug), 1)
        p = self.nodegate("check", "--kubeconfig", kc, "--nd", self.nd)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('"state":"Granted"', p.stdout)
        self.assertEqual(self.runs(plug), 2)
        k = self.kubectl(kc, "get", "nodes", "-o", "name")
        self.assertEqual(k.returncode, 0, k.stderr)
        self.assertIn("node/node1", k.stdout)

    def test_O21_drain_runs_through_a_token_plugin(self):
        """The drainer (as serve, a long-running controller) started from an operator's
        kubeconfig with a plugin: it lists, watches and becomes ready without a prompt, sharing
        one credential across its threads, and stops cleanly."""
        token = self.api.tokens["admin"]
        plug = self.plugin("get-token", self.answer({"token": token}))
        kc = self.kubeconfig("kc", {"command": plug})
        port_file = os.path.join(self.tmp, "port")
        env = dict(os.environ)
        env.pop("KUBECONFIG", None)
        with open(os.path.join(self.tmp, "drain.log"), "wb") as log:
            proc = subprocess.Popen(WRAPPER + [BINARY, "drain", "--context", "exec", "--kubeconfig", kc,
                                               "--listen", "127.0.0.1:0", "--port-file", port_file,
                                               "--lease-namespace", "nodegate",
                                               "--shutdown-grace-seconds", "1"],
                                    stdout=log, stderr=subprocess.STDOUT, env=env)
            try:
                ready, _ = eventually(lambda: self.ready(port_file), TIMEOUT_S)
                self.assertTrue(ready, self.read(os.path.join(self.tmp, "drain.log")))
            finally:
                proc.send_signal(signal.SIGTERM)
                rc = proc.wait(TIMEOUT_S)
        self.assertEqual(rc, 0, self.read(os.path.join(self.tmp, "drain.log")))
        self.assertEqual(self.runs(plug), 1)

    @staticmethod
    def read(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()[-4000:]

    @staticmethod
    def ready(port_file):
        try:
            with open(port_file, encoding="utf-8") as f:
                port = int(f.read())
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                return r.status == 200
        except (OSError, ValueError):
            return False

    def test_O22_a_rejected_token_runs_the_plugin_again(self):
        """A plugin whose cached token the API server no longer accepts (a 401) is run again
        and the listing goes on with the new token: `nodegate check` still answers."""
        token = self.api.tokens["admin"]
        plug = self.plugin("rotating", f'if [ "$(wc -l < "$0.runs")" -le 1 ]; then {self.answer({"token": "revoked"})}; '
                           f'else {self.answer({"token": token})}; fi')
        kc = self.kubeconfig("kc", {"command": plug})
        p = self.nodegate("check", "--kubeconfig", kc, "--nd", self.nd)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('"state":"Granted"', p.stdout)
        self.assertGreaterEqual(self.runs(plug), 2)

    def test_O23_client_certificate_answer_reaches_the_api_server(self):
        """A plugin that answers a client certificate and key (as some SSO tools do): the API
        server sees the certificate's user, for nodegate and for kubectl alike."""
        import base64
        cert = base64.b64decode(self.carol["client-certificate-data"]).decode()
        key = base64.b64decode(self.carol["client-key-data"]).decode()
        plug = self.plugin("cert", self.answer({"clientCertificateData": cert, "clientKeyData": key}))
        kc = self.kubeconfig("kc", {"command": plug, "provideClusterInfo": True})
        p = self.nodegate("check", "--kubeconfig", kc, "--nd", self.nd)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('"state":"Granted"', p.stdout)
        k = self.kubectl(kc, "get", "nodes", "-o", "name")
        self.assertEqual(k.returncode, 0, k.stderr)

    def test_O24_missing_plugin_shows_its_install_hint(self):
        """A kubeconfig naming a plugin that is not installed: the error names it and says how
        to install it (installHint), at once and without listing anything."""
        kc = self.kubeconfig("kc", {"command": "ng-missing-auth-plugin",
                                    "installHint": "Install it with: apt install ng-auth"})
        p = self.nodegate("check", "--kubeconfig", kc, "--nd", self.nd)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn('credential plugin ng-missing-auth-plugin of user "plugin-user" not found: '
                      "Install it with: apt install ng-auth", p.stderr)

    def test_O25_failing_plugin_error_quotes_its_stderr(self):
        """A plugin that exits non-zero (an expired SSO session): the error names the plugin
        and quotes the end of what it said, so the operator knows to log in again."""
        plug = self.plugin("sso", "echo 'Error: the SSO session has expired; run: sso login' >&2; exit 255")
        kc = self.kubeconfig("kc", {"command": plug})
        p = self.nodegate("plan", "--kubeconfig", kc, "--nodes", "testselect=test1")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn(f"credential plugin {plug}: exited with status 255; its stderr ends: "
                      "Error: the SSO session has expired; run: sso login", p.stderr)

    def test_O26_interactive_always_is_refused(self):
        """A plugin that must prompt (interactiveMode Always) cannot work without a terminal:
        nodegate says so instead of hanging on a prompt nobody sees."""
        kc = self.kubeconfig("kc", {"command": "true", "interactiveMode": "Always"})
        p = self.nodegate("check", "--kubeconfig", kc, "--nd", self.nd)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("never gives a credential plugin a terminal", p.stderr)

    def test_O20_kubeconfig_list_is_merged(self):
        """KUBECONFIG=missing:mine:admin's, as kubectl merges it: `--context exec` comes from
        the second file, the admin context from the third, and a context defined nowhere is
        named with the files searched."""
        token = self.api.tokens["admin"]
        self.plugin("get-token", self.answer({"token": token}))
        kc = self.kubeconfig("kc", {"command": "./bin/get-token"}, context="exec")
        env = {"KUBECONFIG": f"{self.tmp}/missing:{kc}:{self.api.kubeconfig}"}
        p = self.nodegate("check", "--context", "exec", "--nd", self.nd, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.nodegate("check", "--context", "ktestapi", "--nd", self.nd, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('"state":"Granted"', p.stdout)
        p = self.nodegate("check", "--context", "nope", "--nd", self.nd, env=env)
        self.assertEqual(p.returncode, 2)
        self.assertIn(f'context "nope" not found in {kc}:{self.api.kubeconfig}', p.stderr)


if __name__ == "__main__":
    unittest.main()
