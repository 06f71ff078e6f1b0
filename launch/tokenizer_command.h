// `topotrain data tokenize|detokenize`: the GPT-2 BPE tokenizer on stdin/stdout, for scripts and
// for checking ids against other implementations (tiktoken, Hugging Face).
//   topotrain data tokenize --tokenizer DIR     < text      > [15496, 995]
//   topotrain data detokenize --tokenizer DIR   < [ids]     > text
//   topotrain bench tokenizer --tokenizer DIR --input FILE [--threads N] [--repeat N]
// Design: stdin is read whole and treated as bytes (invalid UTF-8 included); output is exactly one
// JSON array, or exactly the decoded bytes, so the two commands round-trip any input.
#pragma once

#include "launch/commands.h"

namespace tt {

// `args` are the words after the subcommand name. Return 0; throw tt::Error(kUsage) for bad
// arguments and tt::Error(kData) for a bad tokenizer, malformed JSON input or an unknown id.
int data_tokenize_main(const Args& args);
int data_detokenize_main(const Args& args);

// `topotrain bench tokenizer --tokenizer DIR --input FILE [--threads N] [--repeat N]`
// (launch/bench_tokenizer.cpp): encode throughput, printed as a table.
int bench_tokenizer(const Args& args);

}  // namespace tt
