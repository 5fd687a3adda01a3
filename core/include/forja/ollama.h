// An Ollama model folder: the GGUF file and a Modelfile whose TEMPLATE is the model's Jinja chat template
// translated into Ollama's Go template, for the template families Forja knows. A template is recognised by
// what it renders (probe conversations rendered by it and by Forja's template of each family must agree),
// not by its text; one that matches no family is refused, never guessed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "forja/chat_template.h"

namespace forja {

struct OllamaTemplate {
  std::string family;                         // "llama2", "llama3", "mistral", "chatml", "zephyr"
  std::string go_template;                    // Ollama's TEMPLATE: over .Messages (.Role, .Content)
  std::vector<std::string> stop;              // the end-of-turn strings (PARAMETER stop)
  std::optional<std::string> default_system;  // a system prompt the template adds when there is none
};

// The Go template that renders what `tpl` renders for conversations that end with a user turn and
// add_generation_prompt, less a leading BOS (llama.cpp adds that when it tokenizes). `bos` / `eos`: the
// tokenizer's strings. Throws forja::Error naming `tpl`'s origin when it matches no family.
OllamaTemplate ollama_template(const ChatTemplate& tpl, const std::string& bos, const std::string& eos);

// The Modelfile: FROM ./<gguf_file>, TEMPLATE, PARAMETER stop for each end-of-turn string, SYSTEM when given.
std::string ollama_modelfile(const std::string& gguf_file, const OllamaTemplate& t,
                             const std::optional<std::string>& system);

}  // namespace forja
