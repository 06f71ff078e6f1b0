// `topotrain data tokenize|detokenize` (see tokenizer_command.h): stdin -> ids as a JSON array,
// and a JSON array of ids -> the exact bytes.
#include "launch/tokenizer_command.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/bpe_tokenizer.h"
#include "launch/args.h"

namespace tt {

namespace {

std::string read_stdin() {
  std::string text;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), stdin)) > 0) text.append(buf, n);
  if (std::ferror(stdin)) throw Error(ErrorKind::kRuntime, "cannot read standard input", "stdin");
  return text;
}

void write_stdout(const std::string& s) {
  if (std::fwrite(s.data(), 1, s.size(), stdout) != s.size() || std::fflush(stdout) != 0)
    throw Error(ErrorKind::kRuntime, "cannot write standard output", "stdout");
}

}  // namespace

int data_tokenize_main(const Args& args) {
  ArgParser p("topotrain data tokenize",
              "Reads text (any bytes) from stdin and prints its GPT-2 BPE token ids as one JSON array,\n"
              "e.g. [15496, 995] for \"Hello world\". Special tokens such as <|endoftext|> in the text are\n"
              "encoded as plain text.");
  p.option("--tokenizer", "DIR", "encoder.json + vocab.bpe, or tokenizer.json (a directory or file)", "", true);
  if (!p.parse(args)) return 0;
  const data::BpeTokenizer tokenizer = data::BpeTokenizer::load(p.get("--tokenizer"));
  const std::vector<uint32_t> ids = tokenizer.encode(read_stdin());
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(ids[i]);
  }
  out += "]\n";
  write_stdout(out);
  return 0;
}

int data_detokenize_main(const Args& args) {
  ArgParser p("topotrain data detokenize",
              "Reads a JSON array of token ids from stdin and writes the exact bytes they decode to.");
  p.option("--tokenizer", "DIR", "encoder.json + vocab.bpe, or tokenizer.json (a directory or file)", "", true);
  if (!p.parse(args)) return 0;
  const data::BpeTokenizer tokenizer = data::BpeTokenizer::load(p.get("--tokenizer"));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_stdin());
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kData, str("input is not JSON: ", e.what()), "stdin", "expected an array like [15496, 995]");
  }
  if (!j.is_array()) throw Error(ErrorKind::kData, "input is not a JSON array", "stdin", "expected e.g. [15496, 995]");
  std::vector<uint32_t> ids;
  ids.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& v = j[i];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > int64_t(UINT32_MAX))
      throw Error(ErrorKind::kData, str("element ", i, " is ", v.dump(), ", not a token id"), "stdin",
                  "ids are non-negative integers");
    ids.push_back(static_cast<uint32_t>(v.get<int64_t>()));
  }
  write_stdout(tokenizer.decode(ids));
  return 0;
}

}  // namespace tt
