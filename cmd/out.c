/* How the CLI prints: formats, colour and times. */
#include "cmd/out.h"

#include "common/buf.h"
#include "common/yaml.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int cmd_out_parse(const char *prefix, const char *value, FILE *f, struct cmd_out *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->tty = isatty(fileno(f)) == 1;
	if (!value)
		ret->format = ret->tty ? CMD_OUT_TEXT : CMD_OUT_JSON;
	else if (strcmp(value, "text") == 0)
		ret->format = CMD_OUT_TEXT;
	else if (strcmp(value, "json") == 0)
		ret->format = CMD_OUT_JSON;
	else if (strcmp(value, "yaml") == 0)
		ret->format = CMD_OUT_YAML;
	else {
		(void)fprintf(stderr, "%s: --output \"%s\": expected text, json or yaml\n", prefix,
			      value);
		return -1;
	}
	/* NOLINTNEXTLINE(concurrency-mt-unsafe): the CLI never sets its environment */
	const char *no_colour = getenv("NO_COLOR"), *term = getenv("TERM");
	ret->colour = ret->tty && ret->format == CMD_OUT_TEXT && !(no_colour && no_colour[0]) &&
		      !(term && strcmp(term, "dumb") == 0);
	return 0;
}

ng_status cmd_out_print(FILE *f, const struct cmd_out *o, const char *json, size_t len,
			struct ng_err *err)
{
	if (o->format != CMD_OUT_YAML) {
		(void)fwrite(json, 1, len, f);
		(void)fputc('\n', f);
		return NG_OK;
	}
	struct ng_buf y;
	ng_buf_init(&y, 4 * len + 4096);
	ng_status st = ng_yaml_from_json(json, len, &y, err);
	if (st == NG_OK)
		(void)fwrite(y.data, 1, y.len, f);
	ng_buf_finish(&y);
	return st;
}

const char *cmd_out_bold(const struct cmd_out *o)
{
	return o->colour ? "\033[1m" : "";
}

const char *cmd_out_good(const struct cmd_out *o)
{
	return o->colour ? "\033[32m" : "";
}

const char *cmd_out_bad(const struct cmd_out *o)
{
	return o->colour ? "\033[31m" : "";
}

const char *cmd_out_end(const struct cmd_out *o)
{
	return o->colour ? "\033[0m" : "";
}

void cmd_out_clear(FILE *f, const struct cmd_out *o)
{
	if (o->tty && o->format == CMD_OUT_TEXT)
		(void)fputs("\033[H\033[2J", f);
	else
		(void)fputc('\n', f);
}

void cmd_out_time(FILE *f, int64_t wall_ms)
{
	time_t t = (time_t)(wall_ms / 1000);
	struct tm tm;
	char buf[32];
	if (gmtime_r(&t, &tm) && strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm))
		(void)fputs(buf, f);
}

void cmd_out_duration_str(char *out, size_t cap, int64_t ms)
{
	int64_t s = ms > 0 ? ms / 1000 : 0;
	if (s >= 3600)
		ng_fmt(out, cap, "%lldh%02lldm%02llds", (long long)(s / 3600),
		       (long long)(s % 3600 / 60), (long long)(s % 60));
	else if (s >= 60)
		ng_fmt(out, cap, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
	else
		ng_fmt(out, cap, "%llds", (long long)s);
}

void cmd_out_duration(FILE *f, int64_t ms)
{
	char d[32];
	cmd_out_duration_str(d, sizeof(d), ms);
	(void)fputs(d, f);
}
