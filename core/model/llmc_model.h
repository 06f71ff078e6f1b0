// llm.c model files (gpt2_124M.bin and what llm.c's trainers write): a 256 × int32 header (magic
// 20240326, version 3 for fp32 or 5 for bf16, then maxT, V, L, NH, C, Vp) and the GPT-2 parameters
// grouped by kind across the layers: wte [Vp, C], wpe [maxT, C], then ln1w, ln1b, qkvw, qkvb,
// attprojw, attprojb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb each [L, ...], then lnfw, lnfb.
//
// Design: llm.c's tensors have topotrain's shapes ([out, in] weights, the same 128-multiple vocabulary
// padding), only the order differs: reading and writing map each per-block tensor to its slice of
// llm.c's per-kind array, so a file converts range by range without a second copy of the model.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/model/weights.h"

namespace tt {

constexpr int32_t kLlmcModelMagic = 20240326;

// Whether an llm.c model file can hold the description (GPT-2's structure only).
bool llmc_holds(const ModelDesc& d);

// True when the file starts with the llm.c model magic.
bool is_llmc_model_file(const std::string& path);

// Reads an llm.c model file. Throws kCheckpoint naming the file for a bad header, an unknown version
// or a file shorter than its header promises.
std::unique_ptr<WeightSource> open_llmc_model(const std::string& path);

// Writes a GPT-2-structured model as an llm.c model file, fp32 (version 3) or bf16 (version 5).
// params(begin, count, out) gives elements of the flat fp32 parameter buffer. Throws kConfig for a
// description llm.c cannot hold (anything but GPT-2's structure).
void write_llmc_model(const std::string& path, const ModelDesc& d,
                      const std::function<void(int64_t begin, int64_t count, float* out)>& params, DType dtype);

}  // namespace tt
