// Host models from weight sources (see model_loading.h).
#include "launch/model_loading.h"

#include <algorithm>

#include "core/checkpoint_io.h"
#include "core/fs.h"
#include "core/logging.h"
#include "data/bpe_tokenizer.h"

namespace tt {

std::unique_ptr<Model> load_host_model(WeightSource& source, int max_batch, int max_seq) {
  ModelOptions mo;
  mo.max_batch = max_batch;
  mo.max_seq = max_seq;
  mo.hold_grads = false;
  auto model = std::make_unique<Model>(source.desc(), mo);
  source.read(0, model->num_params(), model->params().data<float>());
  return model;
}

TextCodec codec_of(const WeightSource& source) {
  if (source.format() == WeightFormat::kCheckpoint) {  // a checkpoint carries its codec
    CheckpointReader r(source.path(), [](const std::string& name) { return name == "tokenizer"; });
    return TextCodec::parse(r.string("tokenizer"));
  }
  if (!source.tokenizer_path().empty()) {
    try {
      return TextCodec::bpe(data::BpeTokenizer::load(source.tokenizer_path()));
    } catch (const Error& e) {
      log_warn("the tokenizer beside the weights is not one topotrain reads (", e.what(), "); printing ids");
    }
  }
  return TextCodec::none();
}

}  // namespace tt
