// Every rank's text (a serialized trace, a report line) collected onto every rank, in rank order.
//
// Design: two all-reduces of u32 words, the one collective that takes host memory on every backend:
// first each rank's byte count (each rank fills its own slot), then the texts, each rank writing
// its own words into a zeroed buffer of everyone's, so the sum is the concatenation. Meant for
// small payloads (a few MB of trace at most): every rank holds all of them. Collective.
#pragma once

#include <string>
#include <vector>

#include "parallel/comm/communicator.h"

namespace tt::parallel {

std::vector<std::string> gather_texts(Communicator& comm, const std::string& mine);

}  // namespace tt::parallel
