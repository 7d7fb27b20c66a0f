//! `--cpus`: which CPUs the load may run on. Each worker thread pins itself
//! with `sched_setaffinity` before the phase's clock starts, so the load
//! stays off the cores left to the server and its persistence (the CLI's
//! packages/cli/src/cpus.ts parses the list and pins the JS process).

/// Pins the calling thread to `cpus` (CPU numbers as the kernel counts
/// them). An empty list leaves it as it is.
#[cfg(target_os = "linux")]
pub fn pin_current_thread(cpus: &[u32]) -> std::io::Result<()> {
    if cpus.is_empty() {
        return Ok(());
    }
    // SAFETY: cpu_set_t is plain data, zeroed is its empty set; CPU_SET is
    // only called with numbers below CPU_SETSIZE, and sched_setaffinity reads
    // the set we own for the calling thread (pid 0).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus {
            if cpu as usize >= libc::CPU_SETSIZE as usize {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("CPU {cpu} is beyond {}", libc::CPU_SETSIZE),
                ));
            }
            libc::CPU_SET(cpu as usize, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub fn pin_current_thread(cpus: &[u32]) -> std::io::Result<()> {
    if cpus.is_empty() {
        return Ok(());
    }
    Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "pinning to CPUs (--cpus) works on Linux only"))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn allowed_list() -> String {
        let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim().to_string()
    }

    #[test]
    fn pins_the_calling_thread_only() {
        let before = allowed_list();
        let seen = std::thread::spawn(|| {
            pin_current_thread(&[0]).unwrap();
            allowed_list()
        })
        .join()
        .unwrap();
        assert_eq!(seen, "0");
        assert_eq!(allowed_list(), before);
    }

    #[test]
    fn an_empty_list_changes_nothing() {
        let before = allowed_list();
        pin_current_thread(&[]).unwrap();
        assert_eq!(allowed_list(), before);
    }
}
