// A chat template: the Jinja parser and renderer (core/tokenizer/jinja_*.cpp) through ChatTemplate, rendering a
// small conversation with and without the generation prompt.
#include "forja/chat_template.h"

#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<forja::ChatMessage> messages = {
      {"system", "Be brief."}, {"user", "Hi {{ there }}"}, {"assistant", "Hello!"}, {"user", "Bye"}};
  forja::fuzz::guarded([&] {
    const forja::ChatTemplate tmpl(forja::fuzz::as_string(data, size), "fuzz", "<s>", "</s>");
    (void)tmpl.render(messages);
    forja::ChatRenderOptions options;
    options.add_generation_prompt = true;
    options.extra_variables_json = R"({"tools": [{"name": "f", "parameters": {"x": 1}}], "n": 3})";
    (void)tmpl.render(messages, options);
  });
  return 0;
}
