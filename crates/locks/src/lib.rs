//! Informing locks, barriers and condition variables with priority classes (after
//! Antonopoulos, Nikolopoulos and Papatheodorou), usable on plain OS threads and on the green
//! threads of `footprint-runtime`.

pub mod hook;
pub mod os;

pub use hook::{
    current_hook, install_hook, uninstall_hook, ClassCell, Placement, PriorityClass,
    SchedulerHook, Unpark, Unparker,
};
