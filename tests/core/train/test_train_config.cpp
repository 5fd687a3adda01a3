// The train config's one reference table (forja/config_reference.h): it names exactly the keys the config
// has, the commented YAML made from it reads back to the same config, unknown keys are pointed home from it,
// the README's "Config reference" is its rendering, and a config of only model_dir and train_file trains
// through the real forja-cli into the folder the window would choose (and, finished, is not trained again).
#include <QProcess>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "forja/config_reference.h"
#include "forja/error.h"
#include "forja/train.h"
#include "qtest_util.h"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The hint of the error that `text` (a YAML config) gives.
std::string hint_of(const std::string& text) {
  try {
    forja::train_config_from_text(text, "t.yaml");
  } catch (const forja::Error& e) {
    return e.hint();
  }
  return "(no error)";
}

QString cli() {
  return QStringLiteral(FORJA_CLI_PATH);
}

}  // namespace

class TestTrainConfig : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void theTableNamesExactlyTheConfigsKeys() {
    const json j = json::parse(forja::train_config_to_json(forja::TrainConfig{}));
    std::set<std::string> from_json, from_table;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it->is_object())
        for (auto in = it->begin(); in != it->end(); ++in) from_json.insert(it.key() + "." + in.key());
      else
        from_json.insert(it.key());
    }
    for (const forja::ConfigKey& k : forja::train_config_keys()) {
      QVERIFY2(from_table.insert(k.path()).second, ("listed twice: " + k.path()).c_str());
      QVERIFY2(!k.type.empty() && !k.allowed.empty() && !k.meaning.empty(), k.path().c_str());
    }
    QCOMPARE(from_table, from_json);
    // Defaults come from TrainConfig itself.
    QCOMPARE(forja::find_config_key("optimizer", "learning_rate")->default_json, json(2e-4).dump());
    QCOMPARE(forja::find_config_key("", "max_steps")->default_json, std::string("100"));
  }

  void theCommentedYamlReadsBackToTheSameConfig() {
    forja::TrainConfig c;
    c.model_dir = "models/with \"quotes\" and: colon";
    c.train_file = "data/train #1.jsonl";
    c.output_dir = "runs/x";
    c.data_format = "chat";
    c.packing = true;
    c.max_steps = 7;
    c.eval_fraction = 0.125;
    c.seed = 1234567;
    c.lora.rank = 8;
    c.lora.alpha = 12.5;
    c.lora.target_modules = {"c_attn", "c_proj"};
    c.optimizer.learning_rate = 3e-5;
    c.optimizer.eps = 1e-8;
    c.optimizer.schedule = forja::LrSchedule::Linear;
    const std::string yaml = forja::train_config_to_commented_yaml(c);
    const forja::TrainConfig back = forja::train_config_from_text(yaml, "printed.yaml");
    QCOMPARE(forja::train_config_to_json(back), forja::train_config_to_json(c));
    // Every key is written, each under its comment.
    for (const forja::ConfigKey& k : forja::train_config_keys())
      QVERIFY2(yaml.find((k.section.empty() ? "\n" : "\n  ") + k.name + ": ") != std::string::npos,
               k.path().c_str());
    QVERIFY(yaml.find("# AdamW's peak learning rate.") != std::string::npos);
  }

  void printConfigOfTheCliReadsBack() {
    QProcess p;
    p.start(cli(), {"train", "--print-config", "--model", "m", "--train-file", "d.jsonl"});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    const forja::TrainConfig back =
        forja::train_config_from_text(p.readAllStandardOutput().toStdString(), "p.yaml");
    forja::TrainConfig expected;
    expected.model_dir = "m";
    expected.train_file = "d.jsonl";
    QCOMPARE(forja::train_config_to_json(back), forja::train_config_to_json(expected));
  }

  void trainHelpListsEveryKey() {
    QProcess p;
    p.start(cli(), {"train", "--help"});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    const std::string out = p.readAllStandardOutput().toStdString();
    for (const forja::ConfigKey& k : forja::train_config_keys())
      QVERIFY2(out.find("  " + k.path() + "  (") != std::string::npos, k.path().c_str());
  }

  void misplacedAndMisspeltKeysArePointedHome() {
    const std::string base = "model_dir: m\ntrain_file: d\n";
    QVERIFY2(hint_of(base + "learning_rate: 1e-4\n").find("belongs under \"optimizer\"") != std::string::npos,
             hint_of(base + "learning_rate: 1e-4\n").c_str());
    QVERIFY(hint_of(base + "lora:\n  learning_rate: 1e-4\n").find("belongs under \"optimizer\"") !=
            std::string::npos);
    QVERIFY(hint_of(base + "optimizer:\n  rank: 4\n").find("belongs under \"lora\"") != std::string::npos);
    QVERIFY(hint_of(base + "optimizer:\n  max_steps: 4\n").find("belongs at the top level") !=
            std::string::npos);
    QVERIFY(hint_of(base + "optimizer:\n  learning_rat: 1\n").find("Did you mean \"learning_rate\"?") !=
            std::string::npos);
    QVERIFY(hint_of(base + "batchsize: 2\n").find("Did you mean \"batch_size\"?") != std::string::npos);
    QVERIFY(hint_of("model: m\ntrain_file: d\n").find("Did you mean \"model_dir\"?") != std::string::npos);
    QVERIFY(hint_of(base + "lora:\n  alpah: 2\n").find("Did you mean \"alpha\"?") != std::string::npos);
    // Nothing close: no guess, only where the keys are listed (which is true: --help lists them).
    const std::string far = hint_of(base + "dataset: x\n");
    QVERIFY2(far.find("Did you mean") == std::string::npos && far.find("train --help") != std::string::npos,
             far.c_str());
    // The message still names the file and the key.
    forja_test::expect_error([&] { forja::train_config_from_text(base + "dataset: x\n", "t.yaml"); },
                             {"t.yaml", "unknown key \"dataset\""});
    // Words outside a key's choices name the choices, from the same table.
    forja_test::expect_error([&] { forja::train_config_from_text(base + "data_format: jsonl\n", "t.yaml"); },
                             {"data_format", "jsonl", "auto, tokenized, alpaca, chat, sharegpt, text"});
    forja_test::expect_error(
        [&] { forja::train_config_from_text(base + "optimizer:\n  schedule: step\n", "t.yaml"); },
        {"schedule", "step", "constant, linear, cosine"});
  }

  void onlyModelAndDataAreNeeded() {
    const forja::TrainConfig c = forja::train_config_from_text("model_dir: m\ntrain_file: d\n", "t.yaml");
    QCOMPARE(c.output_dir, std::string());
    forja_test::expect_error([] { forja::train_config_from_text("train_file: d\n", "t.yaml"); },
                             {"t.yaml", "model_dir", "required"});
  }

  void theReadmeSectionIsTheTablesRendering() {
    const std::string readme = read_all(fs::path(FORJA_SOURCE_DIR) / "README.md");
    const std::string begin = "<!-- config-reference:begin -->\n", end = "<!-- config-reference:end -->";
    const size_t b = readme.find(begin), e = readme.find(end);
    QVERIFY2(b != std::string::npos && e != std::string::npos && b < e, "README.md lacks the markers");
    const std::string section = readme.substr(b + begin.size(), e - b - begin.size());
    QVERIFY2(
        section == forja::train_config_reference_markdown(),
        "README.md's config reference differs from the table: paste `forja-cli train --config-reference-md` "
        "between the markers");
  }

  void newRunFoldersAreNamedAfterTheModelAndTheTime() {
    forja_test::TempFiles tmp;
    std::tm t{};
    t.tm_year = 2026 - 1900, t.tm_mon = 11, t.tm_mday = 4, t.tm_hour = 21, t.tm_min = 5, t.tm_sec = 9;
    t.tm_isdst = -1;
    const std::time_t when = std::mktime(&t);  // local time, as new_run_dir formats it
    const fs::path a = forja::new_run_dir(tmp.dir(), "/models/TinyLlama/", when);
    QCOMPARE(a, tmp.dir() / "TinyLlama-20261204-210509");
    fs::create_directories(a);
    QCOMPARE(forja::new_run_dir(tmp.dir(), "/models/TinyLlama", when),
             tmp.dir() / "TinyLlama-20261204-210509-2");
    QCOMPARE(forja::new_run_dir(tmp.dir(), "", when), tmp.dir() / "run-20261204-210509");
    qputenv("XDG_DATA_HOME", QByteArray::fromStdString(tmp.dir().string()));
    QCOMPARE(forja::default_runs_root(), tmp.dir() / "forja" / "runs");
    qputenv("XDG_DATA_HOME", "relative/ignored");  // the XDG spec: a relative value is ignored
    qputenv("HOME", QByteArray::fromStdString((tmp.dir() / "home").string()));
    QCOMPARE(forja::default_runs_root(), tmp.dir() / "home" / ".local" / "share" / "forja" / "runs");
  }

  void aConfigOfModelAndDataTrainsIntoANewRunFolder() {
#if !FORJA_TEST_DATASETS
    QSKIP("this build reads pre-tokenized data only, and the demo dataset is chat records");
#else
    forja_test::TempFiles tmp;
    const fs::path demo = fs::path(FORJA_SOURCE_DIR) / "resources" / "demo";
    // max_steps keeps the run short; every other key, output_dir included, is left to its default.
    const fs::path config =
        tmp.write("min.yaml", "model_dir: " + json((demo / "model").string()).dump() + "\ntrain_file: " +
                                  json((demo / "dataset.jsonl").string()).dump() + "\nmax_steps: 2\n");
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("XDG_DATA_HOME", QString::fromStdString((tmp.dir() / "data").string()));
    p.setProcessEnvironment(env);
    p.start(cli(), {"train", QString::fromStdString(config.string())});
    QVERIFY(p.waitForFinished(600000));
    const QByteArray err = p.readAllStandardError();
    QVERIFY2(p.exitCode() == 0, err.constData());
    const fs::path runs = tmp.dir() / "data" / "forja" / "runs";
    std::vector<fs::path> made;
    for (const auto& d : fs::directory_iterator(runs)) made.push_back(d.path());
    QCOMPARE(made.size(), size_t(1));
    const std::string name = made[0].filename().string();
    QVERIFY2(name.rfind("model-", 0) == 0 && name.size() == std::string("model-yyyyMMdd-HHmmss").size(),
             name.c_str());
    QVERIFY(fs::exists(made[0] / "adapter" / "adapter_model.safetensors"));
    // The config written there is the run's, output folder included, so that it resumes the same run.
    const forja::TrainConfig written =
        forja::train_config_from_text(read_all(made[0] / "config.json"), "config.json");
    QCOMPARE(fs::path(written.output_dir), made[0]);
    QCOMPARE(written.max_steps, int64_t(2));
    QVERIFY2(err.contains(QByteArray::fromStdString((made[0] / "config.json").string())), err.constData());
    // The command it names on a finished run trains nothing: it says the run completed and how to train
    // again, and no second run folder appears.
    QProcess again;
    again.setProcessEnvironment(env);
    again.start(cli(), {"train", QString::fromStdString((made[0] / "config.json").string())});
    QVERIFY(again.waitForFinished(600000));
    const QByteArray again_err = again.readAllStandardError();
    QVERIFY2(
        again.exitCode() == 0 && again_err.contains("already completed") && again_err.contains("new run"),
        again_err.constData());
    QCOMPARE(size_t(std::distance(fs::directory_iterator(runs), fs::directory_iterator())), size_t(1));
#endif
  }
};

QTEST_GUILESS_MAIN(TestTrainConfig)
#include "test_train_config.moc"
