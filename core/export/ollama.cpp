#include "forja/ollama.h"

#include "forja/error.h"

namespace forja {
namespace {

// Placeholders for the tokenizer's strings in the Go templates below.
constexpr const char* kBos = "\x01BOS\x01";
constexpr const char* kEos = "\x01EOS\x01";

struct Family {
  const char* name;
  const char* go;        // with kBos / kEos where the tokenizer's strings go
  const char* turn_end;  // the marker that closes the answer, a stop besides EOS; nullptr: EOS alone
};

// Each renders what Forja's built-in template of the family renders (core/tokenizer/templates), less the
// leading BOS, for conversations that end with a user turn and ask for the assistant's answer.
const Family kFamilies[] = {
    {"chatml",
     "{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end "
     "}}<|im_start|>assistant\n",
     "<|im_end|>"},
    {"llama3",
     "{{- range .Messages }}<|start_header_id|>{{ .Role }}<|end_header_id|>\n\n{{ .Content }}<|eot_id|>{{ "
     "end "
     "}}<|start_header_id|>assistant<|end_header_id|>\n\n",
     "<|eot_id|>"},
    {"zephyr", "{{- range .Messages }}<|{{ .Role }}|>\n{{ .Content }}\x01EOS\x01\n{{ end }}<|assistant|>\n",
     nullptr},
    {"mistral",
     "{{- $sys := eq (index .Messages 0).Role \"system\" }}{{- range $i, $m := .Messages }}{{ if eq $m.Role "
     "\"user\" }}[INST] {{ if and $sys (eq $i 1) }}{{ (index $.Messages 0).Content }}\n\n{{ end }}{{ "
     "$m.Content "
     "}}[/INST]{{ else if eq $m.Role \"assistant\" }} {{ $m.Content }}\x01EOS\x01{{ end }}{{ end }}",
     nullptr},
    {"llama2",
     "{{- $sys := eq (index .Messages 0).Role \"system\" }}{{- range $i, $m := .Messages }}{{ $first := or "
     "(eq $i "
     "0) (and $sys (eq $i 1)) }}{{ if eq $m.Role \"user\" }}{{ if not $first }}\x01BOS\x01{{ end }}[INST] {{ "
     "if "
     "and $sys $first }}<<SYS>>\n{{ (index $.Messages 0).Content }}\n<</SYS>>\n\n{{ end }}{{ $m.Content }} "
     "[/INST]{{ else if eq $m.Role \"assistant\" }} {{ $m.Content }} \x01EOS\x01{{ end }}{{ end }}",
     nullptr},
    // Go's templates have no trim: a message's own leading or trailing whitespace is kept, where Gemma's
    // template trims it.
    {"gemma",
     "{{- $sys := eq (index .Messages 0).Role \"system\" }}{{- range $i, $m := .Messages }}{{ if not (and "
     "$sys "
     "(eq $i 0)) }}<start_of_turn>{{ if eq $m.Role \"assistant\" }}model{{ else }}{{ $m.Role }}{{ end }}\n{{ "
     "if "
     "and $sys (eq $i 1) }}{{ (index $.Messages 0).Content }}\n\n{{ end }}{{ $m.Content }}<end_of_turn>\n{{ "
     "end "
     "}}{{ end }}<start_of_turn>model\n",
     "<end_of_turn>"},
    {"phi3", "{{- range .Messages }}<|{{ .Role }}|>\n{{ .Content }}<|end|>\n{{ end }}<|assistant|>\n",
     "<|end|>"},
};

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
  return s;
}

// The probe conversations: one turn, a system prompt with two turns, several turns.
std::vector<std::vector<ChatMessage>> probes() {
  return {
      {{"user", "Hello there"}},
      {{"system", "You answer briefly."}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "What is 2+2?"}},
      {{"user", "one"}, {"assistant", "two"}, {"user", "three"}, {"assistant", "four"}, {"user", "five"}}};
}

// What `tpl` renders for a probe, or nullopt when it refuses it (a raise_exception).
std::optional<std::string> render(const ChatTemplate& tpl, const std::vector<ChatMessage>& msgs) {
  ChatRenderOptions o;
  o.add_generation_prompt = true;
  try {
    return tpl.render(msgs, o).text;
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace

OllamaTemplate ollama_template(const ChatTemplate& tpl, const std::string& bos, const std::string& eos) {
  const auto ps = probes();
  std::vector<std::optional<std::string>> ours;
  for (const auto& p : ps) ours.push_back(render(tpl, p));
  for (const Family& f : kFamilies) {
    const ChatTemplate ref(ChatTemplate::builtin_source(f.name), std::string("built-in ") + f.name, bos, eos);
    bool same = true;
    std::optional<std::string> default_system;
    for (size_t i = 0; i < ps.size() && same; ++i) {
      const auto theirs = render(ref, ps[i]);
      if (ours[i] == theirs) continue;
      // ChatML with a system prompt of its own when the conversation has none (Qwen2's): the same text
      // after that system turn.
      const bool has_system = ps[i].front().role == "system";
      if (std::string(f.name) == "chatml" && !has_system && ours[i] && theirs &&
          ours[i]->size() > theirs->size() &&
          ours[i]->compare(ours[i]->size() - theirs->size(), theirs->size(), *theirs) == 0) {
        const std::string prefix = ours[i]->substr(0, ours[i]->size() - theirs->size());
        const std::string open = "<|im_start|>system\n", close = "<|im_end|>\n";
        if (prefix.rfind(open, 0) == 0 && prefix.size() >= open.size() + close.size() &&
            prefix.compare(prefix.size() - close.size(), close.size(), close) == 0) {
          const std::string sys = prefix.substr(open.size(), prefix.size() - open.size() - close.size());
          if (!default_system || *default_system == sys) {
            default_system = sys;
            continue;
          }
        }
      }
      same = false;
    }
    if (!same) continue;
    OllamaTemplate t;
    t.family = f.name;
    t.default_system = default_system;
    std::string go = f.go;
    if (default_system)
      go = "{{- if ne (index .Messages 0).Role \"system\" }}<|im_start|>system\n" + *default_system +
           "<|im_end|>\n{{ end }}" + go;
    t.go_template = replace_all(replace_all(go, kBos, bos), kEos, eos);
    t.stop = {f.turn_end ? std::string(f.turn_end) : eos};
    if (!eos.empty() && eos != t.stop.front()) t.stop.push_back(eos);
    return t;
  }
  throw Error(tpl.origin() +
                  ": the chat template is none of those Forja translates for Ollama (Llama 2, Llama 3, "
                  "Mistral, ChatML/Qwen, Zephyr, Gemma, Phi-3)",
              "Write the Modelfile's TEMPLATE by hand, or export the GGUF file alone (--format gguf).");
}

std::string ollama_modelfile(const std::string& gguf_file, const OllamaTemplate& t,
                             const std::optional<std::string>& system) {
  auto quoted = [](const std::string& s) {
    if (s.find("\"\"\"") != std::string::npos)
      throw Error("the text cannot go in a Modelfile: it contains \"\"\"");
    return "\"\"\"" + s + "\"\"\"";
  };
  std::string m = "FROM ./" + gguf_file + "\n";
  m += "TEMPLATE " + quoted(t.go_template) + "\n";
  for (const auto& s : t.stop) {
    if (s.empty()) continue;
    if (s.find('"') != std::string::npos)
      throw Error("a stop string with a quote cannot go in a Modelfile: " + s);
    m += "PARAMETER stop \"" + s + "\"\n";
  }
  if (system) m += "SYSTEM " + quoted(*system) + "\n";
  return m;
}

}  // namespace forja
