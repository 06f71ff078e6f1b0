// Files read through mmap (token shards, safetensors and llm.c weights) turn a change on disk into
// SIGBUS: a shard truncated or rewritten in place while training reads it kills the process with
// no word about which file. A guarded mapping makes that a clear error naming the file, with the
// exit code of its ErrorKind (3 for data, 4 for checkpoints and weights).
// Design: a fixed table of guarded ranges that a SIGBUS handler (installed with the first guard)
// searches with async-signal-safe code only; a fault outside every range re-raises the signal with
// the default action, so other crashes stay crashes.
#pragma once

#include <cstddef>
#include <string>

#include "core/error.h"

namespace tt {

// Guards [begin, begin + bytes) until unguard_mapping(begin). `path` names the file in the message;
// `what` says what it is ("token shard"). At most 4096 mappings are guarded at once (more are
// simply not guarded).
void guard_mapping(const void* begin, size_t bytes, const std::string& path, const char* what, ErrorKind kind);
void unguard_mapping(const void* begin);

}  // namespace tt
