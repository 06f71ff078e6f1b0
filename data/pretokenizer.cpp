// GPT-2 pre-tokenization with PCRE2 (see pretokenizer.h for the contract and the choice of \s).
// Design: the compiled pattern is shared and immutable; the mutable PCRE2 state (match data, JIT
// stack, match context) lives in thread_local storage, so split() is lock-free from any thread.
#include "data/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstdint>

#include "core/error.h"

namespace tt::data {

const char kGpt2PretokenizePattern[] = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

// Unicode White_Space (PropList.txt), the set Rust's regex (tiktoken) uses for \s. PCRE2's UCP \s
// differs (it omits U+0085 and, in 10.42, includes U+180E).
#define TT_WS R"(\t-\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})"
// Letters (L) and numbers (N) assigned in Unicode 15.0-16.0, which tiktoken 0.14's regex tables
// know and PCRE2 10.42 (Unicode 14) does not; listed so the split does not depend on the PCRE2
// build (with a newer PCRE2 the union changes nothing). Found by probing every code point with
// tiktoken patterns \p{L}, \p{N}, \s against PCRE2's (no code point was in PCRE2's sets only).
#define TT_NEW_L                                                                                      \
  R"(\x{1C89}-\x{1C8A}\x{A7CB}-\x{A7CD}\x{A7DA}-\x{A7DC}\x{105C0}-\x{105F3}\x{10D4A}-\x{10D65})"      \
  R"(\x{10D6F}-\x{10D85}\x{10EC2}-\x{10EC4}\x{1123F}-\x{11240}\x{11380}-\x{11389}\x{1138B}\x{1138E})" \
  R"(\x{11390}-\x{113B5}\x{113B7}\x{113D1}\x{113D3}\x{11BC0}-\x{11BE0}\x{11F02}\x{11F04}-\x{11F10})"  \
  R"(\x{11F12}-\x{11F33}\x{1342F}\x{13441}-\x{13446}\x{13460}-\x{143FA}\x{16100}-\x{1611D})"          \
  R"(\x{16D40}-\x{16D6C}\x{18CFF}\x{1B132}\x{1B155}\x{1DF25}-\x{1DF2A}\x{1E030}-\x{1E06D})"           \
  R"(\x{1E4D0}-\x{1E4EB}\x{1E5D0}-\x{1E5ED}\x{1E5F0}\x{2B739}\x{2EBF0}-\x{2EE5D}\x{31350}-\x{323AF})"
#define TT_NEW_N                                                                                       \
  R"(\x{10D40}-\x{10D49}\x{116D0}-\x{116E3}\x{11BF0}-\x{11BF9}\x{11F50}-\x{11F59}\x{16130}-\x{16139})" \
  R"(\x{16D70}-\x{16D79}\x{1CCF0}-\x{1CCF9}\x{1D2C0}-\x{1D2D3}\x{1E4F0}-\x{1E4F9}\x{1E5F1}-\x{1E5FA})"
#define TT_L R"([\p{L})" TT_NEW_L "]"
#define TT_N R"([\p{N})" TT_NEW_N "]"
// 's|'t|'re|'ve|'m|'ll|'d| ?L+| ?N+| ?[^\s L N]+|\s+(?!\S)|\s+
const char kCompiledPattern[] = "'s|'t|'re|'ve|'m|'ll|'d| ?" TT_L "+| ?" TT_N R"(+| ?[^)" TT_WS
                                R"(\p{L}\p{N})" TT_NEW_L TT_NEW_N "]+|[" TT_WS "]+(?![^" TT_WS "])|[" TT_WS "]+";
#undef TT_WS
#undef TT_NEW_L
#undef TT_NEW_N
#undef TT_L
#undef TT_N

// Per-thread PCRE2 matching state; independent of the pattern, so one set serves every Pretokenizer.
struct MatchState {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;

  MatchState() {
    data = pcre2_match_data_create(1, nullptr);
    context = pcre2_match_context_create(nullptr);
    jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    if (!data || !context || !jit_stack) throw Error(ErrorKind::kRuntime, "PCRE2 could not allocate match state");
    pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~MatchState() {
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
};

MatchState& match_state() {
  thread_local MatchState state;
  return state;
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  if (pcre2_get_error_message(code, buf, sizeof(buf)) < 0) return str("PCRE2 error ", code);
  return reinterpret_cast<const char*>(buf);
}

}  // namespace

Pretokenizer::Pretokenizer() {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kCompiledPattern), PCRE2_ZERO_TERMINATED,
                    PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error_code, &error_offset, nullptr);
  if (!code)
    throw Error(
        ErrorKind::kRuntime,
        str("PCRE2 rejected the GPT-2 pre-tokenizer pattern at offset ", error_offset, ": ", pcre2_message(error_code)),
        "data/pretokenizer.cpp", "PCRE2 must be built with Unicode support (libpcre2-8 10.34 or newer)");
  // JIT is an optimisation: when the platform lacks it, pcre2_match interprets the pattern.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  code_ = std::shared_ptr<void>(code, [](void* p) { pcre2_code_free(static_cast<pcre2_code*>(p)); });
}

void Pretokenizer::split(std::string_view text, std::vector<std::string_view>& pieces) const {
  split(text, 0, SIZE_MAX, pieces);
}

size_t Pretokenizer::split(std::string_view text, size_t offset, size_t max_pieces,
                           std::vector<std::string_view>& pieces) const {
  auto* code = static_cast<const pcre2_code*>(code_.get());
  MatchState& st = match_state();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  const size_t n = text.size();
  size_t pos = offset;
  const size_t first = pieces.size();
  while (pos < n && pieces.size() - first < max_pieces) {
    const int rc = pcre2_match(code, subject, n, pos, 0, st.data, st.context);
    if (rc == PCRE2_ERROR_NOMATCH) {  // only invalid UTF-8 is left
      pieces.push_back(text.substr(pos));
      pos = n;
      break;
    }
    if (rc < 0)
      throw Error(ErrorKind::kRuntime, "PCRE2 failed while pre-tokenizing: " + pcre2_message(rc),
                  str("byte offset ", pos));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
    const size_t begin = ov[0], end = ov[1];
    TT_ASSERT(begin >= pos && end > begin && end <= n, "PCRE2 returned an empty or out-of-range match");
    if (begin > pos) pieces.push_back(text.substr(pos, begin - pos));  // a run of invalid UTF-8
    pieces.push_back(text.substr(begin, end - begin));
    pos = end;
  }
  return pos;
}

std::vector<std::string_view> Pretokenizer::split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  split(text, pieces);
  return pieces;
}

}  // namespace tt::data
