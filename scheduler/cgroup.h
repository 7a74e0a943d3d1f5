/* SPDX-License-Identifier: MIT */
/*
 * The CPU quota of the cgroup the process runs in (a container's CPU
 * limit, a batch job's allocation), which caps how many of a pool's
 * workers stay awake at once (see weft__crew_t in pool_internal.h).
 */
#ifndef WEFT_SCHEDULER_CGROUP_H
#define WEFT_SCHEDULER_CGROUP_H

/*
 * The smallest CPU quota on the path from the process's cgroup up to the
 * root of its hierarchy, in CPUs (quota / period; 1.5 for "150000
 * 100000"): cgroup v2's cpu.max, or v1's cpu.cfs_quota_us and
 * cpu.cfs_period_us. 0 when no level sets one, or when nothing can be
 * read or parsed: an unknown limit is no limit.
 *
 * @p proc is the /proc directory to read the process's cgroup and
 * mountinfo files from ("/proc/self" when NULL; tests pass a directory of
 * fixtures whose mountinfo names other mount points). Any thread; reads
 * files, allocates nothing that outlives the call.
 */
double weft__cgroup_cpu_limit(const char *proc);

#endif /* WEFT_SCHEDULER_CGROUP_H */
