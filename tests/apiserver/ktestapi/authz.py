"""RBAC authorization (rbac.authorization.k8s.io/v1) and impersonation.

Evaluates Roles/ClusterRoles bound by RoleBindings/ClusterRoleBindings the way the RBAC
authorizer does: group system:masters is allowed everything; otherwise a request is allowed
when any rule of any role bound to the user, one of its groups, or (for
system:serviceaccount:<ns>:<name>) its ServiceAccount matches verb, apiGroup, resource
(`res`, `res/sub`, `*`, `*/sub`, `res/*`) and resourceNames — or, for paths outside the
API, nonResourceURLs (exact, or prefix with a trailing `*`). ClusterRoles with an
aggregationRule collect the rules of the ClusterRoles their selectors match.

Bootstrap policy (created at start, like kube-apiserver's): cluster-admin bound to
system:masters; system:discovery, system:basic-user and system:public-info-viewer bound
to system:authenticated; system:auth-delegator (create tokenreviews and
subjectaccessreviews, unbound: what a component that authenticates its own callers is
bound to); and the aggregated user-facing roles admin, edit and view (simplified rule sets
covering the resources this server serves).
"""
from .selection import label_selector_from_obj

READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "deletecollection", "patch", "update"]


def _rule(groups, resources, verbs, names=None):
    r = {"apiGroups": groups, "resources": resources, "verbs": verbs}
    if names:
        r["resourceNames"] = names
    return r


def bootstrap_objects():
    """ClusterRoles and ClusterRoleBindings of the bootstrap policy."""
    view_rules = [
        _rule([""], ["pods", "pods/status", "services", "services/status", "endpoints", "configmaps",
                     "persistentvolumeclaims", "persistentvolumeclaims/status", "replicationcontrollers",
                     "replicationcontrollers/status", "serviceaccounts", "events", "namespaces",
                     "namespaces/status", "limitranges", "resourcequotas"], READ),
        _rule(["apps"], ["deployments", "deployments/status", "replicasets", "replicasets/status", "statefulsets",
                         "statefulsets/status", "daemonsets", "daemonsets/status", "controllerrevisions"], READ),
        _rule(["batch"], ["jobs", "jobs/status", "cronjobs", "cronjobs/status"], READ),
        _rule(["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"], READ),
        _rule(["coordination.k8s.io"], ["leases"], READ),
        _rule(["events.k8s.io"], ["events"], READ),
    ]
    edit_rules = [
        _rule([""], ["pods", "pods/eviction", "services", "endpoints", "configmaps", "secrets",
                     "persistentvolumeclaims", "replicationcontrollers", "serviceaccounts", "events"], WRITE),
        _rule([""], ["secrets"], READ),
        _rule(["apps"], ["deployments", "replicasets", "statefulsets", "daemonsets"], WRITE),
        _rule(["batch"], ["jobs", "cronjobs"], WRITE),
        _rule(["policy"], ["poddisruptionbudgets"], WRITE),
        _rule(["coordination.k8s.io"], ["leases"], WRITE),
        _rule(["events.k8s.io"], ["events"], WRITE),
    ]
    admin_rules = [
        _rule(["rbac.authorization.k8s.io"], ["roles", "rolebindings"], READ + WRITE),
    ]

    def cr(name, rules=None, aggregate_to=None, labels=None):
        o = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": name, "labels": dict(labels or {}, **{"kubernetes.io/bootstrapping": "rbac-defaults"}),
                          "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
             "rules": rules or []}
        if aggregate_to:
            o["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {aggregate_to: "true"}}]}
        return o

    def crb(name, role, group):
        return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
                             "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}]}
    agg = "rbac.authorization.k8s.io/aggregate-to-"
    return [
        cr("cluster-admin", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                             {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
        cr("system:discovery", [{"nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
                                                     "/openapi", "/openapi/*", "/readyz", "/version", "/version/"],
                                 "verbs": ["get"]}]),
        cr("system:public-info-viewer", [{"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version",
                                                              "/version/"], "verbs": ["get"]}]),
        cr("system:auth-delegator", [_rule(["authentication.k8s.io"], ["tokenreviews"], ["create"]),
                                     _rule(["authorization.k8s.io"], ["subjectaccessreviews"], ["create"])]),
        cr("system:basic-user", [_rule(["authorization.k8s.io"], ["selfsubjectaccessreviews",
                                                                 "selfsubjectrulesreviews"], ["create"]),
                                 _rule(["authentication.k8s.io"], ["selfsubjectreviews"], ["create"])]),
        cr("admin", aggregate_to=agg + "admin"),
        cr("edit", aggregate_to=agg + "edit", labels={agg + "admin": "true"}),
        cr("view", aggregate_to=agg + "view", labels={agg + "edit": "true"}),
        cr("system:aggregate-to-admin", admin_rules, labels={agg + "admin": "true"}),
        cr("system:aggregate-to-edit", edit_rules, labels={agg + "edit": "true"}),
        cr("system:aggregate-to-view", view_rules, labels={agg + "view": "true"}),
        crb("cluster-admin", "cluster-admin", "system:masters"),
        crb("system:discovery", "system:discovery", "system:authenticated"),
        crb("system:public-info-viewer", "system:public-info-viewer", "system:authenticated"),
        crb("system:basic-user", "system:basic-user", "system:authenticated"),
    ]


def _subject_matches(subj, user, binding_ns):
    kind = subj.get("kind")
    if kind == "User":
        return subj.get("name") == user.name
    if kind == "Group":
        return subj.get("name") in user.groups or (subj.get("name") == "system:authenticated" and
                                                   getattr(user, "implicit_authenticated", True))
    if kind == "ServiceAccount":
        ns = subj.get("namespace") or binding_ns
        return user.name == "system:serviceaccount:%s:%s" % (ns, subj.get("name"))
    return False


def _resource_matches(rule_res, resource, sub):
    full = resource + ("/" + sub if sub else "")
    for r in rule_res or []:
        if r == "*" or r == full:
            return True
        if sub and (r == "*/" + sub or r == resource + "/*"):
            return True
    return False


def _rule_allows(rule, a):
    verbs = rule.get("verbs") or []
    if "*" not in verbs and a["verb"] not in verbs:
        return False
    if a.get("path") is not None:
        for u in rule.get("nonResourceURLs") or []:
            # rbac's NonResourceURLMatches: "*", exact, or a prefix before trailing '*'s
            if u == "*" or u == a["path"] or (u.endswith("*") and a["path"].startswith(u.rstrip("*"))):
                return True
        return False
    groups = rule.get("apiGroups")
    if groups is None or ("*" not in groups and a["group"] not in groups):
        return False
    if not _resource_matches(rule.get("resources"), a["resource"], a.get("subresource")):
        return False
    names = rule.get("resourceNames")
    if names:
        return bool(a.get("name")) and a["name"] in names
    return True


class Authorizer:
    def __init__(self, store):
        self.store = store

    def _cluster_role_rules(self, name, seen=None):
        role = self.store.get("rbac.authorization.k8s.io/clusterroles", name)
        if role is None:
            return []
        rules = list(role.get("rules") or [])
        agg = role.get("aggregationRule")
        if agg:
            seen = seen or {name}
            items, _, _, _ = self.store.list("rbac.authorization.k8s.io/clusterroles")
            for sel in agg.get("clusterRoleSelectors") or []:
                try:
                    s = label_selector_from_obj(sel)
                except ValueError:
                    continue
                for other in items:
                    n = other["metadata"]["name"]
                    if n not in seen and s.matches(other["metadata"].get("labels")):
                        seen.add(n)
                        rules += self._cluster_role_rules(n, seen)
        return rules

    def _role_rules(self, ref, ns):
        if ref.get("kind") == "ClusterRole":
            return self._cluster_role_rules(ref.get("name"))
        role = self.store.get("rbac.authorization.k8s.io/roles", "%s/%s" % (ns, ref.get("name")))
        return list((role or {}).get("rules") or [])

    def allowed(self, user, a):
        """a: dict(verb, group, resource, subresource, name, namespace) or dict(verb, path)."""
        if "system:masters" in user.groups:
            return True
        items, _, _, _ = self.store.list("rbac.authorization.k8s.io/clusterrolebindings")
        for b in items:
            if any(_subject_matches(s, user, None) for s in b.get("subjects") or []):
                for r in self._role_rules(b.get("roleRef") or {}, None):
                    if _rule_allows(r, a):
                        return True
        ns = a.get("namespace")
        if ns and a.get("path") is None:
            items, _, _, _ = self.store.list("rbac.authorization.k8s.io/rolebindings", ns=ns)
            for b in items:
                if any(_subject_matches(s, user, ns) for s in b.get("subjects") or []):
                    for r in self._role_rules(b.get("roleRef") or {}, ns):
                        if _rule_allows(r, a):
                            return True
        return False


def rules_for(az, user, ns):
    """All rules that apply to `user` in namespace `ns` (SelfSubjectRulesReview)."""
    rules = []
    items, _, _, _ = az.store.list("rbac.authorization.k8s.io/clusterrolebindings")
    for b in items:
        if any(_subject_matches(s, user, None) for s in b.get("subjects") or []):
            rules += az._role_rules(b.get("roleRef") or {}, None)
    if ns:
        items, _, _, _ = az.store.list("rbac.authorization.k8s.io/rolebindings", ns=ns)
        for b in items:
            if any(_subject_matches(s, user, ns) for s in b.get("subjects") or []):
                rules += az._role_rules(b.get("roleRef") or {}, ns)
    res, nonres = [], []
    for r in rules:
        if r.get("nonResourceURLs"):
            nonres.append({"verbs": r.get("verbs") or [], "nonResourceURLs": r["nonResourceURLs"]})
        else:
            e = {"verbs": r.get("verbs") or [], "apiGroups": r.get("apiGroups") or [],
                 "resources": r.get("resources") or []}
            if r.get("resourceNames"):
                e["resourceNames"] = r["resourceNames"]
            res.append(e)
    return res, nonres


def forbidden_message(user, a):
    if a.get("path") is not None:
        return 'forbidden: User "%s" cannot %s path "%s"' % (user.name, a["verb"], a["path"])
    res = a["resource"] + ("/" + a["subresource"] if a.get("subresource") else "")
    gr = a["resource"] + ("." + a["group"] if a["group"] else "")
    head = '%s "%s" is forbidden' % (gr, a["name"]) if a.get("name") else "%s is forbidden" % gr
    where = 'in the namespace "%s"' % a["namespace"] if a.get("namespace") else "at the cluster scope"
    return '%s: User "%s" cannot %s resource "%s" in API group "%s" %s' % (
        head, user.name, a["verb"], res, a["group"], where)
