// How the window writes numbers, sizes and times: one place, so every pane says "1.25 GiB" the same way.
#pragma once

#include <QString>
#include <QStringList>

#include <cstdint>
#include <optional>

namespace forja::ui {

// Binary units, two significant decimals: "512 B", "3.00 KiB", "1.25 GiB".
QString format_bytes(int64_t bytes);
// "135 M", "1.10 B", "7.24 B": parameter counts the way model cards write them.
QString format_count(int64_t count);
// "42 s", "3 min 05 s", "2 h 10 min".
QString format_duration_ms(int64_t ms);
// Local date and time of a journal timestamp (ms since the epoch).
QString format_timestamp_ms(int64_t ms);
// A loss with 4 decimals, or an em dash when there is none.
QString format_loss(std::optional<double> loss);
// Names that tell model folders apart in a list: a Hugging Face cache snapshot
// (…/models--org--name/snapshots/<commit>) as its repo id "org/name", any other folder by its name with as
// many parent folders as it takes to differ from the others ("a/model", "b/model").
QStringList distinct_folder_names(const QStringList& dirs);
// An adapter folder by the run it came from: a run's "…/model-20261206-031738/adapter" (or a checkpoint's
// "…/checkpoints/step-00000040/adapter") reads "model-20261206-031738" ("… step-00000040"); any other folder
// by its own name.
QString adapter_display_name(const QString& dir);
// LibTorch's device and dtype names as people write them: "cpu" → "CPU", "Float" → "fp32", "BFloat16" →
// "bf16".
QString device_display_name(const QString& device);
QString dtype_display_name(const QString& dtype);

}  // namespace forja::ui
