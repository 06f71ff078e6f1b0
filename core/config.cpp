// Config loading: text-format parsing with errors rewritten for people, `--set` overrides through
// protobuf reflection, defaults, and validation that reports every problem at once.
// Protobuf's own parse messages ("Message type ... has no field named ...") are matched and
// rewritten with the dotted field, a line:column and a hint; the dotted path at an error is
// recovered by re-tokenizing the text up to the error position. Validation messages point at the
// line that set the field (from a ParseInfoTree) or at the `--set` that last assigned it.
#include "core/config.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "core/did_you_mean.h"
#include "core/step_range.h"

namespace tt {

namespace {

namespace pb = google::protobuf;
using FieldLocations = std::map<std::string, std::string>;  // "train.steps" -> "a.pbtxt:7" / "--set ..."

constexpr const char* kDefaultArch = "gpt2";
constexpr const char* kDefaultRunDir = "runs/default";

// The largest micro-batch (see Checker::at_most; the model's bounds are model_limits in config.h).
constexpr long long kMaxBatch = 1 << 16;

// ---- names and suggestions ---------------------------------------------------------------------

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// Protobuf messages start upper-case and end with '.'; ours continue a sentence.
std::string as_clause(std::string m) {
  if (!m.empty() && m.back() == '.') m.pop_back();
  if (!m.empty()) m[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(m[0])));
  return m;
}

// The field of `msg` nearest to `name` when it is plausibly a typo, else "".
std::string closest_field(const pb::Descriptor* msg, const std::string& name) {
  std::vector<std::string> fields;
  for (int i = 0; i < msg->field_count(); ++i) fields.push_back(msg->field(i)->name());
  return closest_name(name, fields);
}

// "optimizer.lr" when a block of Config other than `msg` has a field named `name`, else "".
std::string field_in_other_block(const pb::Descriptor* msg, const std::string& name) {
  const pb::Descriptor* root = config::Config::descriptor();
  for (int i = 0; i < root->field_count(); ++i) {
    const pb::FieldDescriptor* block = root->field(i);
    if (block->message_type() && block->message_type() != msg && block->message_type()->FindFieldByName(name))
      return block->name() + "." + name;
  }
  return "";
}

std::string field_list(const pb::Descriptor* msg) {
  std::string s;
  for (int i = 0; i < msg->field_count(); ++i) s += (i ? ", " : "") + msg->field(i)->name();
  return s;
}

// Hint for `name` not being a field of `msg`; `prefix` is the dotted path of `msg` ("" = top).
std::string unknown_field_hint(const pb::Descriptor* msg, const std::string& name, const std::string& prefix) {
  if (std::string near = closest_field(msg, name); !near.empty()) return "did you mean '" + near + "'?";
  if (std::string other = field_in_other_block(msg, name); !other.empty()) {
    return prefix.empty() ? "did you mean '" + other + "'? '" + name + "' belongs in the " +
                                other.substr(0, other.find('.')) + " { } block"
                          : "did you mean '" + other + "'? '" + name + "' belongs in the " +
                                other.substr(0, other.find('.')) + " { } block, not in " + prefix;
  }
  return "the fields of " + (prefix.empty() ? std::string("the config") : prefix) + " are: " + field_list(msg);
}

// ---- field types ------------------------------------------------------------------------------

std::string describe_type(const pb::FieldDescriptor* f) {
  switch (f->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT32:
    case pb::FieldDescriptor::CPPTYPE_INT64:
      return str("a whole number (", f->type_name(), ")");
    case pb::FieldDescriptor::CPPTYPE_UINT32:
    case pb::FieldDescriptor::CPPTYPE_UINT64:
      return str("a whole number >= 0 (", f->type_name(), ")");
    case pb::FieldDescriptor::CPPTYPE_FLOAT:
    case pb::FieldDescriptor::CPPTYPE_DOUBLE:
      return str("a number (", f->type_name(), ")");
    case pb::FieldDescriptor::CPPTYPE_BOOL:
      return "true or false";
    case pb::FieldDescriptor::CPPTYPE_STRING:
      return "a string";
    case pb::FieldDescriptor::CPPTYPE_MESSAGE:
      return "a block";
    case pb::FieldDescriptor::CPPTYPE_ENUM:
      return "an enum value";
  }
  return f->type_name();
}

std::string example_value(const pb::FieldDescriptor* f, bool quoted_strings) {
  switch (f->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_FLOAT:
    case pb::FieldDescriptor::CPPTYPE_DOUBLE:
      return "0.5";
    case pb::FieldDescriptor::CPPTYPE_BOOL:
      return "true";
    case pb::FieldDescriptor::CPPTYPE_STRING:
      return quoted_strings ? "\"text\"" : "text";
    default:
      return "12";
  }
}

std::string type_range(const pb::FieldDescriptor* f) {
  switch (f->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT32:
      return "-2147483648 to 2147483647";
    case pb::FieldDescriptor::CPPTYPE_UINT32:
      return "0 to 4294967295";
    case pb::FieldDescriptor::CPPTYPE_INT64:
      return "-9223372036854775808 to 9223372036854775807";
    case pb::FieldDescriptor::CPPTYPE_UINT64:
      return "0 to 18446744073709551615";
    default:
      return describe_type(f);
  }
}

// ---- parse errors -----------------------------------------------------------------------------

class FirstErrorCollector : public pb::io::ErrorCollector {
 public:
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (has_error) return;
    has_error = true;
    this->line = line;
    this->column = column;
    this->message = message;
  }
  void AddWarning(int, pb::io::ColumnNumber, const std::string&) override {}
  void reset() {
    has_error = false;
    line = column = -1;
    message.clear();
  }

  bool has_error = false;
  int line = -1, column = -1;  // zero-based
  std::string message;
};

// What the text says just before (line, column): the enclosing blocks and the last field name.
struct TextContext {
  std::vector<std::string> blocks;  // {"model"} inside `model { ... }`
  std::string field;                // last field name seen, "" if none
  int field_line = -1, field_column = -1;
  int last_line = -1, last_column = -1;  // the last token before the position
};

TextContext context_at(const std::string& text, int line, int column) {
  TextContext ctx;
  pb::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  FirstErrorCollector ignored;
  pb::io::Tokenizer tokenizer(&input, &ignored);
  tokenizer.set_comment_style(pb::io::Tokenizer::SH_COMMENT_STYLE);
  tokenizer.set_require_space_after_number(false);
  tokenizer.set_allow_multiline_strings(true);
  bool after_colon = false;
  while (tokenizer.Next()) {
    const pb::io::Tokenizer::Token& t = tokenizer.current();
    if (t.line > line || (t.line == line && t.column >= column)) break;
    if (t.type == pb::io::Tokenizer::TYPE_IDENTIFIER && !after_colon) {
      ctx.field = t.text;
      ctx.field_line = t.line;
      ctx.field_column = t.column;
    } else if (t.type == pb::io::Tokenizer::TYPE_SYMBOL && (t.text == "{" || t.text == "<")) {
      ctx.blocks.push_back(ctx.field);
      ctx.field.clear();
    } else if (t.type == pb::io::Tokenizer::TYPE_SYMBOL && (t.text == "}" || t.text == ">")) {
      if (!ctx.blocks.empty()) {
        ctx.field = ctx.blocks.back();
        ctx.blocks.pop_back();
      }
    }
    after_colon = t.type == pb::io::Tokenizer::TYPE_SYMBOL && t.text == ":";
    ctx.last_line = t.line;
    ctx.last_column = t.column;
  }
  return ctx;
}

std::string join_dotted(const std::vector<std::string>& blocks, const std::string& last) {
  std::string s;
  for (const std::string& b : blocks) s += b + ".";
  return s + last;
}

std::string block_path(const std::vector<std::string>& blocks) {  // {"model"} -> "model", {} -> ""
  std::string s = join_dotted(blocks, "");
  if (!s.empty()) s.pop_back();
  return s;
}

// The descriptor of field `name` inside `blocks`, or nullptr when the path does not resolve.
const pb::FieldDescriptor* resolve_field(const std::vector<std::string>& blocks, const std::string& name) {
  const pb::Descriptor* msg = config::Config::descriptor();
  for (const std::string& b : blocks) {
    const pb::FieldDescriptor* f = msg->FindFieldByName(b);
    if (!f || !f->message_type()) return nullptr;
    msg = f->message_type();
  }
  return msg->FindFieldByName(name);
}

// One parse error as the user should read it: what, where (origin:line:column) and a hint.
struct ParseProblem {
  std::string what, where, hint;
};

ParseProblem describe_parse_error(const std::string& text, const std::string& origin, const FirstErrorCollector& e) {
  const TextContext ctx = context_at(text, e.line, e.column);
  int line = e.line, column = e.column;
  std::string what = as_clause(e.message);
  std::string hint = "the syntax is `block { field: value }`, with # comments; see examples/*.pbtxt";
  std::smatch m;

  static const std::regex kUnknown(R"re(Message type "([\w.]+)" has no field named "(\w+)"\.?)re");
  static const std::regex kDuplicate(R"re(Non-repeated field "(\w+)" is specified multiple times\.?)re");
  static const std::regex kExpected(R"re(Expected (integer|double|float|string|identifier), got: (.*))re");
  static const std::regex kBool(R"re(Invalid value for boolean field "(\w+)"\. Value: "(.*)"\.?)re");
  static const std::regex kRange(R"re(Integer out of range \((.*)\))re");
  static const std::regex kBrace(R"re(Expected "\{", found "(.*)"\.?)re");

  const std::string dotted = join_dotted(ctx.blocks, ctx.field);
  const pb::FieldDescriptor* field = ctx.field.empty() ? nullptr : resolve_field(ctx.blocks, ctx.field);
  std::string type_hint = hint;
  if (field) {
    type_hint = str(field->name(), " takes ", describe_type(field), ", e.g. `", field->name(), ": ",
                    example_value(field, true), "`");
  }

  if (std::regex_match(e.message, m, kUnknown)) {
    const std::string type = m[1], name = m[2];
    what = "unknown field '" + name + "' in " + type;
    if (const pb::Descriptor* msg = pb::DescriptorPool::generated_pool()->FindMessageTypeByName(type))
      hint = unknown_field_hint(msg, name, block_path(ctx.blocks));
    if (ctx.field == name) line = ctx.field_line, column = ctx.field_column;
  } else if (std::regex_match(e.message, m, kDuplicate)) {
    what = dotted + " is set more than once";
    hint = field && field->message_type()
               ? "merge the " + dotted + " { } blocks into one"
               : "keep one `" + std::string(m[1]) + ": ...` line; to change a value from the command line use --set " +
                     dotted + "=...";
    if (ctx.field == std::string(m[1])) line = ctx.field_line, column = ctx.field_column;
  } else if (std::regex_match(e.message, m, kExpected) && std::string(m[1]) == "identifier" && trim(m[2]).empty()) {
    what = ctx.blocks.empty() ? "unexpected end of the text"
                              : "unexpected end of the text inside " + block_path(ctx.blocks) + " { }";
    hint = "is a closing '}' missing?";
  } else if (std::regex_match(e.message, m, kExpected) && std::string(m[1]) == "identifier" && trim(m[2]) == "}") {
    what = "unexpected '}'";
    hint = "this '}' has no matching '{'";
  } else if (std::regex_match(e.message, m, kExpected) && std::string(m[1]) != "identifier" && field) {
    const std::string got = m[2];
    what = str("bad value for ", dotted, ": expected ", describe_type(field), ", got ", got);
    hint = type_hint;
    if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING && !got.empty() && got[0] != '"')
      hint = str("put text in double quotes: `", field->name(), ": \"", got, "\"`");
  } else if (std::regex_match(e.message, m, kBool) && field) {
    what = str("bad value for ", dotted, ": expected true or false, got \"", std::string(m[2]), "\"");
    hint = type_hint;
    if (ctx.last_line >= 0) line = ctx.last_line, column = ctx.last_column;  // reported after the value
  } else if (std::regex_match(e.message, m, kRange) && field) {
    what = str("value ", std::string(m[1]), " is out of range for ", dotted, " (", field->type_name(), ")");
    hint = str(field->name(), " holds ", type_range(field));
  } else if (std::regex_match(e.message, m, kBrace) && field && field->message_type()) {
    what = str(dotted, " is a block, not a value");
    hint = str("write ", field->name(), " { ", field->message_type()->field(0)->name(), ": ... }");
  } else if (field) {
    what = str(what, " (at ", dotted, ")");
  }
  return {what, str(origin, ":", line + 1, ":", column + 1), hint};
}

// Replaces line `line` (zero-based) of `text` by spaces, keeping every other line where it was.
// Returns false when the line opens or closes a block (blanking it would unbalance the braces and
// report errors that are not there) or does not exist.
bool blank_line(std::string& text, int line) {
  size_t begin = 0;
  for (int i = 0; i < line; ++i) {
    begin = text.find('\n', begin);
    if (begin == std::string::npos) return false;
    ++begin;
  }
  const size_t end = std::min(text.find('\n', begin), text.size());
  if (begin >= end) return false;
  const std::string_view content(text.data() + begin, end - begin);
  if (content.find_first_of("{}<>") != std::string_view::npos) return false;
  std::fill(text.begin() + std::ptrdiff_t(begin), text.begin() + std::ptrdiff_t(end), ' ');
  return true;
}

// Parses `text` into `cfg` and `tree`. When it does not parse, every line-level error is reported
// at once: the parser runs again with the offending line blanked, until the text parses, an error
// sits on a line that opens or closes a block, or kMaxErrors are found.
void parse_reporting_every_error(const std::string& text, const std::string& origin, config::Config& cfg,
                                 pb::TextFormat::ParseInfoTree& tree) {
  auto parse = [](const std::string& t, config::Config& into, pb::TextFormat::ParseInfoTree* locations,
                  FirstErrorCollector& errors) {
    pb::TextFormat::Parser parser;
    parser.RecordErrorsTo(&errors);
    parser.WriteLocationsTo(locations);
    return parser.ParseFromString(t, &into);
  };
  FirstErrorCollector errors;
  if (parse(text, cfg, &tree, errors)) return;
  constexpr size_t kMaxErrors = 20;
  std::vector<ParseProblem> problems;
  std::string rest = text;
  for (;;) {
    if (!errors.has_error) {
      problems.push_back({"cannot parse the config", origin, "see examples/*.pbtxt"});
      break;
    }
    problems.push_back(describe_parse_error(rest, origin, errors));
    if (problems.size() == kMaxErrors || !blank_line(rest, errors.line)) break;
    config::Config scratch;
    pb::TextFormat::ParseInfoTree scratch_tree;
    errors.reset();
    if (parse(rest, scratch, &scratch_tree, errors)) break;
  }
  if (problems.size() == 1) throw Error(ErrorKind::kConfig, problems[0].what, problems[0].where, problems[0].hint);
  std::string what = str(problems.size(), " problems in the config:");
  for (const ParseProblem& p : problems) what += "\n  " + p.where + ": " + p.what + " (hint: " + p.hint + ")";
  throw Error(ErrorKind::kConfig, what, origin, "");
}

// ---- field locations --------------------------------------------------------------------------

void collect_locations(const pb::Message& msg, const pb::TextFormat::ParseInfoTree& tree, const std::string& prefix,
                       const std::string& origin, FieldLocations* out) {
  const pb::Descriptor* d = msg.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor* f = d->field(i);
    if (f->is_repeated()) continue;  // none exist; locations would need an index
    pb::TextFormat::ParseLocation loc = tree.GetLocation(f, -1);
    if (loc.line < 0) continue;
    const std::string name = prefix + f->name();
    (*out)[name] = str(origin, ":", loc.line + 1);
    if (f->message_type()) {
      if (const pb::TextFormat::ParseInfoTree* nested = tree.GetTreeForNested(f, -1))
        collect_locations(msg.GetReflection()->GetMessage(msg, f), *nested, name + ".", origin, out);
    }
  }
}

// ---- overrides --------------------------------------------------------------------------------

// Applies `assignment` and returns the dotted path it assigned.
std::string apply_override_impl(config::Config& cfg, const std::string& assignment, const std::string& origin) {
  const std::string where = (origin.empty() ? "" : origin + ": ") + "--set " + assignment;
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos)
    throw Error(ErrorKind::kConfig, "malformed assignment: expected FIELD=VALUE", where,
                "write e.g. --set train.steps=100");
  const std::string key = trim(assignment.substr(0, eq));
  const std::string value = trim(assignment.substr(eq + 1));
  if (key.empty())
    throw Error(ErrorKind::kConfig, "malformed assignment: no field name before '='", where,
                "write e.g. --set train.steps=100");
  std::vector<std::string> parts;
  for (size_t b = 0;;) {
    size_t dot = key.find('.', b);
    parts.push_back(trim(key.substr(b, dot == std::string::npos ? std::string::npos : dot - b)));
    if (parts.back().empty())
      throw Error(ErrorKind::kConfig, "malformed field path '" + key + "'", where,
                  "field names are joined by single dots, e.g. --set optimizer.lr=3e-4");
    if (dot == std::string::npos) break;
    b = dot + 1;
  }

  config::Config work = cfg;  // cfg stays untouched when the assignment fails
  pb::Message* msg = &work;
  std::string dotted;
  for (size_t i = 0; i < parts.size(); ++i) {
    const pb::Descriptor* d = msg->GetDescriptor();
    const pb::FieldDescriptor* f = d->FindFieldByName(parts[i]);
    if (!f) {
      throw Error(
          ErrorKind::kConfig,
          "unknown field '" + parts[i] + "' " + (dotted.empty() ? "at the top level of the config" : "in " + dotted),
          where, unknown_field_hint(d, parts[i], dotted));
    }
    dotted += (dotted.empty() ? "" : ".") + f->name();
    if (i + 1 < parts.size()) {
      if (!f->message_type())
        throw Error(ErrorKind::kConfig,
                    str(dotted, " is ", describe_type(f), ", not a block; it has no field '", parts[i + 1], "'"), where,
                    str("set it directly: --set ", dotted, "=", example_value(f, false)));
      msg = msg->GetReflection()->MutableMessage(msg, f);
      continue;
    }
    if (f->message_type())
      throw Error(ErrorKind::kConfig, dotted + " is a block, not a value", where,
                  str("set one of its fields, e.g. --set ", dotted, ".", f->message_type()->field(0)->name(), "=..."));
    if (f->is_repeated())
      throw Error(ErrorKind::kConfig, dotted + " is a list and cannot be set with --set", where,
                  "edit the config file instead");
    if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING &&
        (value.empty() || (value[0] != '"' && value[0] != '\''))) {
      msg->GetReflection()->SetString(msg, f, value);  // unquoted strings are taken verbatim
    } else {
      pb::TextFormat::Parser parser;
      FirstErrorCollector errors;
      parser.RecordErrorsTo(&errors);
      if (!parser.ParseFieldValueFromString(value, f, msg)) {
        throw Error(
            ErrorKind::kConfig,
            str("bad value '", value, "' for ", dotted, ": expected ", describe_type(f),
                errors.has_error && errors.message.rfind("Expected ", 0) != 0 ? " (" + as_clause(errors.message) + ")"
                                                                              : ""),
            where, str("e.g. --set ", dotted, "=", example_value(f, false)));
      }
    }
  }
  cfg = std::move(work);
  return dotted;
}

// ---- validation -------------------------------------------------------------------------------

struct Problem {
  std::string field;  // dotted; its location heads the message
  std::string what;   // starts with the dotted field
  std::string hint;
};

class Checker {
 public:
  explicit Checker(const FieldLocations* locations) : locations_(locations) {}

  void add(const std::string& field, std::string what, std::string hint) {
    problems_.push_back({field, std::move(what), std::move(hint)});
  }
  bool is_explicit(const std::string& field) const { return !locations_ || locations_->count(field); }

  // value > 0; a zero that was never written reads "is not set".
  template <typename T>
  void positive(const std::string& field, T value, const std::string& hint) {
    if (value > 0) return;
    if (value == 0 && !is_explicit(field))
      add(field, field + " is not set (must be > 0)", hint);
    else
      add(field, str(field, " must be > 0 (got ", value, ")"), hint);
  }
  void non_negative(const std::string& field, long long value, const std::string& hint) {
    if (value < 0) add(field, str(field, " must be >= 0 (got ", value, ")"), hint);
  }
  // value <= limit: the sizes of tensors are products of these fields, so each is bounded far
  // above any real model and every product stays exact in 64 bits.
  void at_most(const std::string& field, long long value, long long limit, const std::string& what_it_is) {
    if (value > limit)
      add(field, str(field, " (", value, ") is over the largest supported value, ", limit),
          str(what_it_is, "; a value this large is most likely a typo"));
  }
  // lo <= value (< or <=) hi, finite.
  void in_range(const std::string& field, float value, float lo, float hi, bool hi_inclusive, const std::string& hint) {
    bool ok = std::isfinite(value) && value >= lo && (hi_inclusive ? value <= hi : value < hi);
    if (!ok)
      add(field, str(field, " must be in [", lo, ", ", hi, hi_inclusive ? "]" : ")", " (got ", value, ")"), hint);
  }
  void positive_finite(const std::string& field, float value, const std::string& hint) {
    if (!(value > 0) || !std::isfinite(value)) {
      if (value == 0 && !is_explicit(field))
        add(field, field + " is not set (must be > 0)", hint);
      else
        add(field, str(field, " must be a finite number > 0 (got ", value, ")"), hint);
    }
  }
  void non_negative_finite(const std::string& field, float value, const std::string& hint) {
    if (!(value >= 0) || !std::isfinite(value))
      add(field, str(field, " must be a finite number >= 0 (got ", value, ")"), hint);
  }

  const std::vector<Problem>& problems() const { return problems_; }

 private:
  const FieldLocations* locations_;
  std::vector<Problem> problems_;
};

std::vector<Problem> find_problems(const config::Config& cfg, const FieldLocations* locations) {
  Checker c(locations);
  const config::ModelConfig& model = cfg.model();
  const config::TrainConfig& train = cfg.train();
  const config::OptimizerConfig& opt = cfg.optimizer();

  if (model.has_arch() && model.arch() != "gpt2" && model.arch() != "llama")
    c.add("model.arch", str("model.arch \"", model.arch(), "\" is not supported"),
          "use \"gpt2\" or \"llama\" and describe the rest with the model.* fields");
  // With init_from the weights describe the model: its fields may be left out (0), and any that
  // is set is checked against the file when the run starts (core/model/weights.h).
  const bool from_file = !model.init_from().empty();
  auto required = [&](const char* field, int value, const char* hint) {
    if (!from_file || value != 0) c.positive(field, value, hint);
  };
  required("model.n_layer", model.n_layer(), "number of transformer blocks, e.g. n_layer: 12 in model { }");
  required("model.n_head", model.n_head(), "attention heads per block, e.g. n_head: 12 in model { }");
  required("model.n_embd", model.n_embd(), "width of the residual stream, e.g. n_embd: 768 in model { }");
  required("model.vocab_size", model.vocab_size(), "tokens in the vocabulary, e.g. vocab_size: 50257 for GPT-2");
  required("model.max_seq_len", model.max_seq_len(),
           "longest sequence (position embedding size), e.g. max_seq_len: 1024");
  c.at_most("model.n_layer", model.n_layer(), model_limits::kLayers,
            "the largest published models have under 200 blocks");
  c.at_most("model.n_head", model.n_head(), model_limits::kWidth, "attention heads per block");
  c.at_most("model.n_kv_head", model.n_kv_head(), model_limits::kWidth, "key/value heads per block");
  c.at_most("model.n_embd", model.n_embd(), model_limits::kWidth, "Llama 3 405B has n_embd 16384");
  c.at_most("model.head_dim", model.head_dim(), model_limits::kWidth, "channels per head, usually 64-256");
  c.at_most("model.mlp_hidden", model.mlp_hidden(), model_limits::kMlpHidden, "Llama 3 405B has 53248");
  c.at_most("model.vocab_size", model.vocab_size(), model_limits::kVocab,
            "the largest published vocabularies have ~256K tokens");
  c.at_most("model.max_seq_len", model.max_seq_len(), model_limits::kSeqLen, "positions of the longest sequence");
  c.at_most("train.batch_size", train.batch_size(), kMaxBatch, "sequences per micro-batch");
  const int64_t heads = std::max<int64_t>(model.n_head(), model.n_kv_head());
  if (model.head_dim() > 0 && heads * model.head_dim() > model_limits::kWidth)
    c.add("model.head_dim",
          str("model.n_head × model.head_dim (", heads * model.head_dim(), ") is over the largest supported width, ",
              model_limits::kWidth),
          "the attention width is n_head × head_dim; check both");
  if (model.head_dim() < 0)
    c.add("model.head_dim", str("model.head_dim must be >= 0 (got ", model.head_dim(), ")"), "0 means n_embd / n_head");
  else if (model.head_dim() == 0 && model.n_head() > 0 && model.n_embd() > 0 && model.n_embd() % model.n_head() != 0)
    c.add("model.n_embd",
          str("model.n_embd (", model.n_embd(), ") must be divisible by model.n_head (", model.n_head(), ")"),
          "each head gets n_embd / n_head channels; e.g. n_embd 768 with n_head 12 (64 per head), or set "
          "model.head_dim");
  if (model.n_kv_head() < 0)
    c.add("model.n_kv_head", str("model.n_kv_head must be >= 0 (got ", model.n_kv_head(), ")"),
          "0 means n_head (multi-head attention)");
  else if (model.n_kv_head() > 0 && model.n_head() > 0 && model.n_head() % model.n_kv_head() != 0)
    c.add("model.n_kv_head",
          str("model.n_head (", model.n_head(), ") must be a multiple of model.n_kv_head (", model.n_kv_head(), ")"),
          "each key/value head serves n_head / n_kv_head query heads, e.g. n_head 32 with n_kv_head 8");
  if (!model.norm().empty() && model.norm() != "layernorm" && model.norm() != "rmsnorm")
    c.add("model.norm", str("model.norm \"", model.norm(), "\" is not supported"), "use \"layernorm\" or \"rmsnorm\"");
  if (model.has_norm_eps()) c.positive_finite("model.norm_eps", model.norm_eps(), "e.g. 1e-5");
  if (!model.position().empty() && model.position() != "learned" && model.position() != "rope")
    c.add("model.position", str("model.position \"", model.position(), "\" is not supported"),
          "use \"learned\" or \"rope\"");
  if (model.has_rope_theta()) c.positive_finite("model.rope_theta", model.rope_theta(), "Llama 2 uses 10000");
  if (!model.mlp().empty() && model.mlp() != "gelu" && model.mlp() != "swiglu")
    c.add("model.mlp", str("model.mlp \"", model.mlp(), "\" is not supported"), "use \"gelu\" or \"swiglu\"");
  c.non_negative("model.mlp_hidden", model.mlp_hidden(), "0 uses the family's rule");
  c.positive_finite("model.init_std", model.init_std(), "std of the normal weight init; GPT-2 uses 0.02");

  c.positive("train.batch_size", train.batch_size(), "sequences per micro-batch, e.g. batch_size: 4 in train { }");
  c.positive("train.seq_len", train.seq_len(), "tokens per sequence, e.g. seq_len: 1024 in train { }");
  if (train.seq_len() > 0 && model.max_seq_len() > 0 && train.seq_len() > model.max_seq_len())
    c.add("train.seq_len",
          str("train.seq_len (", train.seq_len(), ") exceeds model.max_seq_len (", model.max_seq_len(), ")"),
          "lower train.seq_len or raise model.max_seq_len (it sizes the position embedding)");
  if (train.grad_accum_steps() < 1)
    c.add("train.grad_accum_steps", str("train.grad_accum_steps must be >= 1 (got ", train.grad_accum_steps(), ")"),
          "micro-batches per optimizer step; 1 means no accumulation");
  c.positive("train.steps", train.steps(), "optimizer steps to run, e.g. steps: 1000 in train { }");
  c.non_negative("train.val_every", train.val_every(), "0 validates only at the end");
  c.positive("train.val_batches", train.val_batches(), "batches per validation; the default is 8");
  c.non_negative("train.log_every", train.log_every(), "steps between progress lines; the default is 10");
  c.non_negative("train.max_skipped_steps", train.max_skipped_steps(),
                 "consecutive skipped updates before the run stops; 0 never stops");
  c.non_negative("train.threads", train.threads(), "0 uses OMP_NUM_THREADS or all cores");
  if (!train.device().empty() && train.device() != "auto" && train.device() != "cpu" && train.device() != "cuda")
    c.add("train.device", str("train.device \"", train.device(), "\" is not supported"),
          "use \"auto\" (the default: the GPU when there is one), \"cpu\" or \"cuda\"");
  if (!train.precision().empty() && train.precision() != "fp32" && train.precision() != "bf16")
    c.add("train.precision", str("train.precision \"", train.precision(), "\" is not supported"),
          "use \"fp32\" or \"bf16\" (cuda only), or leave it unset for the device's default");
  else if (train.precision() == "bf16" && train.device() == "cpu")
    c.add("train.precision", "train.precision \"bf16\" needs train.device \"cuda\": the CPU computes in fp32",
          "drop train.precision (or set \"fp32\") to train on the CPU, or set train.device=cuda on a GPU machine");
  if (train.stochastic_rounding() && (train.precision() == "fp32" || train.device() == "cpu"))
    c.add("train.stochastic_rounding", "train.stochastic_rounding applies to bf16 weights only",
          "set train.precision=bf16 on train.device=cuda, or drop train.stochastic_rounding");
  if (!train.recompute().empty() && train.recompute() != "none" && train.recompute() != "selective" &&
      train.recompute() != "full")
    c.add("train.recompute", str("train.recompute \"", train.recompute(), "\" is not a recompute mode"),
          "use \"none\", \"selective\" (norm outputs, MLP activation, attention probabilities) or \"full\" (each "
          "block re-runs its forward in backward)");
  c.non_negative("train.recompute_blocks", train.recompute_blocks(), "0 applies train.recompute to every block");
  if (model.n_layer() > 0 && train.recompute_blocks() > model.n_layer())
    c.add("train.recompute_blocks",
          str("train.recompute_blocks (", train.recompute_blocks(), ") exceeds model.n_layer (", model.n_layer(), ")"),
          "use at most model.n_layer blocks, or 0 for all of them");

  const std::string& mp = train.matmul_precision();
  if (!mp.empty() && mp != "default" && mp != "fp8" && mp != "int8" && mp != "auto")
    c.add("train.matmul_precision", str("train.matmul_precision \"", mp, "\" is not supported"),
          "use \"default\", \"fp8\", \"int8\" or \"auto\"");
  else if (mp == "auto" && cfg.parallel().strategy() != "auto")
    c.add("train.matmul_precision", "train.matmul_precision \"auto\" is the planner's choice",
          "set parallel.strategy \"auto\" too, or name the precision (\"default\", \"fp8\", \"int8\")");
  if (train.low_precision_lm_head() && (mp.empty() || mp == "default"))
    c.add("train.low_precision_lm_head", "train.low_precision_lm_head needs a low train.matmul_precision",
          "set train.matmul_precision \"fp8\" or \"int8\", or drop train.low_precision_lm_head");
  if (train.fp8().has_amax_history_len())
    c.in_range("train.fp8.amax_history_len", float(train.fp8().amax_history_len()), 1.0f, 65536.0f, true,
               "steps of absmax per tensor, 1 to 65536; Transformer Engine uses 1024");
  c.in_range("train.fp8.margin", float(train.fp8().margin()), 0.0f, 30.0f, true,
             "0 (the default) uses the full fp8 range; each step of margin halves the scale");

  StepRange trace_range;
  std::string trace_error;
  if (!parse_step_range(train.trace_steps(), &trace_range, &trace_error))
    c.add("train.trace_steps", "train.trace_steps: " + trace_error,
          "e.g. trace_steps: \"20-22\" (steps 20 to 22) or \"5\"; leave it unset for no trace");
  else if (!trace_range.empty() && train.steps() > 0 && trace_range.first > train.steps())
    c.add("train.trace_steps",
          str("train.trace_steps \"", train.trace_steps(), "\" starts after the last step (train.steps is ",
              train.steps(), ")"),
          "trace steps within 1..train.steps");

  if (cfg.data().train().empty())
    c.add("data.train", "data.train is not set",
          "point it at llm.c token shards (a file, directory or glob), e.g. data { train: "
          "\"runs/quickstart/data/train.bin\" }");

  c.positive_finite("optimizer.lr", opt.lr(), "peak learning rate, e.g. lr: 6e-4 in optimizer { }");
  c.in_range("optimizer.beta1", opt.beta1(), 0.0f, 1.0f, false, "AdamW betas are in [0, 1); the usual beta1 is 0.9");
  c.in_range("optimizer.beta2", opt.beta2(), 0.0f, 1.0f, false, "AdamW betas are in [0, 1); the usual beta2 is 0.95");
  c.positive_finite("optimizer.eps", opt.eps(), "AdamW epsilon; the default is 1e-8");
  c.in_range("optimizer.min_lr_ratio", opt.min_lr_ratio(), 0.0f, 1.0f, true,
             "fraction of lr the cosine decays to: 0 decays to zero, 1 keeps lr constant");
  c.non_negative("optimizer.warmup_steps", opt.warmup_steps(), "0 starts at the peak lr");
  if (opt.warmup_steps() > 0 && train.steps() > 0 && opt.warmup_steps() > train.steps())
    c.add("optimizer.warmup_steps",
          str("optimizer.warmup_steps (", opt.warmup_steps(), ") exceeds train.steps (", train.steps(), ")"),
          "warmup must end by the last step; lower optimizer.warmup_steps or raise train.steps");
  c.non_negative_finite("optimizer.weight_decay", opt.weight_decay(), "0 disables weight decay; llm.c uses 0.1");
  c.non_negative_finite("optimizer.grad_clip", opt.grad_clip(), "global gradient-norm limit; 0 turns clipping off");
  if (!opt.state_dtype().empty() && opt.state_dtype() != "fp32" && opt.state_dtype() != "bf16" &&
      opt.state_dtype() != "int8")
    c.add("optimizer.state_dtype", str("optimizer.state_dtype \"", opt.state_dtype(), "\" is not supported"),
          "use \"fp32\" (default), \"bf16\" or \"int8\" (block-wise 8-bit AdamW moments)");

  const std::string& run_dir = cfg.logging().run_dir();
  if (run_dir.find_first_not_of(" \t") == std::string::npos)
    c.add("logging.run_dir", "logging.run_dir is empty",
          "name a directory for metrics.jsonl and checkpoints/, e.g. logging.run_dir=runs/my-run (the default is "
          "runs/default)");
  c.non_negative("checkpoint.every", cfg.checkpoint().every(), "0 writes a checkpoint only at the end");
  c.non_negative("checkpoint.keep", cfg.checkpoint().keep(), "0 keeps every checkpoint");

  const config::ParallelConfig& par = cfg.parallel();
  if (par.zero_stage() < 0 || par.zero_stage() > 3)
    c.add("parallel.zero_stage", str("parallel.zero_stage must be 0, 1, 2 or 3 (got ", par.zero_stage(), ")"),
          "0 all-reduces gradients; 1 shards optimizer state; 2 shards gradients too; 3 parameters too");
  if (par.has_bucket_cap_mb() || par.strategy() != "auto")
    c.positive_finite("parallel.bucket_cap_mb", par.bucket_cap_mb(), "gradient bucket cap in MB; the default is 25");
  if (!par.strategy().empty() && par.strategy() != "manual" && par.strategy() != "auto")
    c.add("parallel.strategy", str("parallel.strategy \"", par.strategy(), "\" is not supported"),
          "use \"manual\" (the default) or \"auto\" (the planner picks, see `topotrain plan`)");
  c.positive_finite("parallel.first_bucket_cap_mb", par.first_bucket_cap_mb(),
                    "first bucket cap in MB; the default is 1");
  c.positive_finite("parallel.timeout_s", par.timeout_s(), "seconds before a missing peer ends the job; default 300");
  c.non_negative_finite("parallel.inject_comm_delay_s", par.inject_comm_delay_s(), "a test aid; leave it at 0");
  const std::string& gc = par.grad_compression();
  if (!gc.empty() && gc != "none" && gc != "bf16" && gc != "int8" && gc != "fp8")
    c.add("parallel.grad_compression", str("parallel.grad_compression \"", gc, "\" is not supported"),
          "use \"none\", \"bf16\", \"int8\" or \"fp8\"");
  else if (!gc.empty() && gc != "none" && par.zero_stage() != 0)
    c.add("parallel.grad_compression", str("parallel.grad_compression \"", gc, "\" needs parallel.zero_stage 0"),
          "compressed gradients are all-reduced; ZeRO stages reduce-scatter fp32 gradients");
  const std::string& shape = par.collective();
  if (!shape.empty() && shape != "flat" && shape != "hierarchical")
    c.add("parallel.collective", str("parallel.collective \"", shape, "\" is not supported"),
          "use \"flat\" (the default) or \"hierarchical\" (intra-node, then inter-node)");
  else if (shape == "hierarchical" && par.zero_stage() != 0)
    c.add("parallel.collective", "parallel.collective \"hierarchical\" needs parallel.zero_stage 0",
          "the hierarchical shape is an all-reduce; ZeRO stages reduce-scatter over all ranks (collective \"flat\")");
  c.non_negative("parallel.ranks_per_node", par.ranks_per_node(),
                 "0 takes nodes from the hosts; N > 0 pretends nodes of N consecutive ranks");
  return c.problems();
}

[[noreturn]] void throw_problems(const std::vector<Problem>& problems, const std::string& origin,
                                 const FieldLocations* locations) {
  auto location = [&](const std::string& field) {
    if (locations) {
      auto it = locations->find(field);
      if (it != locations->end()) return it->second;
    }
    return origin;
  };
  if (problems.size() == 1) {
    const Problem& p = problems[0];
    throw Error(ErrorKind::kConfig, p.what, location(p.field), p.hint);
  }
  std::string what = str(problems.size(), " problems in the config:");
  for (const Problem& p : problems) {
    const std::string where = location(p.field);
    what += "\n  " + (where.empty() ? "" : where + ": ") + p.what + (p.hint.empty() ? "" : " (hint: " + p.hint + ")");
  }
  throw Error(ErrorKind::kConfig, what, origin, "");
}

void validate_impl(const config::Config& cfg, const std::string& origin, const FieldLocations* locations) {
  std::vector<Problem> problems = find_problems(cfg, locations);
  if (!problems.empty()) throw_problems(problems, origin, locations);
}

}  // namespace

// ---- public API -------------------------------------------------------------------------------

config::Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    const bool exists = std::filesystem::exists(path, ec);
    throw Error(ErrorKind::kConfig, exists ? "config path is not a regular file" : "config file not found", path,
                "pass a text-format .pbtxt file; examples/gpt2-tiny-synth.pbtxt is a starting point");
  }
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  if (!file) throw Error(ErrorKind::kConfig, "cannot read config file", path, "check the file's permissions");
  return parse_config_text(text.str(), path, overrides);
}

config::Config parse_config_text(const std::string& text, const std::string& origin,
                                 const std::vector<std::string>& overrides) {
  config::Config cfg;
  pb::TextFormat::ParseInfoTree tree;
  // A UTF-8 byte order mark (some Windows editors write one) is not text: skip it.
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  const bool bom = text.compare(0, kBom.size(), kBom) == 0;
  parse_reporting_every_error(bom ? text.substr(kBom.size()) : text, origin, cfg, tree);
  FieldLocations locations;
  collect_locations(cfg, tree, "", origin, &locations);
  for (const std::string& assignment : overrides) {
    const std::string field = apply_override_impl(cfg, assignment, origin);
    locations[field] = "--set " + assignment;
  }
  fill_defaults(cfg);
  validate_impl(cfg, origin, &locations);
  return cfg;
}

void apply_override(config::Config& cfg, const std::string& assignment, const std::string& origin) {
  apply_override_impl(cfg, assignment, origin);
}

void fill_defaults(config::Config& cfg) {
  config::ModelConfig& model = *cfg.mutable_model();
  if (!model.has_arch() && model.init_from().empty()) model.set_arch(kDefaultArch);  // else the file's
  if (!model.has_init_std()) model.set_init_std(0.02f);

  config::TrainConfig& train = *cfg.mutable_train();
  if (!train.has_grad_accum_steps()) train.set_grad_accum_steps(1);
  if (!train.has_val_batches()) train.set_val_batches(8);
  if (!train.has_log_every()) train.set_log_every(10);
  if (!train.has_seed()) train.set_seed(1337);
  if (!train.has_device()) train.set_device("auto");
  if (!train.has_max_skipped_steps()) train.set_max_skipped_steps(3);
  if (train.matmul_precision().empty()) train.set_matmul_precision("default");
  if (!train.fp8().has_amax_history_len()) train.mutable_fp8()->set_amax_history_len(1024);

  config::OptimizerConfig& opt = *cfg.mutable_optimizer();
  if (!opt.has_beta1()) opt.set_beta1(0.9f);
  if (!opt.has_beta2()) opt.set_beta2(0.95f);
  if (!opt.has_eps()) opt.set_eps(1e-8f);
  if (!opt.has_grad_clip()) opt.set_grad_clip(1.0f);

  config::DataConfig& data = *cfg.mutable_data();
  if (!data.has_shuffle()) data.set_shuffle(true);

  config::LoggingConfig& logging = *cfg.mutable_logging();
  if (!logging.has_run_dir()) logging.set_run_dir(kDefaultRunDir);
  if (!logging.has_tensorboard()) logging.set_tensorboard(true);

  config::ParallelConfig& parallel = *cfg.mutable_parallel();
  // With strategy "auto" the planner fills the strategy fields the user left unset (launch/).
  const bool planned = parallel.strategy() == "auto";
  if (!parallel.has_zero_stage() && !planned) parallel.set_zero_stage(0);
  if (!parallel.has_bucket_cap_mb() && !planned) parallel.set_bucket_cap_mb(25.0f);
  if (!parallel.has_first_bucket_cap_mb()) parallel.set_first_bucket_cap_mb(1.0f);
  if (!parallel.has_timeout_s()) parallel.set_timeout_s(300.0f);
  if (!parallel.has_error_feedback()) parallel.set_error_feedback(true);
  if (!parallel.has_zero3_prefetch()) parallel.set_zero3_prefetch(true);
  // threads, min_lr_ratio, weight_decay, warmup_steps, checkpoint.every/keep and sample_at_end
  // default to zero, which proto3 already gives them.
}

void validate_config(const config::Config& cfg, const std::string& origin) { validate_impl(cfg, origin, nullptr); }

namespace {
// Every set field of `msg` as dotted name -> value in text format.
void flatten(const pb::Message& msg, const std::string& prefix, std::vector<std::pair<std::string, std::string>>* out) {
  const pb::Reflection* r = msg.GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  r->ListFields(msg, &fields);
  for (const pb::FieldDescriptor* f : fields) {
    if (f->is_repeated()) continue;  // the config has none
    const std::string name = prefix + f->name();
    if (f->message_type()) {
      flatten(r->GetMessage(msg, f), name + ".", out);
      continue;
    }
    std::string value;
    pb::TextFormat::PrintFieldValueToString(msg, f, -1, &value);
    out->emplace_back(name, value);
  }
}
}  // namespace

std::vector<std::string> config_changes(const config::Config& before, const config::Config& after) {
  std::vector<std::pair<std::string, std::string>> a, b;
  flatten(before, "", &a);
  flatten(after, "", &b);
  std::map<std::string, std::string> old_values(a.begin(), a.end()), new_values(b.begin(), b.end());
  std::vector<std::string> changes;
  auto value_in = [](const std::map<std::string, std::string>& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? std::string("(unset)") : it->second;
  };
  for (const auto& [name, value] : b)
    if (value_in(old_values, name) != value)
      changes.push_back(name + ": " + value_in(old_values, name) + " -> " + value);
  for (const auto& [name, value] : a)
    if (!new_values.count(name)) changes.push_back(name + ": " + value + " -> (unset)");
  return changes;
}

std::string config_to_text(const config::Config& cfg) {
  std::string text;
  pb::TextFormat::Printer printer;
  const bool printed = printer.PrintToString(cfg, &text);
  TT_ASSERT(printed, "printing a Config cannot fail");
  return text;
}

}  // namespace tt
