// The Jinja subset against what Jinja2 renders in transformers' environment (trim_blocks, lstrip_blocks,
// loopcontrols, tojson without HTML escaping). Each expected string is Jinja2's documented behaviour for the
// input.
#include <QtTest>

#include "forja/chat_template.h"
#include "forja/error.h"
#include "jinja.h"

namespace {

std::string render(const std::string& src, forja::jinja::Dict vars = {}) {
  return forja::jinja::Template(src, "test").render(vars).text;
}

std::string error_of(const std::string& src) {
  try {
    render(src);
  } catch (const forja::Error& e) {
    return e.message();
  }
  return {};
}

using forja::jinja::Value;

}  // namespace

class TestJinja : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void whitespace_control() {
    // trim_blocks drops the newline after a tag; lstrip_blocks drops the indentation before it.
    QCOMPARE(render("{% if true %}\n  x\n  {% endif %}\ny"), std::string("  x\ny"));
    QCOMPARE(render("a  {%- if true -%}  b  {%- endif %}"), std::string("ab"));
    QCOMPARE(render("{{ 'a' }}\n{{ 'b' }}"), std::string("a\nb"));  // no trimming after {{ }}
    QCOMPARE(render("{# note #}\nx"), std::string("x"));
    QCOMPARE(render("x\n"), std::string("x"));  // keep_trailing_newline is off
    QCOMPARE(render("  {%+ if true %}x{% endif %}"), std::string("  x"));
  }

  void loops() {
    QCOMPARE(render("{% for x in [1, 2, 3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}"
                    "{{ loop.length }}{{ loop.revindex }};{% endfor %}"),
             std::string("10TrueFalse33;21FalseFalse32;32FalseTrue31;"));
    QCOMPARE(render("{% for x in [] %}a{% else %}empty{% endfor %}"), std::string("empty"));
    QCOMPARE(render("{% for x in [1, 2, 3, 4] if x is even %}{{ x }}{% endfor %}"), std::string("24"));
    QCOMPARE(render("{% for x in [1, 2, 3] %}{% if x == 2 %}{% continue %}{% endif %}{{ x }}{% endfor %}"),
             std::string("13"));
    QCOMPARE(render("{% for x in [1, 2, 3] %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
             std::string("1"));
    QCOMPARE(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }} {% endfor %}"),
             std::string("a=1 b=2 "));
    // A set inside a loop does not leak out of it; a namespace does.
    QCOMPARE(render("{% set n = 0 %}{% for x in [1, 2] %}{% set n = n + x %}{% endfor %}{{ n }}"),
             std::string("0"));
    QCOMPARE(render("{% set ns = namespace(n=0) %}{% for x in [1, 2] %}{% set ns.n = ns.n + x %}{% endfor "
                    "%}{{ ns.n }}"),
             std::string("3"));
  }

  void conditions_and_operators() {
    QCOMPARE(render("{% if 0 %}a{% elif '' %}b{% elif [1] %}c{% else %}d{% endif %}"), std::string("c"));
    QCOMPARE(
        render("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 1 / 2 }} {{ 4 / 2 }} {{ 2 * 3 + 1 }}"),
        std::string("3 -4 1 2 0.5 2.0 7"));
    QCOMPARE(render("{{ 'a' ~ 1 ~ none }} {{ 'ab' * 2 }} {{ 'x' if false else 'y' }} {{ 1 in [1, 2] }}"),
             std::string("a1None abab y True"));
    QCOMPARE(
        render("{{ 'b' in 'abc' and not 'z' in 'abc' }} {{ none or 'd' }} {{ undefined_thing is defined }}"),
        std::string("True d False"));
    QCOMPARE(render("{{ [1, 'a', none, true, 2.5] }} {{ {'k': 'v'} }}"),
             std::string("[1, 'a', None, True, 2.5] {'k': 'v'}"));
  }

  void filters_and_methods() {
    QCOMPARE(render("{{ '  hi  ' | trim }}|{{ 'ação' | length }}|{{ [1, 2] | length }}|{{ 'Ab' | upper }}{{ "
                    "'Ab' | lower }}"),
             std::string("hi|4|2|ABab"));
    QCOMPARE(render("{{ {'role': 'user', 'content': 'olá \"x\"\n'} | tojson }}"),
             std::string("{\"role\": \"user\", \"content\": \"olá \\\"x\\\"\\n\"}"));
    QCOMPARE(render("{{ [1, {'a': none}] | tojson(indent=2) }}"),
             std::string("[\n  1,\n  {\n    \"a\": null\n  }\n]"));
    QCOMPARE(render("{{ missing | default('d') }} {{ '' | default('e', true) }} {{ [3, 1] | join('-') }}"),
             std::string("d e 3-1"));
    QCOMPARE(
        render("{{ 'a b  c'.split() }} {{ 'a,b'.split(',') }} {{ ' x '.strip() }}{{ 'xyx'.strip('x') }}"),
        std::string("['a', 'b', 'c'] ['a', 'b'] xy"));
    QCOMPARE(
        render("{{ 'hello world'.title() }} {{ 'abc'.startswith('ab') }} {{ 'abc'.endswith(('x', 'c')) }} "
               "{{ 'aXa'.replace('a', 'b') }}"),
        std::string("Hello World True True bXb"));
    QCOMPARE(render("{{ 'ação'[1:3] }} {{ [1, 2, 3][::-1] }} {{ [1, 2, 3][-1] }} {{ 'abc'[5] }}|"),
             std::string("çã [3, 2, 1] 3 |"));
    forja::jinja::Dict vars;
    vars.emplace_back("msgs", Value::make_list({Value::make_dict({{"role", Value::string("user")}}),
                                                Value::make_dict({{"role", Value::string("tool")}})}));
    QCOMPARE(render("{{ msgs | selectattr('role', 'equalto', 'tool') | list | length }} "
                    "{{ msgs | map(attribute='role') | join(',') }}",
                    vars),
             std::string("1 user,tool"));
  }

  void generation_blocks_give_spans() {
    const auto out = forja::jinja::Template("a{% generation %}bc{% endgeneration %}d", "test").render({});
    QCOMPARE(out.text, std::string("abcd"));
    QCOMPARE(out.generation_spans.size(), size_t(1));
    QCOMPARE(out.generation_spans[0], (std::pair<size_t, size_t>(1, 3)));
  }

  void errors_name_the_template_and_line() {
    const std::string unknown = error_of("line one\n{{ 'x' | no_such_filter }}");
    QVERIFY2(
        unknown.find("test:2") != std::string::npos && unknown.find("no_such_filter") != std::string::npos,
        unknown.c_str());
    QVERIFY(error_of("{% if true %}x").find("endif") != std::string::npos);
    QVERIFY(error_of("{{ 'x' ").find("unclosed") != std::string::npos);
    QVERIFY(error_of("{% endfor %}").find("endfor") != std::string::npos);
    QVERIFY(error_of("{% macro m() %}{% endmacro %}").find("macro") != std::string::npos);
    QVERIFY(error_of("{{ undefined_thing.attr }}").find("attr") != std::string::npos);
    // raise_exception() carries the template's own message out through ChatTemplate.
    const forja::ChatTemplate tpl("{{ raise_exception('roles must alternate') }}", "mine");
    try {
      tpl.render({{"user", "hi"}});
      QFAIL("raise_exception did not throw");
    } catch (const forja::Error& e) {
      QVERIFY2(std::string(e.message()).find("roles must alternate") != std::string::npos, e.what());
      QVERIFY(std::string(e.message()).find("mine") != std::string::npos);
    }
  }

  void assistant_spans_without_generation_blocks() {
    const std::vector<forja::ChatMessage> conv = {
        {"user", "hi"}, {"assistant", "yo"}, {"user", "q"}, {"assistant", "a"}};
    // Prefix rendering: the built-in Llama 2 template writes "[/INST]" and then " yo </s>".
    const auto llama2 =
        forja::ChatTemplate(forja::ChatTemplate::builtin_source("llama2"), "llama2", "<s>", "</s>");
    auto r = llama2.render(conv);
    QCOMPARE(r.assistant_spans.size(), size_t(2));
    QCOMPARE(
        r.text.substr(r.assistant_spans[0].first, r.assistant_spans[0].second - r.assistant_spans[0].first),
        std::string(" yo </s>"));
    QCOMPARE(r.text.substr(r.assistant_spans[1].first), std::string(" a </s>"));
    // ChatML writes "\n" after each <|im_end|>: it separates turns, the answer ends at the end-of-turn token.
    // (Without an eos token to recognise, the whole rendered turn is kept.)
    const auto chatml =
        forja::ChatTemplate(forja::ChatTemplate::builtin_source("chatml"), "chatml", "", "<|im_end|>");
    r = chatml.render(conv);
    QCOMPARE(r.assistant_spans.size(), size_t(2));
    for (const auto& [b, e] : r.assistant_spans) QVERIFY(r.text.compare(e - 10, 10, "<|im_end|>") == 0);
    QCOMPARE(
        r.text.substr(r.assistant_spans[0].first, r.assistant_spans[0].second - r.assistant_spans[0].first),
        std::string("yo<|im_end|>"));
    QCOMPARE(r.text.substr(r.assistant_spans[0].second, 1), std::string("\n"));
    const auto chatml_no_eos = forja::ChatTemplate(forja::ChatTemplate::builtin_source("chatml"), "chatml");
    r = chatml_no_eos.render(conv);
    QCOMPARE(
        r.text.substr(r.assistant_spans[0].first, r.assistant_spans[0].second - r.assistant_spans[0].first),
        std::string("yo<|im_end|>\n"));
    // A template whose output for a prefix is not a prefix (it counts the turns at the end): the assistant's
    // words are found in the text instead, with the end-of-turn token after them.
    const forja::ChatTemplate counting(
        "{% for m in messages %}{{ m.content }}{{ eos_token if m.role == 'assistant' }}|"
        "{% endfor %}{{ messages | length }}",
        "counting", "", "<e>");
    r = counting.render(conv);
    QCOMPARE(r.text, std::string("hi|yo<e>|q|a<e>|4"));
    QCOMPARE(r.assistant_spans, (std::vector<std::pair<size_t, size_t>>{{3, 8}, {11, 15}}));
    // A template that drops the assistant's words leaves nothing to train on: an error, not an empty mask.
    const forja::ChatTemplate dropping(
        "{% for m in messages %}{{ m.role }}|{% endfor %}{{ messages | length }}", "drop");
    QVERIFY_THROWS_EXCEPTION(forja::Error, dropping.render(conv));
  }

  // Each of these overflowed the stack of the parser or the renderer.
  void deep_nesting_is_an_error() {
    const int n = 10000;
    auto repeat = [](const std::string& s, int k) {
      std::string out;
      for (int i = 0; i < k; ++i) out += s;
      return out;
    };
    QVERIFY(error_of("{{ " + repeat("(", n) + "1" + repeat(")", n) + " }}").find("nested deeper than") !=
            std::string::npos);
    QVERIFY(error_of("{{ " + repeat("[", n) + repeat("]", n) + " }}").find("nested deeper than") !=
            std::string::npos);
    QVERIFY(error_of("{{ " + repeat("- ", n) + "1 }}").find("nested deeper than") != std::string::npos);
    QVERIFY(error_of("{{ " + repeat("not ", n) + "1 }}").find("nested deeper than") != std::string::npos);
    QVERIFY(error_of("{{ 1" + repeat(" + 1", n) + " }}").find("nested deeper than") != std::string::npos);
    QVERIFY(error_of("{{ x" + repeat(".a", n) + " }}").find("nested deeper than") != std::string::npos);
    QVERIFY(error_of("{{ x" + repeat("|first", n) + " }}").find("nested deeper than") != std::string::npos);
    const std::string blocks = error_of(repeat("{% if true %}", n) + "x" + repeat("{% endif %}", n));
    QVERIFY2(blocks.find("blocks nested deeper than") != std::string::npos, blocks.c_str());
    QVERIFY(
        error_of(repeat("{% for x in [1] %}", n) + repeat("{% endfor %}", n)).find("nested deeper than") !=
        std::string::npos);
    // What real templates do stays well inside the limits.
    QCOMPARE(render("{{ " + repeat("(", 50) + "1" + repeat(")", 50) + " }}"), std::string("1"));
    QCOMPARE(render(repeat("{% if true %}", 50) + "x" + repeat("{% endif %}", 50)), std::string("x"));
  }

  void deep_or_cyclic_values_are_an_error() {
    const std::string deep =
        "{% set ns = namespace(x=[]) %}{% for i in range(10000) %}{% set ns.x = [ns.x] %}{% endfor %}";
    QVERIFY(error_of(deep + "{{ ns.x }}").find("nested deeper than") != std::string::npos);
    QVERIFY(error_of(deep + "{{ ns.x|tojson }}").find("nested deeper than") != std::string::npos);
    QVERIFY(error_of(deep + "{{ ns.x == ns.x }}").find("nested deeper than") != std::string::npos);
    // Building and freeing a chain far deeper than the stack is fine as long as nothing prints it.
    QCOMPARE(render("{% set ns = namespace(x=[]) %}{% for i in range(200000) %}{% set ns.x = [ns.x] %}"
                    "{% endfor %}{{ ns.x|length }}"),
             std::string("1"));
    QCOMPARE(
        render(
            "{% set ns = namespace(head=namespace(), tail=none) %}{% set ns.tail = ns.head %}"
            "{% for i in range(200000) %}{% set t = ns.tail %}{% set n = namespace() %}{% set t.next = n %}"
            "{% set ns.tail = n %}{% endfor %}ok"),
        std::string("ok"));
    const std::string cycle = "{% set ns = namespace() %}{% set ns.me = ns %}";
    QVERIFY(error_of(cycle + "{{ ns }}").find("contains itself") != std::string::npos);
    QVERIFY(error_of(cycle + "{{ ns|tojson }}").find("contains itself") != std::string::npos);
    std::string json(10000, '[');
    json += std::string(10000, ']');
    try {
      forja::jinja::from_json_text(json);
      QFAIL("expected an error");
    } catch (const forja::Error& e) {
      QVERIFY(e.message().find("nested deeper than") != std::string::npos);
    }
  }

  // These raised SIGFPE or were undefined behaviour; Python raises ZeroDivisionError or gives a big int.
  void integer_arithmetic_is_checked() {
    auto has = [](const std::string& err, const char* part) {
      return err.find(part) != std::string::npos && err.find("test:1") != std::string::npos;
    };
    QVERIFY(has(error_of("{{ (-9223372036854775807 - 1) // -1 }}"), "integer overflow in //"));
    QCOMPARE(render("{{ (-9223372036854775807 - 1) % -1 }}"), std::string("0"));
    QCOMPARE(render("{{ 7 % -1 }}|{{ -7 // 2 }}|{{ -7 % 3 }}"), std::string("0|-4|2"));
    QVERIFY(has(error_of("{{ 5 // 0 }}"), "ZeroDivisionError"));
    QVERIFY(has(error_of("{{ 5 % 0 }}"), "ZeroDivisionError"));
    QVERIFY(has(error_of("{{ 5 / 0 }}"), "ZeroDivisionError"));
    QVERIFY(has(error_of("{{ 5.0 // 0.0 }}"), "ZeroDivisionError"));
    QVERIFY(has(error_of("{{ 9223372036854775807 + 1 }}"), "integer overflow in +"));
    QVERIFY(has(error_of("{{ -9223372036854775807 - 2 }}"), "integer overflow in -"));
    QVERIFY(has(error_of("{{ 3037000500 * 3037000500 }}"), "integer overflow in *"));
    QVERIFY(has(error_of("{{ -(-9223372036854775807 - 1) }}"), "integer overflow"));
    QVERIFY(has(error_of("{{ (-9223372036854775807 - 1)|abs }}"), "integer overflow"));
    QVERIFY(has(error_of("{{ 2 ** 63 }}"), "integer overflow in **"));
    QCOMPARE(render("{{ 2 ** 62 }}|{{ 2 ** -1 }}|{{ -2 ** 2 }}|{{ 2 ** 3 ** 2 }}|{{ 3 * 2 ** 2 }}"),
             std::string("4611686018427387904|0.5|4|64|12"));
    QCOMPARE(render("{{ 9007199254740993 + 0 }}"), std::string("9007199254740993"));  // exact, not via double
    QCOMPARE(render("{{ True + 1 }}|{{ 1_000 }}"), std::string("2|1000"));
    QVERIFY(error_of("{{ 99999999999999999999 }}").find("does not fit in 64 bits") != std::string::npos);
    QVERIFY(has(error_of("{{ (10.0 ** 30)|int }}"), "to a 64-bit integer"));
    QCOMPARE(render("{{ range(9223372036854775800, 9223372036854775807, 4)|list }}"),
             std::string("[9223372036854775800, 9223372036854775804]"));
    QCOMPARE(render("{{ [1, 2, 3][2::9223372036854775807] }}|{{ [1, 2, 3][0::-9223372036854775807] }}"),
             std::string("[3]|[1]"));
    QCOMPARE(render("{{ [1, 2, 3, 4, 5][::2] }}|{{ [1, 2, 3, 4, 5][::-2] }}|{{ 'abcde'[3:0:-1] }}"),
             std::string("[1, 3, 5]|[5, 3, 1]|dcb"));
    QCOMPARE(render("{{ range(5, -9223372036854775807 - 1, -9223372036854775807 - 1)|list }}"),
             std::string("[5, -9223372036854775803]"));
  }

  // Each of these ran for hours or until memory ran out.
  void budgets_end_runaway_templates() {
    const std::string steps =
        error_of("{% for i in range(100000) %}{% for j in range(100000) %}{{ '' }}{% endfor %}{% endfor %}");
    QVERIFY2(steps.find("step budget") != std::string::npos, steps.c_str());
    const std::string doubling = error_of(
        "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"
        "{{ ns.s|length }}");
    QVERIFY2(doubling.find("value size budget") != std::string::npos, doubling.c_str());
    QVERIFY(error_of("{{ 'x' * 100000000000 }}").find("value size budget") != std::string::npos);
    QVERIFY(error_of("{{ ('x' * 10000000) ~ ('x' * 10000000) }}").find("value size budget") !=
            std::string::npos);
    QVERIFY(error_of("{{ [1] * 100000000000 }}").find("value size budget") != std::string::npos);
    QVERIFY(error_of("{{ range(100000000000)|length }}").find("range() of 100000000000 items") !=
            std::string::npos);
    QVERIFY(error_of("{{ 'a\nb'|indent(100000000000) }}").find("value size budget") != std::string::npos);
    QVERIFY(error_of("{{ ('x' * 1000000).replace('x', 'yyyyyyyyyyyyyyyyyyyyyyyyy') }}")
                .find("value size budget") != std::string::npos);
    const std::string output = error_of("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}");
    QVERIFY2(output.find("output budget") != std::string::npos, output.c_str());
    const std::string quadratic = error_of("{{ range(1000000)|unique|length }}");
    QVERIFY2(quadratic.find("step budget") != std::string::npos, quadratic.c_str());
    // Within the budgets, repetition works as in Python.
    QCOMPARE(render("{{ 'ab' * 3 }}|{{ 3 * 'ab' }}|{{ 'ab' * -1 }}|{{ [1, 2] * 2 }}|{{ [1] * 0 }}"),
             std::string("ababab|ababab||[1, 2, 1, 2]|[]"));
  }

  void builtin_templates() {
    const auto names = forja::ChatTemplate::builtin_names();
    for (const char* n :
         {"chatml", "gemma", "gpt2", "llama2", "llama3", "mistral", "phi3", "qwen3", "zephyr"})
      QVERIFY(std::find(names.begin(), names.end(), n) != names.end());
    QVERIFY_THROWS_EXCEPTION(forja::Error, forja::ChatTemplate::builtin("nope"));
    const auto chatml = forja::ChatTemplate::builtin("chatml");
    forja::ChatRenderOptions gen;
    gen.add_generation_prompt = true;
    QCOMPARE(chatml.render({{"user", "hi"}}, gen).text,
             std::string("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"));
    // Gemma's: the system prompt opens the first user turn, the assistant speaks as "model", turns are
    // trimmed.
    const forja::ChatTemplate gemma(forja::ChatTemplate::builtin_source("gemma"), "built-in gemma", "<bos>",
                                    "<eos>");
    QCOMPARE(
        gemma
            .render({{"system", "Be brief."}, {"user", " Hi "}, {"assistant", "Hello!\n"}, {"user", "2+2?"}},
                    gen)
            .text,
        std::string("<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello!"
                    "<end_of_turn>\n<start_of_turn>user\n2+2?<end_of_turn>\n<start_of_turn>model\n"));
    forja::ChatRenderOptions no_prompt;
    QCOMPARE(gemma.render({{"user", "hi"}}, no_prompt).text,
             std::string("<bos><start_of_turn>user\nhi<end_of_turn>\n"));
    QVERIFY_THROWS_EXCEPTION(forja::Error, gemma.render({{"assistant", "first"}}, gen));
    // Phi-3's: a marker per role, every turn closed by <|end|>, EOS after a finished conversation.
    const forja::ChatTemplate phi3(forja::ChatTemplate::builtin_source("phi3"), "built-in phi3", "<s>",
                                   "<|endoftext|>");
    QCOMPARE(phi3.render({{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello!"}}, no_prompt).text,
             std::string("<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\nHello!<|end|>\n"
                         "<|endoftext|>"));
    QCOMPARE(phi3.render({{"user", "2+2?"}}, gen).text,
             std::string("<|user|>\n2+2?<|end|>\n<|assistant|>\n"));
    // Qwen3's: an answer before the last user message loses its <think> block, one after it keeps it, and
    // enable_thinking=false opens the reply with an empty block.
    const forja::ChatTemplate qwen3(forja::ChatTemplate::builtin_source("qwen3"), "built-in qwen3", "",
                                    "<|im_end|>");
    const std::vector<forja::ChatMessage> turn = {{"user", "2+2?"},
                                                  {"assistant", "<think>\nadd\n</think>\n\nFour."}};
    forja::ChatRenderOptions no_thinking = gen;
    no_thinking.extra_variables_json = R"({"enable_thinking": false})";
    std::vector<forja::ChatMessage> two = turn;
    two.push_back({"user", "3+3?"});
    QCOMPARE(qwen3.render(two, no_thinking).text,
             std::string("<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\nFour.<|im_end|>\n"
                         "<|im_start|>user\n3+3?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"));
    const forja::RenderedChat kept = qwen3.render(turn, no_prompt);
    QCOMPARE(kept.text, std::string("<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n<think>\nadd\n"
                                    "</think>\n\nFour.<|im_end|>\n"));
    QCOMPARE(kept.assistant_spans.size(), size_t{1});
    QCOMPARE(kept.text.substr(kept.assistant_spans[0].first,
                              kept.assistant_spans[0].second - kept.assistant_spans[0].first),
             std::string("<think>\nadd\n</think>\n\nFour.<|im_end|>"));
  }
};

QTEST_GUILESS_MAIN(TestJinja)
#include "test_jinja.moc"
