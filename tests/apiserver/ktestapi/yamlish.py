"""A minimal YAML reader (no PyYAML on the machine) for Kubernetes manifests.

Supported subset: multiple documents (`---`), comments, block mappings and sequences
(including "- key: value" items and compact nested sequences), plain / single-quoted /
double-quoted scalars, literal (`|`, `|-`) and folded (`>`, `>-`) block scalars, flow
sequences and flow mappings on one line ([a, b], {k: v}), and the usual scalar typing
(null/~, true/false, ints, floats; everything else a string). Not supported: anchors,
aliases, tags, multi-line plain or quoted scalars, complex keys.
"""
import json
import re

_INT = re.compile(r'^[-+]?(0|[1-9][0-9]*)$')
_FLOAT = re.compile(r'^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$')


class YAMLError(ValueError):
    pass


def _scalar(s):
    s = s.strip()
    if s == "" or s in ("~", "null", "Null", "NULL"):
        return None
    if s in ("true", "True", "TRUE"):
        return True
    if s in ("false", "False", "FALSE"):
        return False
    if s.startswith('"'):
        if not s.endswith('"') or len(s) < 2:
            raise YAMLError("unterminated double-quoted scalar: %s" % s)
        return json.loads(s)
    if s.startswith("'"):
        if not s.endswith("'") or len(s) < 2:
            raise YAMLError("unterminated single-quoted scalar: %s" % s)
        return s[1:-1].replace("''", "'")
    if s.startswith("[") or s.startswith("{"):
        return _flow(s)
    if _INT.match(s):
        return int(s)
    if _FLOAT.match(s) and any(c.isdigit() for c in s):
        return float(s)
    return s


def _flow(s):
    pos = [0]

    def ws():
        while pos[0] < len(s) and s[pos[0]] in " \t":
            pos[0] += 1

    def value(stop):
        ws()
        c = s[pos[0]]
        if c == "[":
            pos[0] += 1
            out = []
            ws()
            if s[pos[0]] == "]":
                pos[0] += 1
                return out
            while True:
                out.append(value(",]"))
                ws()
                if s[pos[0]] == ",":
                    pos[0] += 1
                    ws()
                    if s[pos[0]] == "]":
                        pos[0] += 1
                        return out
                    continue
                if s[pos[0]] == "]":
                    pos[0] += 1
                    return out
                raise YAMLError("bad flow sequence: %s" % s)
        if c == "{":
            pos[0] += 1
            out = {}
            ws()
            if s[pos[0]] == "}":
                pos[0] += 1
                return out
            while True:
                k = value(":")
                ws()
                if s[pos[0]] != ":":
                    raise YAMLError("bad flow mapping: %s" % s)
                pos[0] += 1
                out[k] = value(",}")
                ws()
                if s[pos[0]] == ",":
                    pos[0] += 1
                    continue
                if s[pos[0]] == "}":
                    pos[0] += 1
                    return out
                raise YAMLError("bad flow mapping: %s" % s)
        if c in "\"'":
            q = c
            j = pos[0] + 1
            while j < len(s):
                if s[j] == "\\" and q == '"':
                    j += 2
                    continue
                if s[j] == q:
                    if q == "'" and j + 1 < len(s) and s[j + 1] == "'":
                        j += 2
                        continue
                    break
                j += 1
            tok = s[pos[0]:j + 1]
            pos[0] = j + 1
            return _scalar(tok)
        j = pos[0]
        while j < len(s) and s[j] not in stop:
            j += 1
        tok = s[pos[0]:j]
        pos[0] = j
        return _scalar(tok)

    v = value("")
    return v


def _strip_comment(line):
    out = []
    q = None
    for i, c in enumerate(line):
        if q:
            if c == q:
                q = None
        elif c in "\"'" and (i == 0 or line[i - 1] in " :[{,-"):
            q = c
        elif c == "#" and (i == 0 or line[i - 1] in " \t"):
            break
        out.append(c)
    return "".join(out).rstrip()


def _split_kv(text):
    """Split 'key: value' at the first ': ' outside quotes; returns (key, rest) or None."""
    q = None
    for i, c in enumerate(text):
        if q:
            if c == q:
                q = None
            continue
        if c in "\"'" and i == 0:
            q = c
            continue
        if c == ":" and (i + 1 == len(text) or text[i + 1] in " \t"):
            return _scalar(text[:i]) if text[:1] in "\"'" else text[:i].strip(), text[i + 1:].strip()
    return None


class _Parser:
    def __init__(self, lines):
        self.raw = lines
        self.lines = []  # (indent, text, rawline index)
        for i, l in enumerate(lines):
            t = _strip_comment(l)
            if t.strip():
                self.lines.append((len(t) - len(t.lstrip(" ")), t.strip(), i))
        self.i = 0

    def parse(self):
        if not self.lines:
            return None
        v = self.block(self.lines[0][0])
        if self.i < len(self.lines):
            raise YAMLError("unexpected content at line %d: %s" % (self.lines[self.i][2] + 1, self.lines[self.i][1]))
        return v

    def block(self, indent):
        ind, text, _ = self.lines[self.i]
        if text.startswith("- ") or text == "-":
            return self.seq(ind)
        if _split_kv(text) is not None:
            return self.map(ind)
        self.i += 1
        return _scalar(text)

    def block_scalar(self, header, parent_indent):
        folded = header.startswith(">")
        chomp = "-" if "-" in header else ("+" if "+" in header else "")
        # consume raw lines until indentation drops to <= parent_indent
        start_raw = self.lines[self.i - 1][2] + 1
        j = start_raw
        body = []
        ind = None
        while j < len(self.raw):
            l = self.raw[j]
            if l.strip() == "":
                body.append("")
                j += 1
                continue
            li = len(l) - len(l.lstrip(" "))
            if li <= parent_indent:
                break
            if ind is None:
                ind = li
            body.append(l[ind:] if li >= ind else l.lstrip(" "))
            j += 1
        while self.i < len(self.lines) and self.lines[self.i][2] < j:
            self.i += 1
        while body and body[-1] == "":
            body.pop()
        if folded:
            text = ""
            for k, b in enumerate(body):
                if k == 0:
                    text = b
                elif b == "" or body[k - 1] == "":
                    text += "\n" + b
                else:
                    text += " " + b
        else:
            text = "\n".join(body)
        if chomp != "-":
            text += "\n"
        return text

    def value_after(self, rest, indent):
        """The value of 'key: rest' or '- rest' whose line had indentation `indent`."""
        if rest in ("|", "|-", "|+", ">", ">-", ">+"):
            return self.block_scalar(rest, indent)
        if rest == "":
            if self.i < len(self.lines):
                nind, ntext, _ = self.lines[self.i]
                if nind > indent or (nind == indent and (ntext.startswith("- ") or ntext == "-")):
                    return self.block(nind)
            return None
        return _scalar(rest)

    def map(self, indent):
        out = {}
        while self.i < len(self.lines):
            ind, text, ln = self.lines[self.i]
            if ind < indent:
                break
            if ind > indent:
                raise YAMLError("bad indentation at line %d" % (ln + 1))
            if text.startswith("- "):
                break
            kv = _split_kv(text)
            if kv is None:
                raise YAMLError("expected 'key: value' at line %d: %s" % (ln + 1, text))
            self.i += 1
            k, rest = kv
            if isinstance(k, str) and k.startswith("<<"):
                raise YAMLError("merge keys are not supported")
            out[k] = self.value_after(rest, indent)
        return out

    def seq(self, indent):
        out = []
        while self.i < len(self.lines):
            ind, text, ln = self.lines[self.i]
            if ind != indent or not (text.startswith("- ") or text == "-"):
                if ind > indent:
                    raise YAMLError("bad indentation at line %d" % (ln + 1))
                break
            rest = text[2:].strip() if text != "-" else ""
            if rest == "" or rest in ("|", "|-", ">", ">-"):
                self.i += 1
                out.append(self.value_after(rest, indent))
                continue
            # "- key: value" starts a mapping whose indentation is indent+2 (or where the key is)
            sub_indent = indent + (len(text) - len(text[1:].lstrip(" ")))
            if _split_kv(rest) is not None and not rest.startswith(("[", "{", '"', "'")) or \
                    (_split_kv(rest) is not None and rest[0] in "\"'"):
                self.lines[self.i] = (sub_indent, rest, ln)
                out.append(self.map(sub_indent))
            elif rest.startswith("- "):
                self.lines[self.i] = (sub_indent, rest, ln)
                out.append(self.seq(sub_indent))
            else:
                self.i += 1
                out.append(_scalar(rest))
        return out


def load_all(text):
    """Parse a multi-document YAML string; returns the list of non-empty documents."""
    docs = []
    cur = []
    for line in text.splitlines():
        if re.match(r'^---(\s|$)', line) or line.strip() == "...":
            docs.append(cur)
            cur = []
            rest = line[3:].strip()
            if rest and not rest.startswith("#"):
                cur.append(rest)
            continue
        cur.append(line)
    docs.append(cur)
    out = []
    for d in docs:
        v = _Parser(d).parse()
        if v is not None:
            out.append(v)
    return out
