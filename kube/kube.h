/* Umbrella: the record types (kube/records.h), one object decoded on its own (kube/one.h) and
 * the snapshots, builder and store (kube/snapshot.h). New code includes the narrow header it needs.
 */
#ifndef NG_KUBE_KUBE_H
#define NG_KUBE_KUBE_H

#include "kube/one.h"
#include "kube/records.h"
#include "kube/snapshot.h"

#endif
