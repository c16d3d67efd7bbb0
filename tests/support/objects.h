/* Kubernetes objects as JSON text for the policy tests, and fixture F (shared/acceptance:
 * node1 and node2 labelled testselect=test1, node3 testselect=test2, all Ready). String-literal
 * macros so a test writes a cluster as one concatenated literal. */
#ifndef NG_TESTS_SUPPORT_OBJECTS_H
#define NG_TESTS_SUPPORT_OBJECTS_H

#include "kube/kube.h"

#define ND(name, spec)                                                                             \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/"                               \
	"v1alpha1\",\"metadata\":{\"name\":\"" name "\"},\"spec\":" spec "}"
#define GRANTED(name, nodes)                                                                       \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/"                               \
	"v1alpha1\",\"metadata\":{\"name\":\"" name "\"},\"spec\":{\"nodeNames\":" nodes           \
	"},\"status\":{\"state\":\"Granted\",\"disruptedNodes\":" nodes "}}"
#define NDB(name, spec)                                                                            \
	"{\"kind\":\"NodeDisruptionBudget\",\"apiVersion\":\"nodegate.io/"                         \
	"v1alpha1\",\"metadata\":{\"name\":\"" name "\"},\"spec\":" spec "}"
#define ADB(name, spec)                                                                            \
	"{\"kind\":\"ApplicationDisruptionBudget\",\"apiVersion\":\"nodegate.io/"                  \
	"v1alpha1\",\"metadata\":{\"name\":\"" name "\",\"namespace\":\"default\"},\"spec\":" spec \
	"}"
#define NGC(spec)                                                                                  \
	"{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/"                               \
	"v1alpha1\",\"metadata\":{\"name\":\"default\"},\"spec\":" spec "}"
#define POD(name, node, app)                                                                       \
	"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name                   \
	"\",\"namespace\":\"default\",\"labels\":{\"app\":\"" app                                  \
	"\"}},\"spec\":{\"nodeName\":\"" node "\"}}"
/* An ADB spec protecting app=db with @hook (JSON) as its health hook. */
#define DB_HOOK(hook)                                                                              \
	"{\"podSelector\":{\"matchLabels\":{\"app\":\"db\"}},\"maxDisruptions\":1,"                \
	"\"healthHook\":" hook "}"
#define ON_TEST1 "{\"nodeSelector\":{\"matchLabels\":{\"testselect\":\"test1\"}}"

/**
 * Fixture F's three nodes (each also labelled kubernetes.io/hostname) plus the objects in
 * @extra (comma-separated JSON objects, "" for none), as one snapshot; aborts the test run on
 * error. Caller releases it.
 */
struct kube_snapshot *ng_test_cluster_f(const char *extra);

#endif
