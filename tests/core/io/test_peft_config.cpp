// adapter_config.json as PEFT writes it: the fixtures PEFT saved read back field for field, and every
// setting Forja's LoRA cannot reproduce or a value out of range refused with the file and the key named.
#include <QTest>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "forja/error.h"
#include "forja/file_util.h"
#include "forja/peft_config.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kTrain = fs::path(FORJA_FIXTURES_DIR) / "train";

}  // namespace

class TestPeftConfig : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void readsWhatPeftWrote() {
    for (const char* model : {"llama", "gpt2"}) {
      const fs::path dir = kTrain / model / "final";
      const json j = json::parse(forja::read_text_file(dir / "adapter_config.json"));
      const forja::PeftLoraConfig c = forja::read_peft_config_file(dir);
      QCOMPARE(c.rank, j["r"].get<int64_t>());
      QCOMPARE(c.alpha, j["lora_alpha"].get<double>());
      QCOMPARE(c.dropout, j["lora_dropout"].get<double>());
      QCOMPARE(c.use_rslora, j.value("use_rslora", false));
      QCOMPARE(c.target_modules.size(), j["target_modules"].size());
      for (const auto& m : j["target_modules"])
        QVERIFY(std::find(c.target_modules.begin(), c.target_modules.end(), m.get<std::string>()) !=
                c.target_modules.end());
    }
  }

  void refusesWithFileAndKey_data() {
    QTest::addColumn<QString>("patch");  // merged into the llama fixture's config
    QTest::addColumn<QString>("named");  // what the error must name besides the file
    QTest::newRow("rank zero") << R"({"r": 0})"
                               << "\"r\"";
    QTest::newRow("rank float") << R"({"r": 2.5})"
                                << "\"r\"";
    QTest::newRow("negative alpha") << R"({"lora_alpha": -16})"
                                    << "lora_alpha";
    QTest::newRow("alpha as text") << R"({"lora_alpha": "16"})"
                                   << "lora_alpha";
    QTest::newRow("dropout one") << R"({"lora_dropout": 1.0})"
                                 << "lora_dropout";
    QTest::newRow("negative dropout") << R"({"lora_dropout": -0.1})"
                                      << "lora_dropout";
    QTest::newRow("no targets") << R"({"target_modules": []})"
                                << "target_modules";
    QTest::newRow("regex targets") << R"({"target_modules": ".*proj"})"
                                   << "target_modules";
    QTest::newRow("numeric target") << R"({"target_modules": ["q_proj", 7]})"
                                    << "target_modules";
    QTest::newRow("empty target name") << R"({"target_modules": [""]})"
                                       << "target_modules";
    QTest::newRow("dora") << R"({"use_dora": true})"
                          << "DoRA";
    QTest::newRow("bias") << R"({"bias": "all"})"
                          << "bias";
    QTest::newRow("lora bias") << R"({"lora_bias": true})"
                               << "lora_bias";
    QTest::newRow("modules to save") << R"({"modules_to_save": ["lm_head"]})"
                                     << "modules_to_save";
    QTest::newRow("rank pattern") << R"({"rank_pattern": {"q_proj": 4}})"
                                  << "rank_pattern";
    QTest::newRow("prefix tuning") << R"({"peft_type": "PREFIX_TUNING"})"
                                   << "PREFIX_TUNING";
    QTest::newRow("numeric peft type") << R"({"peft_type": 3})"
                                       << "peft_type";
  }

  void refusesWithFileAndKey() {
    QFETCH(QString, patch);
    QFETCH(QString, named);
    json j = json::parse(forja::read_text_file(kTrain / "llama" / "final" / "adapter_config.json"));
    j.merge_patch(json::parse(patch.toStdString()));
    try {
      (void)forja::parse_peft_config(j.dump(), "adapters/x/adapter_config.json");
      QFAIL("accepted");
    } catch (const forja::Error& e) {
      const QString what = QString::fromStdString(e.what());
      QVERIFY2(what.contains(QStringLiteral("adapters/x/adapter_config.json")) && what.contains(named),
               qPrintable(what));
    }
  }

  void refusesWhatIsNotAConfig() {
    for (const char* text :
         {"", "[]", "42", "{\"r\": 8", "{\"lora_alpha\": 8, \"target_modules\": [\"q\"]}"}) {
      QVERIFY_THROWS_EXCEPTION(forja::Error, forja::parse_peft_config(text, "adapter_config.json"));
    }
    QVERIFY_THROWS_EXCEPTION(forja::Error, forja::read_peft_config_file(kTrain / "no-such-adapter"));
  }
};

QTEST_APPLESS_MAIN(TestPeftConfig)
#include "test_peft_config.moc"
