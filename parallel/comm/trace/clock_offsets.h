// Clock offsets between rank 0 and every other rank, measured over the communicator, so spans
// recorded on each rank's steady clock can be drawn on rank 0's time axis.
//
// Design: NTP-style ping-pong over two broadcasts per exchange. Rank 0 stamps t1 and broadcasts
// it; rank r stamps t2 on arrival and t3 just before broadcasting (t2, t3) back; rank 0 stamps t4
// on arrival. Then round trip = (t4 - t1) - (t3 - t2) and offset = ((t2 - t1) + (t3 - t4)) / 2
// (rank r's clock minus rank 0's), exact when the two directions take equally long. Of several
// exchanges the one with the smallest round trip is kept: it has the least room for asymmetry,
// and its error is at most half its round trip. The communicator has collectives only, so every
// rank takes part in every exchange (ranks other than r just pass the broadcasts through).
// Ranks that share rank 0's kernel clock (the same boot id and time namespace: processes on one
// host) have offset 0 exactly, as CLOCK_MONOTONIC is one clock there; the exchange is kept for the
// others, where a loaded host's scheduling would otherwise show up as a fake offset of up to half a
// round trip (milliseconds on an oversubscribed machine). measure_shared = true measures them too.
// Collective: all ranks call it at the same point of their collective sequence.
#pragma once

#include <cstdint>
#include <vector>

#include "parallel/comm/communicator.h"

namespace tt::parallel {

struct ClockOffset {
  int64_t offset_ns = 0;      // this rank's steady clock minus rank 0's
  int64_t rtt_ns = 0;         // round trip of the exchange it came from (0 for rank 0 and shared clocks)
  bool shared_clock = false;  // the rank reads rank 0's clock (offset 0, not measured)
};

// Per rank, on rank 0 (entry 0 is zero); the other ranks receive a vector of zeros. `exchanges`
// per measured rank, after one warm-up exchange.
std::vector<ClockOffset> measure_clock_offsets(Communicator& comm, int exchanges = 48, bool measure_shared = false);

// An identifier of the clock trace::now_ns() reads: equal on two processes when they share it (a
// hash of the kernel's boot id and the time namespace); 0 when unknown (never equal to another).
int64_t clock_identity();

}  // namespace tt::parallel
