"""ktestapi: a local, faithful-enough Kubernetes API server for nodegate's tests.

Modules:
  certs      - CA and serving certificate generation (openssl CLI)
  resources  - the resource registry (built-in kinds, CRD-defined kinds, discovery documents)
  selection  - label selector grammar, metav1.LabelSelector, field selectors
  store      - object storage, global resourceVersion, event history, watches, pagination
  patch      - JSON merge patch, JSON patch (RFC 6902), strategic merge patch
  validation - the 422 checks (names, labels, pods, CRD structural schemas, defaults, pruning)
  tables     - meta.k8s.io/v1 Table output (kubectl get)
  admission  - validating/mutating webhook dispatch (AdmissionReview v1 over HTTPS)
  eviction   - policy/v1 Eviction and PodDisruptionBudget status computation
  server     - the HTTP(S) front end, routing, auth, control endpoint
  fixtures   - fixture loader and large-cluster generator
"""
