// A fixed-capacity ring buffer: the monitor's history, oldest sample dropped first. Not thread-safe by
// itself.
#pragma once

#include <cstddef>
#include <vector>

namespace forja::env {

template <typename T>
class RingBuffer {
 public:
  explicit RingBuffer(size_t capacity) : items_(capacity == 0 ? 1 : capacity) {}

  void push(T item) {
    items_[(start_ + size_) % items_.size()] = std::move(item);
    if (size_ < items_.size())
      ++size_;
    else
      start_ = (start_ + 1) % items_.size();
  }
  size_t size() const { return size_; }
  size_t capacity() const { return items_.size(); }
  bool empty() const { return size_ == 0; }
  // i = 0 is the oldest.
  const T& at(size_t i) const { return items_[(start_ + i) % items_.size()]; }
  const T& back() const { return at(size_ - 1); }
  std::vector<T> to_vector() const {
    std::vector<T> out;
    out.reserve(size_);
    for (size_t i = 0; i < size_; ++i) out.push_back(at(i));
    return out;
  }

 private:
  std::vector<T> items_;
  size_t start_ = 0;
  size_t size_ = 0;
};

}  // namespace forja::env
