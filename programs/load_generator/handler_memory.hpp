#pragma once
// Memory for one asynchronous operation that recurs, so that arming it again allocates nothing
// (Asio's "custom memory allocation" example). Asio recycles one block a thread for every
// operation; an operation of another size than the sockets' (the pacer's wait) found that
// block the wrong size and went to the heap each time. Internal.
#include <cstddef>
#include <new>

namespace loadlab::load {

class HandlerMemory {
 public:
  HandlerMemory() = default;
  HandlerMemory(const HandlerMemory&) = delete;
  HandlerMemory& operator=(const HandlerMemory&) = delete;

  void* allocate(std::size_t size) {
    if (!in_use_ && size <= sizeof(storage_)) {
      in_use_ = true;
      return &storage_;
    }
    return ::operator new(size);  // a second operation while the first is pending
  }
  void deallocate(void* pointer) {
    if (pointer == &storage_)
      in_use_ = false;
    else
      ::operator delete(pointer);
  }

 private:
  alignas(std::max_align_t) unsigned char storage_[256];
  bool in_use_ = false;
};

// The allocator Asio finds on a handler (its `allocator_type` and `get_allocator()`).
template <class T>
class HandlerAllocator {
 public:
  using value_type = T;
  explicit HandlerAllocator(HandlerMemory& memory) : memory_(&memory) {}
  template <class U>
  HandlerAllocator(const HandlerAllocator<U>& other) noexcept : memory_(other.memory_) {}

  T* allocate(std::size_t n) const { return static_cast<T*>(memory_->allocate(sizeof(T) * n)); }
  void deallocate(T* pointer, std::size_t) const { memory_->deallocate(pointer); }
  template <class U>
  bool operator==(const HandlerAllocator<U>& other) const noexcept {
    return memory_ == other.memory_;
  }
  template <class U>
  bool operator!=(const HandlerAllocator<U>& other) const noexcept {
    return memory_ != other.memory_;
  }

 private:
  template <class>
  friend class HandlerAllocator;
  HandlerMemory* memory_;
};

}  // namespace loadlab::load
