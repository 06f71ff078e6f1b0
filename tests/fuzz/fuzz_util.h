// What every fuzz target shares: a per-process scratch directory for the APIs that take a path, and
// the rule that separates a finding from a rejection. Bad input is expected to end in a tt::Error;
// any other exception escaping a parser is a finding, so it aborts with its type and message (an
// uncaught exception would also abort, but without saying which one it was).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "core/error.h"

namespace tt::fuzz {

// A directory private to this process, created on first use (under TMPDIR, else /dev/shm when it
// exists, else /tmp), removed at exit. One path per file name is reused for every input.
const std::string& scratch_dir();

// Writes `bytes` to scratch_dir()/name (replacing it) and returns the path.
std::string write_scratch_file(const std::string& name, std::string_view bytes);

// Removes everything inside `dir` (not `dir` itself).
void clear_dir(const std::string& dir);

// The repository root the target was built from (fixtures, the fuzz vocabulary).
std::string source_dir();

// Quiets the project's logging (warnings about rejected input would flood the fuzzer's output).
void quiet_logs();

// Runs `parse`; a tt::Error is the expected rejection, anything else thrown is a finding, and so is
// a kInternal one (a TT_ASSERT that outside bytes can trip is a missing check).
template <typename F>
void expect_only_tt_errors(F&& parse) {
  try {
    parse();
  } catch (const tt::Error& e) {
    if (e.kind() == tt::ErrorKind::kInternal) {
      std::fprintf(stderr, "FINDING: internal error (broken invariant) on outside input: %s (%s)\n", e.what(),
                   e.where().c_str());
      std::abort();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FINDING: %s escaped (not tt::Error): %s\n", typeid(e).name(), e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "FINDING: a non-std exception escaped\n");
    std::abort();
  }
}

// One file of a Hugging Face model directory as the input (core/model/hf_checkpoint.h): the first call
// copies `kept` (file names) from the committed model `fixture` (tests/fixtures/models/<fixture>) into
// scratch_dir()/<fixture>; each call writes `input` there as `input_name`, opens the model and reads
// its first `max_values` parameter values, with expect_only_tt_errors.
void fuzz_hf_model_file(const std::string& fixture, const std::vector<std::string>& kept, const std::string& input_name,
                        std::string_view input, int64_t max_values);

// Cuts `data` at every occurrence of `sep` (so N separators give N + 1 parts).
std::vector<std::string_view> split_input(const uint8_t* data, size_t size, std::string_view sep);

}  // namespace tt::fuzz
