/* The coordination.k8s.io/v1 Lease as leader election reads it (docs/leader-election.md): the
 * spec client-go calls the LeaderElectionRecord, and the object's metadata kept as JSON so a
 * full-object PUT carries it back as read, resourceVersion included. The writer is
 * controller/leader.c; the decoding lives here with the other wire formats.
 *
 * Ownership: a record's strings are malloc'ed and owned by the record (freed by
 * kube_lease_record_finish()); metadata strings are malloc'ed and freed by the caller with
 * free(). Pure; any thread. */
#ifndef NG_KUBE_LEASE_H
#define NG_KUBE_LEASE_H

#include "common/status.h"

#include <stddef.h>
#include <stdint.h>

/* Absent optional fields are NULL; an absent holder is "". */
struct kube_lease_record {
	char *holder;
	char *acquire_time;
	char *renew_time;
	char *strategy;
	char *preferred_holder;
	int64_t duration_s;
	int64_t transitions;
};

/** Frees @r's strings and zeroes it. Accepts a zeroed record. */
void kube_lease_record_finish(struct kube_lease_record *r);

/** strdup that maps NULL to NULL. NG_ENOMEM, and *@ret untouched, on OOM. */
NG_NODISCARD ng_status kube_lease_strdup(const char *s, char **ret);

/**
 * Decodes @len bytes of a Lease: the spec into @ret_rec, the metadata re-encoded as JSON into
 * @ret_meta (caller frees with free()). Both written only on success. NG_EPARSE naming the
 * field (no metadata.resourceVersion, a spec field of the wrong type or range), NG_ENOMEM.
 */
NG_NODISCARD ng_status kube_lease_decode(const char *buf, size_t len,
					 struct kube_lease_record *ret_rec, char **ret_meta,
					 struct ng_err *reterr);

/**
 * The `message` of an API server Status in @len bytes at @buf into @out (@cap bytes), "" when
 * the body is not one. Never fails.
 */
void kube_status_message(const char *buf, size_t len, char *out, size_t cap);

#endif
