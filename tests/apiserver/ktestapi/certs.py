"""Certificates via the openssl CLI: a CA and leaf certificates signed by it (ECDSA P-256)."""
import os
import subprocess


def _run(args, cwd):
    r = subprocess.run(["openssl"] + args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    if r.returncode != 0:
        raise RuntimeError("openssl %s failed: %s" % (" ".join(args), r.stderr.decode(errors="replace")))


def make_ca(directory, name="ca", cn="ktestapi-ca"):
    """Create <name>.crt/<name>.key in directory (reused if present). Returns (crt, key) paths."""
    os.makedirs(directory, exist_ok=True)
    crt, key = os.path.join(directory, name + ".crt"), os.path.join(directory, name + ".key")
    if os.path.exists(crt) and os.path.exists(key):
        return crt, key
    _run(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
          "-keyout", key, "-out", crt, "-days", "3650", "-subj", "/CN=" + cn,
          "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
         directory)
    return crt, key


def make_leaf(directory, name, ca_crt, ca_key, dns=(), ips=("127.0.0.1",), cn=None, days=365, orgs=()):
    """Create <name>.crt/<name>.key signed by the CA, with the given SANs (and O= entries for
    client certificates: Kubernetes reads the user from CN and the groups from O). Returns (crt, key)."""
    os.makedirs(directory, exist_ok=True)
    crt, key, csr = (os.path.join(directory, name + ext) for ext in (".crt", ".key", ".csr"))
    ext = os.path.join(directory, name + ".ext")
    sans = ["DNS:" + d for d in dns] + ["IP:" + i for i in ips]
    with open(ext, "w") as f:
        f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth,clientAuth\n")
        if sans:
            f.write("subjectAltName=%s\n" % ",".join(sans))
    subj = "".join("/O=" + o for o in orgs) + "/CN=" + (cn or name)
    _run(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
          "-keyout", key, "-out", csr, "-subj", subj], directory)
    _run(["x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key, "-CAcreateserial", "-out", crt,
          "-days", str(days), "-extfile", ext], directory)
    os.unlink(csr)
    os.unlink(ext)
    return crt, key
