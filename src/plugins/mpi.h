/*
 * mpi.h - what the MPI plugin tells a backend about the JobSet it built
 * (internal). The names of its replicated jobs and files are the plugin's
 * conventions: a backend asks here instead of spelling them again, so a
 * change in mpi.c cannot break a local run.
 */
#ifndef KFT_PLUGINS_MPI_H
#define KFT_PLUGINS_MPI_H

#include <stdbool.h>

#include <jansson.h>

/* Whether the pods of replicated job `rjob` of a JobSet spec start no
 * process of their own: the "node" job of an MPI JobSet, whose ranks the
 * launcher's mpirun starts over the hostfile (on a cluster the node pods
 * only run sshd for it). */
bool kft_mpi_started_by_launcher(const json_t *jobset_spec, const char *rjob);

#endif
