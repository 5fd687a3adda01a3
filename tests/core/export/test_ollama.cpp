// The Ollama Modelfile's TEMPLATE (forja/ollama.h) rendered by Go's own text/template, as Ollama renders it,
// gives the text Forja's Jinja renderer gives for the same conversations (less the leading BOS, which
// llama.cpp adds when it tokenizes), for each template family Forja translates; a template of no known family
// is refused; the Modelfile's lines.
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "forja/chat_template.h"
#include "forja/error.h"
#include "forja/ollama.h"

using json = nlohmann::json;

namespace {

// Renders each job's template over its messages with Go's text/template (Ollama's fields: .Messages with
// .Role and .Content) and prints the texts as a JSON array.
const char* const kGoRenderer = R"GO(package main

import (
	"encoding/json"
	"os"
	"strings"
	"text/template"
)

type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type Job struct {
	Template string    `json:"template"`
	Messages []Message `json:"messages"`
}

func main() {
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	var jobs []Job
	if err := json.Unmarshal(data, &jobs); err != nil {
		panic(err)
	}
	out := []string{}
	for _, j := range jobs {
		t := template.Must(template.New("t").Parse(j.Template))
		var b strings.Builder
		if err := t.Execute(&b, map[string]any{"Messages": j.Messages}); err != nil {
			panic(err)
		}
		out = append(out, b.String())
	}
	enc, _ := json.Marshal(out)
	os.Stdout.Write(enc)
}
)GO";

// Qwen2-Instruct's template: ChatML with a system prompt of its own when the conversation has none.
const char* const kQwen2 =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ "
    "'<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + "
    "message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if "
    "add_generation_prompt "
    "%}{{ '<|im_start|>assistant\n' }}{% endif %}";

std::vector<std::vector<forja::ChatMessage>> conversations() {
  return {{{"user", "What is CUDA?"}},
          {{"system", "Answer in one line."}, {"user", "Name a GPU."}},
          {{"user", "first\nwith two lines"},
           {"assistant", "an answer: {{ not a template }}"},
           {"user", "again"}},
          {{"system", "Be kind."},
           {"user", "a"},
           {"assistant", "b"},
           {"user", "c"},
           {"assistant", "d"},
           {"user", "e"}}};
}

}  // namespace

class TestOllama : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void goTemplateRendersAsTheJinjaTemplate_data() {
    QTest::addColumn<QString>("source");  // a built-in template's name, or "qwen2"
    QTest::addColumn<QString>("family");
    QTest::addColumn<QString>("bos");
    QTest::addColumn<QString>("eos");
    QTest::addColumn<QString>("stop");  // the first stop: the marker that closes an answer
    QTest::newRow("llama2") << "llama2"
                            << "llama2"
                            << "<s>"
                            << "</s>"
                            << "</s>";
    QTest::newRow("llama3") << "llama3"
                            << "llama3"
                            << "<|begin_of_text|>"
                            << "<|eot_id|>"
                            << "<|eot_id|>";
    QTest::newRow("mistral") << "mistral"
                             << "mistral"
                             << "<s>"
                             << "</s>"
                             << "</s>";
    QTest::newRow("chatml") << "chatml"
                            << "chatml"
                            << ""
                            << "<|im_end|>"
                            << "<|im_end|>";
    QTest::newRow("qwen2") << "qwen2"
                           << "chatml"
                           << ""
                           << "<|endoftext|>"
                           << "<|im_end|>";
    QTest::newRow("zephyr") << "zephyr"
                            << "zephyr"
                            << "<s>"
                            << "</s>"
                            << "</s>";
    QTest::newRow("gemma") << "gemma"
                           << "gemma"
                           << "<bos>"
                           << "<eos>"
                           << "<end_of_turn>";
    QTest::newRow("phi3") << "phi3"
                          << "phi3"
                          << "<s>"
                          << "<|endoftext|>"
                          << "<|end|>";
  }

  void goTemplateRendersAsTheJinjaTemplate() {
    QFETCH(QString, source);
    QFETCH(QString, family);
    QFETCH(QString, bos);
    QFETCH(QString, eos);
    QFETCH(QString, stop);
    const QString go = QStandardPaths::findExecutable(QStringLiteral("go"));
    if (go.isEmpty()) QSKIP("Go is not installed (Debian's golang-go; scripts/setup test installs it)");
    const std::string src =
        source == "qwen2" ? std::string(kQwen2) : forja::ChatTemplate::builtin_source(source.toStdString());
    const forja::ChatTemplate tpl(src, source.toStdString(), bos.toStdString(), eos.toStdString());
    const forja::OllamaTemplate t = forja::ollama_template(tpl, bos.toStdString(), eos.toStdString());
    QCOMPARE(QString::fromStdString(t.family), family);
    QCOMPARE(QString::fromStdString(t.stop.front()), stop);
    QCOMPARE(t.default_system.has_value(), source == "qwen2");

    json jobs = json::array();
    std::vector<std::string> want;
    for (const auto& conv : conversations()) {
      forja::ChatRenderOptions o;
      o.add_generation_prompt = true;
      std::string text = tpl.render(conv, o).text;
      if (!bos.isEmpty() && text.rfind(bos.toStdString(), 0) == 0) text.erase(0, bos.size());
      want.push_back(text);
      json msgs = json::array();
      for (const auto& m : conv) msgs.push_back({{"role", m.role}, {"content", m.content}});
      jobs.push_back({{"template", t.go_template}, {"messages", msgs}});
    }
    QTemporaryDir tmp;
    std::ofstream(tmp.filePath("render.go").toStdString()) << kGoRenderer;
    std::ofstream(tmp.filePath("jobs.json").toStdString()) << jobs.dump();
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("GOCACHE"), tmp.filePath(QStringLiteral("gocache")));
    env.insert(QStringLiteral("GOPATH"), tmp.filePath(QStringLiteral("gopath")));
    p.setProcessEnvironment(env);
    p.setWorkingDirectory(tmp.path());
    p.start(go, {QStringLiteral("run"), QStringLiteral("render.go"), QStringLiteral("jobs.json")});
    QVERIFY(p.waitForFinished(600000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    const json got = json::parse(p.readAllStandardOutput().toStdString());
    QCOMPARE(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) QCOMPARE(got[i].get<std::string>(), want[i]);
  }

  void unknownTemplateIsRefused() {
    // GPT-2's plain "User:/Assistant:" template is none of Ollama's families here.
    const forja::ChatTemplate tpl(forja::ChatTemplate::builtin_source("gpt2"), "the model's template", "",
                                  "<|endoftext|>");
    try {
      forja::ollama_template(tpl, "", "<|endoftext|>");
      QFAIL("the GPT-2 template was translated");
    } catch (const forja::Error& e) {
      QVERIFY2(std::string(e.what()).find("the model's template") != std::string::npos, e.what());
    }
    // A template whose text looks like ChatML but renders otherwise is not taken for it.
    const forja::ChatTemplate odd(
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content | upper }}<|im_end|>\n{% endfor %}",
        "odd");
    QVERIFY_THROWS_EXCEPTION(forja::Error, forja::ollama_template(odd, "", "<|im_end|>"));
  }

  void modelfileLines() {
    const forja::ChatTemplate tpl(forja::ChatTemplate::builtin_source("llama3"), "llama3",
                                  "<|begin_of_text|>", "<|eot_id|>");
    const forja::OllamaTemplate t = forja::ollama_template(tpl, "<|begin_of_text|>", "<|eot_id|>");
    const std::string m = forja::ollama_modelfile("model.gguf", t, std::string("You are Forja."));
    QVERIFY(m.rfind("FROM ./model.gguf\n", 0) == 0);
    QVERIFY(m.find("TEMPLATE \"\"\"" + t.go_template + "\"\"\"\n") != std::string::npos);
    QVERIFY(m.find("PARAMETER stop \"<|eot_id|>\"\n") != std::string::npos);
    QVERIFY(m.find("SYSTEM \"\"\"You are Forja.\"\"\"\n") != std::string::npos);
    QVERIFY(forja::ollama_modelfile("model.gguf", t, std::nullopt).find("SYSTEM") == std::string::npos);
    QVERIFY_THROWS_EXCEPTION(forja::Error,
                             forja::ollama_modelfile("model.gguf", t, std::string("a \"\"\" b")));
  }
};

QTEST_GUILESS_MAIN(TestOllama)
#include "test_ollama.moc"
