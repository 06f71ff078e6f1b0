// Loading, overriding, defaulting and validating the run configuration (core/config.proto).
// A config is a text-format tt.config.Config file plus `--set a.b=c` overrides applied in order;
// the pipeline is parse -> overrides -> fill_defaults -> validate, and every user mistake becomes
// one tt::Error(ErrorKind::kConfig) that names the file (with line and column where the text is at
// fault), the dotted field and a hint. Validation collects every problem before throwing, so a
// config is fixed in one go. All functions are pure apart from load_config's file read and are
// safe to call from any thread on distinct Config objects.
#pragma once

#include <string>
#include <vector>

#include "core/config.pb.h"
#include "core/error.h"

namespace tt {

// The largest model sizes topotrain accepts, from a config and from imported weights alike: far above
// any published model (Llama 3 405B: 126 blocks, n_embd 16384, MLP 53248, vocabulary 128256), and
// small enough that every size derived from them fits int64 arithmetic.
namespace model_limits {
constexpr long long kLayers = 1 << 20;
constexpr long long kWidth = 1 << 17;  // n_embd, heads, head_dim, n_head × head_dim
constexpr long long kMlpHidden = 4 * kWidth;
constexpr long long kVocab = 1 << 24;
constexpr long long kSeqLen = 1 << 22;
}  // namespace model_limits

// Reads `path` (text-format tt.config.Config), then behaves as parse_config_text with `path` as
// the origin. A missing or unreadable file is a kConfig error naming the path.
config::Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});

// Parses `text`, applies `overrides` ("a.b=c", in order), fills defaults for unset fields and
// validates. `origin` names the text in messages (normally the file name); parse errors are
// reported as "origin:LINE:COL", validation problems as "origin:LINE" of the offending field (or
// the `--set` that last assigned it).
config::Config parse_config_text(const std::string& text, const std::string& origin,
                                 const std::vector<std::string>& overrides = {});

// Applies one assignment "train.steps=100": a dotted path of field names through nested messages,
// then a value in text-format syntax for the field's type (strings may be left unquoted). Throws a
// kConfig error naming the assignment (prefixed by `origin` when non-empty) for a malformed
// assignment, an unknown field (with a did-you-mean hint) or a value of the wrong type; `cfg` is
// unchanged on error.
void apply_override(config::Config& cfg, const std::string& assignment, const std::string& origin);

// Sets every unset field that has a non-zero default (see config.proto). Fields set explicitly,
// even to 0, are kept. Idempotent.
void fill_defaults(config::Config& cfg);

// Checks ranges and cross-field constraints of a defaulted config; throws one kConfig error listing
// all problems (one per line), each naming the dotted field. `origin` names the config in messages.
void validate_config(const config::Config& cfg, const std::string& origin);

// The fields whose values differ between two configs, as "dotted.field: before -> after" in field
// order (a field set in one and left unset in the other counts as a change).
std::vector<std::string> config_changes(const config::Config& before, const config::Config& after);

// Text format of `cfg` (one field per line, nested blocks indented), for logs and checkpoints;
// parse_config_text(config_to_text(c), ...) reproduces c.
std::string config_to_text(const config::Config& cfg);

}  // namespace tt
