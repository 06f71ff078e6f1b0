// In-process runner for `topotrain data ...` (launch/data_command.h) shared by the data/ CLI tests:
// calls data_main with stdout captured, so a test sees the return code, the printed report and the
// tt::Error a bad command line throws, without starting the binary.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "launch/data_command.h"

namespace tt::test {

struct DataCommandRun {
  int rc = -1;
  std::string out;  // captured stdout
};

// Runs data_main(args); an exception propagates (after stdout capture is stopped).
inline DataCommandRun run_data(const std::vector<std::string>& args) {
  testing::internal::CaptureStdout();
  DataCommandRun r;
  try {
    r.rc = data_main(args);
  } catch (...) {
    testing::internal::GetCapturedStdout();
    throw;
  }
  r.out = testing::internal::GetCapturedStdout();
  return r;
}

// The kind of the tt::Error that data_main(args) throws; a test failure (and kInternal) when none.
inline ErrorKind data_error_kind(const std::vector<std::string>& args) {
  try {
    run_data(args);
  } catch (const Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << "expected an error";
  return ErrorKind::kInternal;
}

}  // namespace tt::test
