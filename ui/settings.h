// The choices of the Settings dialog, kept in QSettings: theme, where new runs go, where models are cached,
// and which GPU the engine uses. The language is ui_init.h's. An empty or automatic choice means Forja's
// default.
#pragma once

#include <QString>

namespace forja::ui {

enum class Theme { System, Light, Dark };

Theme theme_setting();
void set_theme_setting(Theme theme);
// Restyles the whole application: every widget through the palette, and the plots, which restyle themselves
// on the palette change. System gives back the style and palette the desktop gave at start.
void apply_theme(Theme theme);

// Where new runs get their folders; empty: $XDG_DATA_HOME/forja/runs.
QString runs_dir_setting();
void set_runs_dir_setting(const QString& dir);

// The Hugging Face cache models are downloaded to and found in; empty: HF_HUB_CACHE / HF_HOME as set, else
// ~/.cache/huggingface/hub.
QString hub_cache_setting();
void set_hub_cache_setting(const QString& dir);
// HF_HUB_CACHE for this process and the workers it starts: the chosen folder, else the variable as it was.
void apply_hub_cache_setting();

// The GPU the engine uses, by its index in the PCI bus order (as nvidia-smi lists them); -1: every GPU,
// CUDA's default.
int gpu_setting();
void set_gpu_setting(int index);

// Puts the cache and GPU choices into this process's environment (HF_HUB_CACHE, CUDA_VISIBLE_DEVICES with
// CUDA_DEVICE_ORDER=PCI_BUS_ID), which the engine reads and the training worker inherits. The GPU must be
// chosen before CUDA starts, so a new GPU choice takes effect at the next start.
void apply_environment_settings();

}  // namespace forja::ui
