#include "common/prom.h"

#include "common/buf.h"

#include <assert.h>
#include <string.h>

static const char *const type_names[] = {
    [NG_PROM_COUNTER] = "counter",
    [NG_PROM_GAUGE] = "gauge",
    [NG_PROM_HISTOGRAM] = "histogram",
};

/* Appends @s with each byte in @special replaced by a backslash and its letter in @letters. */
static ng_status put_escaped(struct ng_buf *out, const char *s, const char *special,
			     const char *letters)
{
	ng_status st = NG_OK;
	while (st == NG_OK && *s) {
		size_t run = strcspn(s, special);
		st = ng_buf_append(out, s, run);
		s += run;
		if (st == NG_OK && *s) {
			char esc[2] = {'\\', letters[strchr(special, *s) - special]};
			st = ng_buf_append(out, esc, sizeof(esc));
			s++;
		}
	}
	return st;
}

ng_status ng_prom_header(struct ng_buf *out, const char *name, enum ng_prom_type type,
			 const char *help)
{
	assert(type >= NG_PROM_COUNTER && type <= NG_PROM_HISTOGRAM);
	ng_status st = ng_buf_printf(out, "# HELP %s ", name);
	st = st ? st : put_escaped(out, help, "\\\n", "\\n");
	st = st ? st : ng_buf_printf(out, "\n# TYPE %s %s\n", name, type_names[type]);
	return st;
}

ng_status ng_prom_label_value(struct ng_buf *out, const char *value)
{
	ng_status st = ng_buf_puts(out, "\"");
	st = st ? st : put_escaped(out, value, "\\\"\n", "\\\"n");
	st = st ? st : ng_buf_puts(out, "\"");
	return st;
}

/* Appends `@name@suffix{labels,le="@le"} ` (no braces when there is no label and no @le). */
static ng_status series(struct ng_buf *out, const char *name, const char *suffix,
			const struct ng_prom_label *labels, size_t nlabels, const char *le)
{
	ng_status st = ng_buf_puts(out, name);
	st = st ? st : ng_buf_puts(out, suffix);
	if (nlabels == 0 && !le)
		return st ? st : ng_buf_puts(out, " ");
	st = st ? st : ng_buf_puts(out, "{");
	for (size_t i = 0; st == NG_OK && i < nlabels; i++) {
		st = ng_buf_printf(out, "%s%s=", i ? "," : "", labels[i].name);
		st = st ? st : ng_prom_label_value(out, labels[i].value);
	}
	if (le)
		st = st ? st : ng_buf_printf(out, "%sle=\"%s\"", nlabels ? "," : "", le);
	return st ? st : ng_buf_puts(out, "} ");
}

ng_status ng_prom_u64(struct ng_buf *out, const char *name, const struct ng_prom_label *labels,
		      size_t nlabels, uint64_t value)
{
	ng_status st = series(out, name, "", labels, nlabels, NULL);
	return st ? st : ng_buf_printf(out, "%llu\n", (unsigned long long)value);
}

ng_status ng_prom_i64(struct ng_buf *out, const char *name, const struct ng_prom_label *labels,
		      size_t nlabels, int64_t value)
{
	ng_status st = series(out, name, "", labels, nlabels, NULL);
	return st ? st : ng_buf_printf(out, "%lld\n", (long long)value);
}

ng_status ng_prom_histogram(struct ng_buf *out, const char *name,
			    const struct ng_prom_label *labels, size_t nlabels,
			    const struct ng_prom_hist_data *h)
{
	ng_status st = NG_OK;
	uint64_t cum = 0;
	for (size_t b = 0; st == NG_OK && b < h->nbounds; b++) {
		char le[32];
		ng_fmt(le, sizeof(le), "%g", h->bounds[b]);
		cum += h->buckets[b];
		st = series(out, name, "_bucket", labels, nlabels, le);
		st = st ? st : ng_buf_printf(out, "%llu\n", (unsigned long long)cum);
	}
	st = st ? st : series(out, name, "_bucket", labels, nlabels, "+Inf");
	st = st ? st : ng_buf_printf(out, "%llu\n", (unsigned long long)h->count);
	st = st ? st : series(out, name, "_sum", labels, nlabels, NULL);
	st = st ? st : ng_buf_printf(out, "%.6f\n", h->sum);
	st = st ? st : series(out, name, "_count", labels, nlabels, NULL);
	st = st ? st : ng_buf_printf(out, "%llu\n", (unsigned long long)h->count);
	return st;
}

void ng_prom_hist_init(struct ng_prom_hist *h, const double *bounds_s, size_t nbounds)
{
	assert(nbounds <= NG_PROM_MAX_BUCKETS);
	h->bounds_s = bounds_s;
	h->nbounds = nbounds <= NG_PROM_MAX_BUCKETS ? nbounds : NG_PROM_MAX_BUCKETS;
	for (size_t b = 0; b < NG_PROM_MAX_BUCKETS; b++)
		atomic_init(&h->buckets[b], 0);
	atomic_init(&h->count, 0);
	atomic_init(&h->sum_us, 0);
}

void ng_prom_hist_observe_us(struct ng_prom_hist *h, int64_t us)
{
	double s = (double)us / 1e6;
	size_t b = 0;
	while (b < h->nbounds && s > h->bounds_s[b])
		b++;
	if (b < h->nbounds)
		ng_prom_add(&h->buckets[b], 1);
	ng_prom_add(&h->count, 1);
	ng_prom_add(&h->sum_us, (uint64_t)(us > 0 ? us : 0));
}

ng_status ng_prom_hist_render(struct ng_buf *out, const char *name,
			      const struct ng_prom_label *labels, size_t nlabels,
			      struct ng_prom_hist *h)
{
	uint64_t buckets[NG_PROM_MAX_BUCKETS];
	struct ng_prom_hist_data d = {
	    .bounds = h->bounds_s, .buckets = buckets, .nbounds = h->nbounds};
	d.count = ng_prom_get(&h->count);
	for (size_t b = 0; b < d.nbounds; b++)
		buckets[b] = ng_prom_get(&h->buckets[b]);
	d.sum = (double)ng_prom_get(&h->sum_us) / 1e6;
	return ng_prom_histogram(out, name, labels, nlabels, &d);
}
