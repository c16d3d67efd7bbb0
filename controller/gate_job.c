/* The gate's work on a thread of its own (gate_internal.h, "gate_job.c"): one protocol for the
 * health-hook calls and the alert gate's question. */
#include "controller/gate_internal.h"

#include "kube/runtime.h"

static void *job_main(void *arg)
{
	struct gate_job *t = arg;
	t->run(t);
	struct gate *g = t->g;
	atomic_store(&t->done, true);
	atomic_store(t->answered, true);
	pthread_mutex_lock(&g->wake_mu);
	kube_runtime_wake(g->wake_rt); /* NULL once the gate stops, or in a test */
	pthread_mutex_unlock(&g->wake_mu);
	return NULL;
}

bool gate_job_start(struct gate_job *t, struct gate *g, _Atomic bool *answered,
		    void (*run)(struct gate_job *t))
{
	t->g = g;
	t->answered = answered;
	t->run = run;
	atomic_store(&t->done, false);
	atomic_store(&t->cancel, false);
	return pthread_create(&t->thread, NULL, job_main, t) == 0;
}

bool gate_job_done(struct gate_job *t)
{
	return atomic_load(&t->done);
}

void gate_job_stop(struct gate_job *t)
{
	atomic_store(&t->cancel, true);
	(void)pthread_join(t->thread, NULL);
}
