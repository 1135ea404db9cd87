/* record_probe.h - what `rtprof record` says once about how its processes
 * will be sampled (tools/record_probe.c). */
#ifndef RTPROF_RECORD_PROBE_H
#define RTPROF_RECORD_PROBE_H

/*
 * Probe perf events here, as the recorded processes will: when they are
 * refused, or allowed without kernel-side sampling, say so once on
 * stderr with the setting that changes it, and keep the processes quiet
 * about it (RTPROF_SAMPLER_QUIET). Context: the launcher, before it
 * starts the program.
 */
void rtprof_record_say_sampling(const char *prog);

#endif
