//! How mcp-chain asks the C allocator to keep the memory it reuses.
//!
//! A large message crosses mcp-chain through several buffers of its own size
//! (the line read, the payload, each layer's edit of a list, the line
//! written). With glibc's defaults a buffer above 128 KiB is mapped for it
//! and unmapped when freed, or, once that threshold has moved up, the top of
//! the heap is handed back past twice the largest such buffer seen; either
//! way the next message pays the page faults again. For a 1,000-tool listing
//! through the full chain that was about 70 faults a message, and on the
//! machines we measure on a fault costs microseconds.
//!
//! Fixed thresholds instead: buffers up to 32 MiB (glibc's largest mmap
//! threshold) come from the heap, and up to 64 MiB of free heap is kept, so
//! a stream of large messages reuses the same memory. glibc's own moving
//! thresholds keep about as much after a 10 MB result (twice the largest
//! buffer freed); what they do not keep is the memory of a stream of 200 KB
//! listings. A lower mmap threshold is worse: at 4 MiB every 10 MB result
//! was mapped and faulted in anew, 2.4 times slower end to end.
//! docs/benchmarks.md has the measurements.

/// Buffers up to this size come from the heap.
pub const MMAP_THRESHOLD: usize = 32 << 20;
/// Free heap up to this size is kept for the next message.
pub const TRIM_THRESHOLD: usize = 64 << 20;

/// Sets the allocator's thresholds; call before any thread starts. Whether
/// they were taken: always false where the allocator is not glibc's.
pub fn tune_allocator() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let set = |param, value: usize| {
            let value = libc::c_int::try_from(value).expect("thresholds fit a C int");
            #[allow(unsafe_code)]
            // SAFETY: mallopt(3) only changes the allocator's parameters; it
            // reads and writes no memory of ours, and it is called before
            // other threads exist.
            let taken = unsafe { libc::mallopt(param, value) };
            taken == 1
        };
        set(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) & set(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn glibc_takes_the_thresholds() {
        assert!(super::tune_allocator());
    }
}
