// The MPI backend: collectives over host buffers between processes started by mpirun/srun, on one
// or many nodes.
//
// Design decisions:
//  - One communication ("progress") thread per communicator issues every MPI call while the
//    communicator runs: it posts non-blocking collectives (MPI_Iallreduce, ...) in submission order
//    and polls MPI_Test, because Open MPI does not progress non-blocking collectives unless some
//    thread keeps calling into MPI. Compute threads never enter MPI, so MPI_THREAD_SERIALIZED is
//    enough (MPI_THREAD_MULTIPLE is requested and used when granted).
//  - all_gather, broadcast and all_to_all move raw elements (MPI_UINT8/16/32_T by dtype size), so
//    every dtype works, int8 payloads included; all_to_all is MPI_Ialltoall, with the same Work,
//    deadline, fingerprint and watchdog treatment as the other collectives.
//  - Open MPI tuning measured through tc-shaped network namespaces (docs/ground_truth.md, run 4):
//    reduce_scatter(_v) is one MPI_Ireduce per root and all_gather(_v) one MPI_Ibcast per root,
//    all in flight together (libnbc's MPI_Ireduce_scatter ran at a third of the link, its
//    MPI_Iallgatherv alternated between line rate and half); MPI_Init gets btl_tcp_links 2 (with
//    one TCP connection per pair the two directions of an exchange took turns) and the ring
//    iallreduce, unless the user set those MCA parameters.
//  - bf16/f16 reductions go through fp32 staging buffers: the sum is accumulated in fp32 and
//    rounded once, at the end (twice the bytes on the wire of a native 16-bit reduction).
//  - Failure is an error, never a hang. Every Work has a deadline (CommOptions::timeout_s). When
//    the oldest collective passes it, the progress thread asks every peer, over a separate control
//    communicator, which collective it has reached (the peers' progress threads answer even while
//    their application threads compute or wait); ranks behind, or silent, are named in one line
//    `[tt rank R] error: collective all_reduce #17 (step 42, 1.0 MiB f32) timed out after 3.0 s
//    waiting for rank(s) 1 (...)`, then MPI_Abort ends the job. A watchdog thread is the backstop
//    when the progress thread itself is stuck inside MPI. Point-to-point queries were chosen over a
//    passive-target RMA window (no dependence on one-sided progress or on rank 0 being alive) and
//    over heartbeat files (no shared file system needed across nodes).
//  - check_collectives: before each collective the ranks all-gather (op, count, dtype, seq, op/root)
//    on a separate communicator; a mismatch fails that Work, and every later one, on every rank
//    with "rank 0 called all_reduce(1024 f32, sum) #5 but rank 1 called all_gather(512 f32) #5".
//  - split(color, key): MPI_Comm_split of a duplicate of the parent's communicator, called from the
//    application thread; the child is a full MpiCommunicator (its own progress thread, watchdog and
//    control channel), so it needs MPI_THREAD_MULTIPLE (a kRuntime error otherwise). Messages name
//    ranks by their world rank and the collective by its communicator ("all_reduce #3 [split color
//    1] ..."). Its nodes are the parent's (CommOptions::ranks_per_node pretends consecutive world
//    ranks form nodes; otherwise MPI_COMM_TYPE_SHARED decides).
//  - MPI is initialised once per process (or adopted when the caller already did) and finalised
//    exactly once, at exit, after any live communicator has been shut down.
// Element counts per rank must fit MPI's int; larger buffers are a kInternal error (split them).
#pragma once

#include <memory>

#include "parallel/comm/communicator.h"
#include "parallel/comm/rank_discovery.h"

namespace tt::parallel {

// env: the launcher's view (for consistency checks against MPI's); throws kConfig on disagreement
// and kRuntime when MPI cannot be initialised with at least MPI_THREAD_SERIALIZED.
std::unique_ptr<Communicator> create_mpi_communicator(const CommOptions& opts, const RankInfo& env);

// MPI thread level granted to this process (MPI_THREAD_*), or -1 before MPI was initialised.
// Other code may call MPI from its own threads only when this is MPI_THREAD_MULTIPLE.
int mpi_thread_level();

}  // namespace tt::parallel
