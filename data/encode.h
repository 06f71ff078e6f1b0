// Text -> llm.c token shards (`topotrain data encode`): the corpus pipeline in front of the loader.
// Inputs are files or directories (searched recursively for *.txt and *.jsonl, in sorted path
// order). A plain-text file is one document, or several when split by a separator; a JSONL file is
// one document per line, taken from its "text" field. Every document is preceded by the
// end-of-text token, as llm.c's data scripts do, and the token stream is cut into shards named like
// llm.c's: <name>_val_000000.bin holds the first val_tokens tokens, <name>_train_000001.bin ... the
// rest, shard_tokens per shard, documents running across shard boundaries. manifest.json beside
// them records the tokenizer, counts and every shard's SHA-256.
//
// Design: the main thread reads inputs and cuts them into work units (groups of documents, or
// pieces of one long document) whose boundaries depend only on the input, never on the thread
// count; worker threads tokenize units in any order, and the main thread consumes results strictly
// in unit order. So the shards are byte-identical for every --threads. A long document is cut only
// where its tokenizer guarantees that encoding the pieces separately equals encoding the whole
// (TextEncoder::chunkable), so chunking changes throughput, never tokens. Shards are written
// atomically (data::write_shard); if encoding fails, the shards this run wrote are removed and no
// manifest is written, so a failed run leaves no partial data set under the final names.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "data/shard.h"

namespace tt::data {

class BpeTokenizer;

// The tokenizer as the encoder sees it.
struct TextEncoder {
  // Appends the ids of `text` (no special tokens). Called from several threads at once: must be
  // thread-safe.
  std::function<void(std::string_view text, std::vector<uint32_t>& out)> encode;
  int64_t vocab_size = 0;  // one past the largest id; <= 65536 -> uint16 shards, else uint32
  uint32_t eot_id = 0;     // inserted before every document
  std::string origin;      // recorded in the manifest (tokenizer path)
  // True when encode(a + b) == encode(a) ++ encode(b) whenever a ends in "X\n" and b starts with
  // "Y", X and Y printable ASCII other than space. Holds for GPT-2 pre-tokenization, which always
  // ends a piece at such a newline; lets the encoder split long documents across threads.
  bool chunkable = false;
};

// The encoder of a GPT-2 style byte-level BPE tokenizer (chunkable). The tokenizer's state is
// shared, so the TextEncoder may outlive `tokenizer`.
TextEncoder text_encoder(const BpeTokenizer& tokenizer);

// How a plain-text file is divided into documents.
struct DocumentSplit {
  enum class Kind { kWholeFile, kBlankLines, kLiteral };
  Kind kind = Kind::kWholeFile;
  std::string literal;  // kLiteral: the separator bytes
};

// "" -> whole file; "blankline" (or "blank-line", "\n\n+") -> runs of one or more empty or
// whitespace-only lines; anything else -> that literal string with the escapes \n \r \t \\ decoded.
// Throws tt::Error(kUsage) for an unknown escape or a separator that decodes to nothing.
DocumentSplit parse_separator(const std::string& spec);

// The documents of `text` under `split`, in order, as views into `text`. Empty documents (and, for
// kBlankLines, the blank lines themselves) are dropped; document text is otherwise unchanged.
std::vector<std::string_view> split_documents(std::string_view text, const DocumentSplit& split);

// Cuts one document into pieces of at least `target_bytes` (the last may be shorter) at safe
// points: right after a '\n' whose neighbours are printable ASCII other than space (see
// TextEncoder::chunkable). A document without such points stays whole.
std::vector<std::string_view> chunk_document(std::string_view doc, size_t target_bytes);

// Input files of `inputs` (files or directories) in processing order: each file as given; each
// directory's *.txt and *.jsonl files, recursively, sorted by path. Throws tt::Error(kData,
// where=input) for a missing input or a directory without such files.
std::vector<std::string> collect_input_files(const std::vector<std::string>& inputs);

struct EncodeProgress {
  uint64_t bytes_done = 0, bytes_total = 0;  // input bytes consumed / to consume
  int64_t documents = 0, tokens = 0;
  int shards = 0;
  double elapsed_s = 0.0;
  bool done = false;  // the final report
};

struct EncodeOptions {
  std::vector<std::string> inputs;     // files and/or directories
  std::string out_dir;                 // created if missing; must not hold a data set already
  std::string name;                    // shard name prefix; "" -> the last component of out_dir
  int64_t shard_tokens = 100'000'000;  // tokens per shard (llm.c's default), 1 .. INT32_MAX
  int64_t val_tokens = 0;              // the first val_tokens tokens form the val split
  int threads = 0;                     // tokenizing threads; 0 -> hardware concurrency
  DocumentSplit split;                 // plain-text documents
  size_t unit_bytes = 256 * 1024;      // target text bytes per work unit (and per chunk)
  // Called on the calling thread about every progress_interval_s and once at the end (done=true).
  std::function<void(const EncodeProgress&)> on_progress;
  double progress_interval_s = 0.25;
};

struct EncodedShard {
  std::string file;   // name inside out_dir
  std::string split;  // "val" or "train"
  int64_t tokens = 0;
  uint64_t bytes = 0;
  std::string sha256;  // of the whole file, lowercase hex
};

struct EncodeResult {
  std::string name;                // shard name prefix used
  std::vector<std::string> files;  // inputs read, in order
  uint64_t input_bytes = 0;
  int64_t documents = 0;
  int64_t tokens = 0, val_tokens = 0, train_tokens = 0;
  TokenWidth width = TokenWidth::kUint16;
  std::vector<EncodedShard> shards;
  std::string manifest_path;
  double seconds = 0.0;
  int threads = 1;
};

constexpr const char* kEncodeManifestName = "manifest.json";
constexpr const char* kEncodeManifestFormat = "topotrain-shards-v1";

// Runs the pipeline. Throws tt::Error(kConfig) for bad options or an out_dir that already holds a
// data set of this name (or a manifest.json); tt::Error(kData, where=file or file:line, hint) for a
// missing/unreadable input, a JSONL line that is not a JSON object with a string "text" field, an
// id >= vocab_size from the tokenizer, or inputs without any document; kRuntime on write failure.
// On any error the shards written by this call are removed.
EncodeResult encode_corpus(const EncodeOptions& options, const TextEncoder& encoder);

// What manifest.json says (the subset `data inspect` verifies against).
struct EncodeManifest {
  std::string name, tokenizer, token_dtype;
  int64_t vocab_size = 0;
  int64_t eot_id = 0;
  int64_t documents = 0, tokens = 0, val_tokens = 0, train_tokens = 0;
  std::vector<EncodedShard> shards;
};

// Reads manifest.json. Throws tt::Error(kData, where=path) when missing, malformed or incomplete.
EncodeManifest read_encode_manifest(const std::string& path);
// SHA-256 (hex) of a file's bytes. Throws tt::Error(kData, where=path) when it cannot be read.
std::string file_sha256(const std::string& path);

}  // namespace tt::data
