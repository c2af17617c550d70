//! How the evaluation process shares its interrupt flag with every cell's copy of the runtime:
//! [`super::env::INTERRUPT_FLAG`] holds `<pid>:<address in hex>`. The pid keeps a child process
//! that inherits the variable from taking the address for its own.

use std::sync::atomic::AtomicBool;

/// Publishes `flag` (which lives as long as the process) to the cells of this process.
pub fn publish(flag: &'static AtomicBool) {
    super::env::set(super::env::INTERRUPT_FLAG, value(flag));
}

/// The variable's value for `flag` in this process.
pub fn value(flag: &'static AtomicBool) -> String {
    format!(
        "{}:{:x}",
        std::process::id(),
        flag as *const AtomicBool as usize
    )
}

/// The published address, when this process published one.
pub fn address() -> Option<usize> {
    parse(&super::env::text(super::env::INTERRUPT_FLAG)?)
}

fn parse(value: &str) -> Option<usize> {
    let (pid, address) = value.split_once(':')?;
    if pid.parse::<u32>().ok()? != std::process::id() {
        return None;
    }
    usize::from_str_radix(address, 16).ok().filter(|&a| a != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_value_names_this_process_and_the_flag() {
        static FLAG: AtomicBool = AtomicBool::new(false);
        let value = value(&FLAG);
        assert_eq!(parse(&value), Some(&FLAG as *const AtomicBool as usize));
        let other_process = format!("{}:{:x}", std::process::id() + 1, 0x1000);
        assert_eq!(parse(&other_process), None);
        assert_eq!(parse("nonsense"), None);
    }
}
