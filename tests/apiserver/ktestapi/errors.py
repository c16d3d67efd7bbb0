"""API errors rendered as metav1.Status bodies, with the reasons kube-apiserver uses."""


class APIError(Exception):
    """An error that becomes a `Status` response with HTTP `code`."""

    def __init__(self, code, reason, message, details=None, headers=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def retry_after(self):
        """details.retryAfterSeconds when > 0: kube-apiserver's responsewriters.ErrorNegotiated
        sends it as the `Retry-After` header of every Status error that carries it."""
        d = self.details if isinstance(self.details, dict) else {}
        n = d.get("retryAfterSeconds")
        if isinstance(n, int) and not isinstance(n, bool) and n > 0:
            return n
        return None

    def status(self):
        s = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
             "message": self.message, "reason": self.reason, "code": self.code}
        if not self.reason:
            del s["reason"]  # omitempty, e.g. a Status returned as an object and turned into an error
        if self.details is not None:
            s["details"] = self.details
        return s


def _details(name, group, kind, causes=None):
    d = {}
    if name:
        d["name"] = name
    if group:
        d["group"] = group
    d["kind"] = kind
    if causes:
        d["causes"] = causes
    return d


def qualified(resource, group):
    return resource + "." + group if group else resource


def not_found(resource, group, name):
    return APIError(404, "NotFound", '%s "%s" not found' % (qualified(resource, group), name),
                    _details(name, group, resource))


def already_exists(resource, group, name):
    return APIError(409, "AlreadyExists", '%s "%s" already exists' % (qualified(resource, group), name),
                    _details(name, group, resource))


def conflict(resource, group, name, msg="the object has been modified; please apply your changes to the latest version and try again"):
    return APIError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": %s' % (qualified(resource, group), name, msg),
                    _details(name, group, resource))


def invalid(kind, group, name, causes):
    """422 Invalid. causes: list of (type, field, message) tuples, type e.g. FieldValueRequired.

    Every cause is listed in details.causes; the message names each distinct one once, as
    field.ErrorList.ToAggregate does (kube-apiserver validates some objects twice)."""
    parts = []
    cs = []
    for typ, field, msg in causes:
        if "%s: %s" % (field, msg) not in parts:
            parts.append("%s: %s" % (field, msg))
        cs.append({"reason": typ, "message": msg, "field": field})
    gk = kind + "." + group if group else kind
    if len(parts) == 1:
        m = '%s "%s" is invalid: %s' % (gk, name, parts[0])
    else:
        m = '%s "%s" is invalid: [%s]' % (gk, name, ", ".join(parts))
    return APIError(422, "Invalid", m, _details(name, group, kind, cs))


def bad_request(msg):
    return APIError(400, "BadRequest", msg)


def method_not_allowed(msg="the server does not allow this method on the requested resource"):
    return APIError(405, "MethodNotAllowed", msg)


def internal(msg):
    return APIError(500, "InternalError", "Internal error occurred: " + msg,
                    {"causes": [{"message": msg}]})


def gone(msg):
    return APIError(410, "Expired", msg)


def unsupported_media(msg):
    return APIError(415, "UnsupportedMediaType", msg)
